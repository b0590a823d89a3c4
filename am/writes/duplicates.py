"""A fact already recorded: what a fact add finds instead of writing a twin (docs/decisions/writes.md#a-fact-said-twice-is-recorded-once-duplicates).

A new fact repeats an existing one when both say the same statement (every run of
whitespace one space; case counts), about the same set of topics, in the same repo
and branch (absent equals absent), and the existing one still holds or waits to:
``active``, ``contested`` or ``pending-review``. A superseded or expired (rejected)
fact ended; saying it again is news, and a new fact. The commit is not compared: a
fact seen again at a newer commit is the same fact, confirmed there (``am fact
confirm``). The lookup goes through the cache's statement index (am/cache/statements.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from am.records.model import Fact
from am.records.writes import FactDraft, WriteResult

if TYPE_CHECKING:
    from am.cache.recordfiles import RecordFiles
    from am.writes.writer import RecordWriter

__all__ = ["HOLDING", "adding", "holds_everywhere", "recorded", "recorded_hint", "superseded_already", "superseding"]

HOLDING = ("active", "contested", "pending-review")


@contextmanager
def adding(writer: RecordWriter, draft: FactDraft) -> Iterator[WriteResult | None]:
    """Hold the lock of the draft's statement while a fact add checks and writes; yield the fact found, or None.

    Two adds of one statement (a retry while the first call is still committing, two agents at
    once) take the same lock (am/git/locking.py, ``key_lock``), so the second one looks after the
    first is committed and in the cache, and finds it.
    """
    from am.cache.rows import statement_key

    with writer.store.key_lock(statement_key(draft.text)):
        found = recorded(writer.files, draft.text, draft.topics, draft.repo, draft.branch)
        yield None if found is None else WriteResult("", (found[1],), (found[0],), created=False,
                                                     note=recorded_hint(found[1], draft))


def recorded(files: RecordFiles, text: str, topics: Sequence[str] | None, repo: str | None,
             branch: str | None, *, besides: str | None = None) -> tuple[PurePosixPath, Fact] | None:
    """Return (path, fact) of a holding fact that already says ``text`` in this repo and branch, or None.

    ``topics`` None: about any topics (a session's proposal, which also names its session).
    ``besides``: a fact id that does not count (the fact a supersede replaces).
    """
    if not text.strip():
        return None  # no statement: the write's own check says so
    cache = files.cache()
    pairs: Iterable[tuple[PurePosixPath, Any]]
    if cache is not None:
        pairs = cache.facts_stating(text)
    else:  # no usable cache: every file is read (logged when the cache failed)
        flat = " ".join(text.split())
        pairs = ((p, r) for p, r in files.iter_records() if isinstance(r, Fact) and " ".join(r.body.split()) == flat)
    for path, fact in pairs:
        if fact.id != besides and _holds_as(fact, topics, repo, branch):
            return path, fact
    return None


def _holds_as(fact: Fact, topics: Sequence[str] | None, repo: str | None, branch: str | None) -> bool:
    return (fact.status in HOLDING and (fact.repo or None) == (repo or None)
            and (fact.version or None) == (branch or None) and (topics is None or set(fact.topics) == set(topics)))


def superseded_already(writer: RecordWriter, old: Fact, draft: FactDraft, *, unverified: bool) -> WriteResult | None:
    """Return what a supersede of ``old`` by ``draft`` finds already done (a retried call), or None.

    Done: ``old`` is superseded by a holding fact that says the draft's text with the topics,
    repo and branch the new fact would get (the rule of ``recorded``). Then nothing is written
    and the answer is a fact add's that found its fact: ``created`` False, that fact, no commit.
    Otherwise the supersede goes on (and says that ``old`` is already superseded).
    """
    from am.writes.forms import with_ids
    from am.writes.worldwrites import checked_draft

    files = writer.files
    path = files.locate(old.superseded_by) if old.superseded_by else None
    successor = files.read_path(path) if path is not None else None
    if path is None or not isinstance(successor, Fact) or successor.body.split() != draft.text.split():
        return None
    draft = checked_draft(draft, old.repo, unverified=unverified).inheriting(with_ids(files, old))
    if not _holds_as(successor, draft.topics, draft.repo, draft.branch):
        return None
    return WriteResult("", (successor,), (path,), created=False,
                       note=f"{old.id} is already superseded by {successor.id}, which says this (a retried "
                            "supersede); nothing to do")


def recorded_hint(fact: Fact, draft: FactDraft, *, tools: bool = False) -> str:
    """Return what to do instead of adding ``fact`` again, as ``draft`` says it: am's commands, or (``tools``)
    the MCP tools an agent calls."""
    if fact.status == "pending-review":
        return (f"it waits for review; accept it with review_decide, decision 'accept', id {fact.id!r}" if tools
                else f"it waits for review; accept it with: am review accept {fact.id}")
    if fact.repo and draft.commit and draft.commit != fact.commit:
        return (f"to record that it still holds at {draft.commit[:10]}: " +
                (f"fact_confirm with id {fact.id!r} and commit {draft.commit!r}" if tools else
                 f"am fact confirm {fact.id} --commit {draft.commit}"))
    return (f"nothing to do; to change it: fact_supersede with old_id {fact.id!r}, the new text and a reason" if tools
            else f"nothing to do; to change it: am fact supersede {fact.id} TEXT --reason ...")


def holds_everywhere(new: Fact, old: Fact) -> bool:
    """Return whether ``new`` holds wherever ``old`` did (same repo, no narrower branch or later commit).

    Then a supersede marks ``old`` superseded; otherwise it stays active and the
    supersession is resolved per world (DESIGN §5.6).
    """
    return (new.repo == old.repo and (old.version is None or new.version in (None, old.version))
            and (new.commit is None or new.commit == old.commit))


@contextmanager
def superseding(writer: RecordWriter, old: tuple[PurePosixPath, Fact, str | None], draft: FactDraft, *, reason: str,
                allow_secrets: bool) -> Iterator[WriteResult | None]:
    """Hold the lock of the new statement while a supersede checks and writes; yield what it did instead, or None.

    When another holding fact already says the draft (the rule of ``recorded``, the old fact
    aside), writing the new fact would make its twin: the old fact is superseded by that one
    instead, in one commit touching the two files (``created`` False, the fact found first
    in ``records``; docs/decisions/writes.md#a-fact-said-twice-is-recorded-once-duplicates). A twin that waits for review is named, nothing written.
    """
    from am.cache.rows import statement_key

    with writer.store.key_lock(statement_key(draft.text)):
        found = recorded(writer.files, draft.text, draft.topics, draft.repo, draft.branch, besides=old[1].id)
        yield None if found is None else _by_twin(writer, old, found[1].id, reason=reason, allow_secrets=allow_secrets)


def _by_twin(writer: RecordWriter, old: tuple[PurePosixPath, Fact, str | None], twin_id: str, *, reason: str,
             allow_secrets: bool) -> WriteResult:
    from dataclasses import replace

    from am.errors import UsageError
    from am.records.writes import one_line

    old_path, fact, base = old
    twin_path, twin, twin_base = writer.existing_for_update(twin_id, Fact, "fact")
    if twin.status == "pending-review":
        raise UsageError(f"fact {twin.id} already says this and waits for review",
                         hint=f"accept it first (am review accept {twin.id}), then supersede {fact.id} again; "
                              "nothing was written")
    if twin.id in fact.supersedes:  # superseded per world only, so still holding: the two would form a cycle
        raise UsageError(f"fact {twin.id} already says this, and {fact.id} supersedes it where {fact.id} holds",
                         hint=f"to end {fact.id} too: am fact expire {fact.id} --reason ...; nothing was written")
    updated = replace(fact, superseded_by=twin.id, reason=one_line(reason),
                      status="superseded" if holds_everywhere(twin, fact) else fact.status)
    kept = replace(twin, supersedes=(*twin.supersedes, fact.id))
    result = writer.write([(twin_path, kept, twin_base), (old_path, updated, base)], noun="fact",
                          verb="supersede", ids=[twin.id, fact.id], reason=reason,
                          subject=f"fact: supersede {fact.id} -> {twin.id}", allow_secrets=allow_secrets)
    return replace(result, created=False, note=f"{twin.id} already says this: {fact.id} is superseded by it, and no "
                                               "second copy was written")

