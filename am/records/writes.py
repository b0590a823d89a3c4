"""What a write takes (``FactDraft``) and returns, one-line text for commit messages, fresh fact ids, bulk batches.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import PathTakenError, UsageError
from am.records.model import Fact, Record, Relation, Topic

if TYPE_CHECKING:
    from am.records.secrets import SecretFinding

__all__ = ["RECORD_TRAILERS_BUDGET", "SIMILAR_POLICIES", "FactDraft", "Similar", "WriteResult", "batch_bounds", "check_no_secret", "check_one_line",
           "one_line", "check_to_write", "check_trailers", "scan_record", "with_fresh_ids"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]+")


SIMILAR_POLICIES = ("warn", "refuse", "allow")


@dataclass(frozen=True)
class Similar:
    """A holding fact a new one looks like (am/writes/similar.py): ``kind`` 'same' (a restatement) or 'candidate'
    (an update or contradiction), ``why`` in a few words, and ``command``/``tool``: the one step that supersedes
    it (or, for a restatement, what to do instead), for a person and for an agent's tools."""

    id: str
    text: str
    why: str
    kind: str
    command: str = ""
    tool: str = ""

    def as_dict(self, *, tools: bool = False) -> dict[str, str]:
        return {"id": self.id, "text": self.text, "why": self.why, "kind": self.kind,
                "next": self.tool if tools else self.command}


@dataclass(frozen=True)
class WriteResult:
    """What one write did: the commit and the records it wrote.

    ``created`` False: the fact was found already recorded (am/writes/duplicates.py): a fact add or
    a retried supersede wrote nothing (``commit`` empty), a supersede by a twin wrote the two files;
    ``records`` starts with the fact found and ``note`` says what happened or what to do instead.
    """

    commit: str
    records: tuple[Record, ...]
    paths: tuple[PurePosixPath, ...]
    created: bool = True
    note: str | None = None
    similar: tuple[Similar, ...] = ()  # holding facts the new one looks like (written anyway: a candidate)

    @property
    def record(self) -> Record:
        return self.records[0]

    def similar_json(self, *, tools: bool = False) -> dict[str, Any]:
        """Return ``{"similar": [...]}`` for a write's JSON answer (CLI, MCP), or {} when it looks like nothing."""
        return {"similar": [s.as_dict(tools=tools) for s in self.similar]} if self.similar else {}

    def similar_text(self, *, tools: bool = False) -> str:
        """Return the lines that name a likely update's holding facts, and the next step (CLI: a command; MCP: a call)."""
        return "".join(f"  similar: fact {s.id} holds and says {s.text!r} ({s.why})\n    {s.tool if tools else s.command}\n"
                       for s in self.similar if s.kind == "candidate")


def one_line(text: str, *, limit: int = 200) -> str:
    """Collapse text to one safe line for a commit message (no control or bidi characters)."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# What a one-line value (a branch, a provenance, a tag) may not hold: line breaks, tabs, other controls.
_NOT_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def check_one_line(option: str, *values: str | None) -> None:
    """Refuse a value given for ``option`` that is not one line (a line break, tab or other control character).

    Such a value is one line of frontmatter: a newline in it was written as an escape that Obsidian, ``am
    check``'s messages and every reader of the field showed as a broken line.
    """
    for value in values:
        found = _NOT_ONE_LINE.search(value) if value else None
        if found is not None:
            raise UsageError(f"{option} {value!r} holds the control character U+{ord(found.group()):04X}; "
                             f"it must be one line", hint=f"give {option} without line breaks or control "
                                                          f"characters; nothing was written")


# A commit message is at most 64 KiB (am/git/checks.py). A batch's subject, Am-Op and Am-Actor take a few
# hundred characters; the rest is one "Am-Record: <id>" line a record (ids: at most 120 characters).
RECORD_TRAILERS_BUDGET = 60_000


def batch_bounds(ids: Sequence[str], size: int, *, budget: int = RECORD_TRAILERS_BUDGET) -> Iterator[tuple[int, int]]:
    """Yield (start, end) of consecutive batches of at most ``size`` records whose Am-Record trailers fit ``budget``.

    One commit a batch names every record it writes, so a batch of long ids is
    cut short rather than refused for its message (2,000 ids of 25 characters
    already pass 64 KiB).
    """
    start = used = 0
    for i, rid in enumerate(ids):
        cost = len(rid) + len("Am-Record: \n")
        if i > start and (i - start >= size or used + cost > budget):
            yield start, i
            start, used = i, 0
        used += cost
    if start < len(ids):
        yield start, len(ids)


def with_fresh_ids(attempt: Callable[[], WriteResult], *, generated: bool) -> WriteResult:
    """Run a write; if its generated fact id was drawn by another writer in the same minute, draw again.

    Generated ids carry 24 random bits per minute: hundreds of agents writing in
    one minute can draw the same one. The second writer's commit finds the file
    taken (nothing was written) and the write is tried again with a new id.
    """
    for tries_left in range(4, -1, -1):
        try:
            return attempt()
        except PathTakenError:
            if not generated or tries_left == 0:
                raise
    raise AssertionError("unreachable")


_TUPLE_FIELDS = ("topics", "paths", "tags")


@dataclass(frozen=True)
class FactDraft:
    """A fact being written, as one value: built by whichever door received it (CLI, MCP, importer).

    ``None`` and ``()`` mean "not given": a new fact takes the defaults
    (confidence ``medium``), a superseding one inherits the old fact's value
    (``inheriting``).
    """

    text: str
    topics: tuple[str, ...] = ()
    id: str | None = None
    confidence: str | None = None
    provenance: str | None = None
    repo: str | None = None
    branch: str | None = None
    commit: str | None = None
    paths: tuple[str, ...] = ()
    valid_from: str | None = None
    valid_until: str | None = None
    tags: tuple[str, ...] = ()
    pin: bool = False
    axis: str | None = None
    dirty: bool = False  # observed in a work tree with uncommitted changes (filled by worldwrites.draft_here)
    if_similar: str | None = None  # warn / refuse / allow: this write's policy (None: the vault's, ``similar:``)

    def __post_init__(self) -> None:
        for name in _TUPLE_FIELDS:  # callers pass lists; the value stays hashable and immutable
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @classmethod
    def of(cls, draft: FactDraft | str, fields: dict[str, Any]) -> FactDraft:
        """Return ``draft`` itself, or a draft of the text ``draft`` with ``fields`` (not both)."""
        if isinstance(draft, FactDraft):
            if fields:
                raise TypeError(f"pass a FactDraft or keyword fields, not both: {sorted(fields)}")
            return draft
        return cls(text=draft, **fields)

    def check_lines(self) -> None:
        """Refuse a one-line field given with a line break or control character, naming its option."""
        for option, values in (("--provenance", (self.provenance,)), ("--repo", (self.repo,)),
                               ("--branch", (self.branch,)), ("--commit", (self.commit,)), ("--path", self.paths),
                               ("--tag", self.tags)):
            check_one_line(option, *values)
        for path in self.paths:
            if ".." in path.replace("\\", "/").split("/"):
                raise UsageError(f"--path {path!r} steps out of the code repository ('..'), so no change there can "
                                 "ever match it and the fact would never go stale",
                                 hint="give the path from the repository's root (src/api/users.py, or a folder "
                                      "or glob); nothing was written")

    def inheriting(self, old: Fact) -> FactDraft:
        """Fill what this draft leaves open from the fact it supersedes (topics, world, paths, tags, pin)."""
        return replace(
            self, topics=self.topics or old.topics, confidence=self.confidence or old.confidence,
            repo=self.repo or old.repo, branch=self.branch or old.version, commit=self.commit or old.commit,
            paths=self.paths or old.paths, tags=self.tags or old.tags, pin=self.pin or old.pinned,
            axis=self.axis or old.axis,
        )


def check_to_write(path: PurePosixPath | str, record: Record, *, allow_secrets: bool = False) -> None:
    """Raise the error that refuses writing ``record`` at ``path``: its schema, then a credential in it.

    The checks of every write of a record, whoever makes it: ``RecordWriter.write`` (am/writes/writer.py) runs it on
    the records it renders, and the holder of the write lock on each record of a request another process queued
    (am/git/checks.py ``check_queued``), since that file could have been left by anyone.
    """
    from am.records.schemas import check_record

    check_record(record, path=str(path))
    check_no_secret(record, allow_secrets=allow_secrets)


def check_no_secret(record: Record, *, allow_secrets: bool = False) -> None:
    """Raise SecretError if a record about to be written holds a credential, unless allowed (history is forever)."""
    if allow_secrets:
        return
    from am.errors import SecretError

    findings = scan_record(record)
    if findings:
        raise SecretError(
            f"{record.id}: {findings[0].describe()}",
            hint="remove it (history is forever); if it is not a credential, a person can write it with "
                 "--allow-secret (an agent's tools cannot)",
        )


# The trailers only am writes, each of its own line in the last paragraph of a commit message.
_TRAILER = re.compile(r"^(Am-[A-Za-z-]*):[ ]?(.*)\Z")
_OP = re.compile(r"^[a-z]+\.[a-z-]+\Z")


def check_trailers(message: str, *, actor: str, ids: Sequence[str]) -> None:
    """Raise UsageError unless ``message`` has am's trailers and nothing forged: one ``Am-Op``, ``Am-Record``
    lines naming only the records written (``ids``), one ``Am-Actor`` equal to the author's name (``actor``),
    and no other ``Am-`` line anywhere (am/writes/authorship.py composes them so)."""
    lines = message.rstrip("\n").split("\n")
    cut = max((i for i, line in enumerate(lines) if not line.strip()), default=-1)
    found: dict[str, list[str]] = {}
    for i, line in enumerate(lines):
        m = _TRAILER.match(line)
        if m is None:
            if line.startswith("Am-") or (i > cut and not line.startswith("Reason: ")):
                raise UsageError(f"refused a write whose commit message has a line am does not write: {line[:80]!r}",
                                 hint="am composes its own commit messages; nothing was written")
            continue
        if i <= cut:
            raise UsageError(f"refused a write whose commit message has {m[1]} outside its trailers",
                             hint="am composes its own commit messages; nothing was written")
        found.setdefault(m[1], []).append(m[2])
    ops, actors, records = found.pop("Am-Op", []), found.pop("Am-Actor", []), found.pop("Am-Record", [])
    why = None
    if found:
        why = f"a trailer am does not write ({sorted(found)[0]})"
    elif len(ops) != 1 or not _OP.match(ops[0]):
        why = "not exactly one Am-Op trailer naming an operation"
    elif actors != [actor]:
        why = f"an Am-Actor trailer that is not its author's name {actor!r}"
    elif not set(records) <= set(ids):
        why = f"an Am-Record trailer naming a record it does not write ({sorted(set(records) - set(ids))[0]!r})"
    if why is not None:
        raise UsageError(f"refused a write whose commit message has {why}",
                         hint="am composes its own commit messages; nothing was written")


def scan_record(record: Record) -> list[SecretFinding]:
    """Return the secrets in every field of a record about to be written that a writer fills with free text: body,
    title and aliases, tags, provenance, paths, repo and branch, reason, unknown keys (am/records/secrets.py does
    the finding). A credential in a URL given as provenance is as much in history as one in the body."""
    from am.records.secrets import scan_fields

    fields: dict[str, object] = {"body": record.body, "tags": list(record.tags)}
    if isinstance(record, Topic):
        fields.update(title=record.title, aliases=list(record.aliases))
    if isinstance(record, Fact):
        fields.update(provenance=record.provenance, paths=list(record.paths))
    if isinstance(record, (Fact, Relation)):
        fields.update(repo=record.repo or "", version=record.version or "")
        if record.reason:
            fields["reason"] = record.reason
    fields.update(record.extra)
    return scan_fields(fields)
