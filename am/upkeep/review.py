"""`am review`: one queue of everything waiting on judgement, and the decisions that clear it (DESIGN §11).

The queue holds four kinds of item, each with its evidence:

* ``proposal`` - a fact the clerk proposed from a session (``pending-review``,
  ``provenance: session:<id>``): the session lines it cites;
* ``pending`` - a fact set to ``pending-review`` by hand or by an import;
* ``stale`` - a fact that holds in the world asked about while code it watches
  changed since its commit (am/worlds/stale.py): the code diff since then;
* ``contested`` - two facts a merge could not choose between: both texts;
* ``due`` - a fact ``am due`` lists in the world asked about, other than a stale one (listed as
  ``stale``): a watched path gone, or used often and last observed long ago (am/packs/due.py);
* ``similar`` - two holding facts that look alike: a restatement or a likely update or contradiction
  (am/upkeep/similarpairs.py), both texts; the item's id is the newer fact's.

A decision is one commit, its author the reviewer (``--actor``/``AM_ACTOR``,
named again in the ``Am-Actor`` trailer):

* ``accept`` - a proposal or pending fact becomes active; of a contested pair,
  this one stays and the other is superseded by it;
* ``confirm`` - re-observe the fact at the world's commit (no longer stale
  there; a pending fact becomes active);
* ``supersede`` - replace it with a corrected text;
* ``expire`` - it no longer holds (with a reason);
* ``reject`` - a proposal or pending fact was wrong: expired, with the reason;
* ``keep-both`` - of a similar pair, both hold: recorded in ``.am/kept-similar.txt`` (asked no more).
  ``supersede`` of a similar pair's newer fact without a text supersedes the older by it.

Shared by the CLI (``am review``) and the MCP server (``review_list``,
``review_decide``). Floor: upkeep (takes the vault as an argument).

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import UsageError
from am.records.model import Fact, Relation

if TYPE_CHECKING:
    from am.records.writes import WriteResult

__all__ = ["CHOICES", "DECISIONS", "ReviewItem", "ReviewQueue", "cited_by_fact", "cited_lines", "decide", "proposals",
           "review_queue", "stale_choices"]

DECISIONS = ("accept", "confirm", "supersede", "expire", "reject", "keep-both")
CHOICES = {
    "proposal": ("accept", "supersede", "reject"),
    "pending": ("accept", "confirm", "supersede", "expire", "reject"),
    "stale": ("confirm", "supersede", "expire"),
    "contested": ("accept", "supersede", "expire"),
    "similar": ("supersede", "keep-both"),
    "due": ("confirm", "supersede", "expire"),
}


@dataclass(frozen=True)
class ReviewItem:
    """One thing waiting on judgement: its kind, the fact(s), the evidence, and the decisions it takes."""

    kind: str
    id: str
    facts: tuple[Fact, ...]
    evidence: tuple[str, ...] = ()
    note: str = ""
    offered: tuple[str, ...] | None = None  # fewer choices than the kind's (a stale fact of another branch: no confirm)

    @property
    def choices(self) -> tuple[str, ...]:
        return CHOICES[self.kind] if self.offered is None else self.offered

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "note": self.note, "choices": list(self.choices),
                "facts": [{"id": f.id, "text": f.body.strip(), "status": f.status, "provenance": f.provenance,
                           "topics": list(f.topics), "repo": f.repo, "branch": f.version, "commit": f.commit,
                           "paths": list(f.paths), "source_lines": f.extra.get("source_lines")} for f in self.facts],
                "evidence": list(self.evidence)}

    def render(self) -> list[str]:
        """Return the item as lines for a person: what it is, the text(s), the evidence."""
        head = {"proposal": "proposed", "pending": "pending review", "stale": "stale here",
                "contested": "contested", "similar": "similar"}[self.kind]
        out = [f"[{head}] {self.id}" + (f" - {self.note}" if self.note else "")]
        for f in self.facts:
            prefix = f"  {f.id}: " if len(self.facts) > 1 else "  "
            out.append(prefix + " ".join(f.body.split()))
            out.append(f"    provenance {f.provenance}" + (f", {f.repo}" if f.repo else "")
                       + (f"@{f.version}" if f.version else "") + (f" ({f.commit[:10]})" if f.commit else ""))
        if self.evidence:
            out.append("  evidence:")
            out.extend(f"    {line}" for line in self.evidence)
        out.append(f"  choices: {', '.join(self.choices)}")
        return out


@dataclass
class ReviewQueue:
    """The items of one review, and the world staleness was judged in (None: no world, no stale items)."""

    items: list[ReviewItem] = field(default_factory=list)
    world: dict[str, str | None] | None = None
    counts: dict[str, int] = field(default_factory=dict)  # items of each kind in the whole queue
    total: int = 0  # items in the whole queue (more than len(items) when a limit cut it)

    def to_json(self) -> dict[str, Any]:
        return {"world": self.world, "counts": self.counts, "total": self.total,
                "items": [i.to_json() for i in self.items]}


def cited_lines(vault: Any, fact: Fact) -> list[str]:
    """Return the session lines a proposal cites, as 'line N, role: text' (the stored, masked log)."""
    return cited_by_fact(vault, [fact]).get(fact.id, [])


def cited_by_fact(vault: Any, facts: list[Fact]) -> dict[str, list[str]]:
    """Return, by fact id, the session lines each proposal cites; each session's log is read and parsed once."""
    from am.records.sessionlog import log_file, messages, session_topic_id

    by_session: dict[str, list[Fact]] = {}
    for fact in facts:
        if fact.provenance.startswith("session:") and isinstance(fact.extra.get("source_lines"), list):
            by_session.setdefault(fact.provenance.split(":", 1)[1], []).append(fact)
    out: dict[str, list[str]] = {}
    for sid, cited in by_session.items():
        path = vault.locate(session_topic_id(sid))
        topic = vault.read_path(path) if path is not None else None
        log = topic.extra.get("file") if topic is not None else None
        if topic is None or not isinstance(log, str):
            out.update((f.id, [f"(session {sid} is not in the vault)"]) for f in cited)
            continue
        if log_file(vault.root, log) is None:
            out.update((f.id, [f"(the log {log} is not in the vault's sessions/ folder)"]) for f in cited)
            continue
        try:
            data = (vault.root / PurePosixPath(log)).read_bytes()
        except OSError:
            out.update((f.id, [f"(the log {log} cannot be read)"]) for f in cited)
            continue
        wanted = {n for f in cited for n in f.extra["source_lines"] if isinstance(n, int)}
        said: dict[int, list[str]] = {}
        for m in messages(data, str(topic.extra.get("client", "jsonl"))):
            if m.line in wanted:
                text = m.text if len(m.text) <= 400 else m.text[:399] + "…"
                said.setdefault(m.line, []).append(f"line {m.line}, {m.role}: " + text.replace("\n", "\n      "))
        for f in cited:
            lines = set(n for n in f.extra["source_lines"] if isinstance(n, int))
            out[f.id] = [text for n in sorted(said) if n in lines for text in said[n]]
    return out


def _stale_items(vault: Any, repo: str, branch: str | None, commit: str | None, diff: bool,
                 room: int | None = None) -> tuple[list[ReviewItem], dict[str, str | None]]:
    """Return the world's stale facts as items (the code diff for the first ``room`` of them: None, all)."""
    from am.packs.pack import SliceRequest
    from am.packs.why import stale_in_world

    report = stale_in_world(vault, SliceRequest(repo=repo, branch=branch, commit=commit, max_tokens=0))
    world = report.setup.world
    where = {"repo": world.repo, "branch": world.branch, "commit": world.commit, "rule": report.setup.rule}
    items: list[ReviewItem] = []
    store = None
    if report.facts and world.commit:
        from am.worlds.ancestry import open_clone

        store = open_clone(repo)[0]
    for s in report.facts:
        evidence = [s.mark.describe()]
        if diff and s.fact.commit and world.commit and (room is None or len(items) < room):
            evidence += _diff(repo, s.fact.commit, world.commit, s.fact.paths)
        note = f"code it watches changed since {s.fact.commit[:10] if s.fact.commit else '?'}"
        offered, why = stale_choices(store, s.fact, world.branch, world.commit)
        note += f"; {why}" if why else ""
        items.append(ReviewItem("stale", s.fact.id, (s.fact,), tuple(evidence), note=note,
                                offered=offered if why else None))
    return items, where


def stale_choices(store: Any, fact: Fact, branch: str | None, commit: str | None) -> tuple[tuple[str, ...], str]:
    """Return the decisions a fact stale at ``commit`` (of ``branch``, in the clone ``store``) takes, and why fewer.

    The rule is ``am fact confirm``'s (am.worlds.checks.keeps_branch): a confirm there must keep the fact on its
    home branch (its own, or the main line once its own is gone). When it would not (another branch's fact), only a supersede scoped to this world is offered: an
    expire would end the fact on its own branch too, where it may well hold. Shared by the CLI queue and the web view.
    """
    from am.worlds.checks import home_branch, keeps_branch

    if store is None or not commit or keeps_branch(store, fact.version, fact.commit, commit):
        return CHOICES["stale"], ""
    b = home_branch(store, fact.version, fact.commit)
    why = (f"a fact of {b}: check it on {branch or 'this branch'}, and if it no longer holds here: "
           f"am fact supersede {fact.id} \"what holds here\" --branch {branch or 'BRANCH'} "
           f"--reason \"...\" (confirming it here would take it off {b})")
    return tuple(c for c in CHOICES["stale"] if c not in ("confirm", "expire")), why


def _diff(repo: str, old: str, new: str, paths: tuple[str, ...]) -> list[str]:
    from am.git.patch import code_diff
    from am.worlds.ancestry import open_clone
    from am.worlds.stale import path_matches

    store, why = open_clone(repo)
    if store is None:
        return [f"({why})"]
    return code_diff(store, old, new, paths, matches=path_matches)


def review_queue(vault: Any, *, repo: str | None = None, branch: str | None = None, commit: str | None = None,
                 diff: bool = True, kinds: tuple[str, ...] = tuple(CHOICES), limit: int | None = None) -> ReviewQueue:
    """Return everything waiting on judgement; stale facts only when a world (``repo``) is given.

    With ``limit``, only the first ``limit`` items (in the queue's order) are kept and given their evidence;
    ``total`` and ``counts`` still count the whole queue.
    """
    queue = ReviewQueue()
    if "proposal" in kinds or "pending" in kinds:
        for fact in vault.list_facts(status="pending-review"):
            # The clerk's: from a session, citing its lines (a hand-written fact may say session:<actor> too).
            proposal = fact.provenance.startswith("session:") and "source_lines" in fact.extra
            kind = "proposal" if proposal else "pending"
            if kind in kinds:
                note = f"from {fact.provenance}" if proposal else ""
                if fact.extra.get("proposed_supersedes"):  # the clerk's update of a holding fact
                    note += f"; accepting it supersedes {', '.join(map(str, fact.extra['proposed_supersedes']))}"
                queue.items.append(ReviewItem(kind, fact.id, (fact,), note=note))
    if "contested" in kinds:
        queue.items.extend(_contested(vault))
    if "similar" in kinds:
        queue.items.extend(_similar(vault))
    if "stale" in kinds and repo is not None:
        room = None if limit is None else max(limit - len(queue.items), 0)
        stale, queue.world = _stale_items(vault, repo, branch, commit, diff, room)
        queue.items.extend(stale)
    if "due" in kinds and repo is not None:  # a fact listed already (stale) is not asked about twice
        listed = {i.id for i in queue.items}
        queue.items.extend(i for i in _due(vault, repo, branch) if i.id not in listed)
    queue.counts = _counts(queue.items)
    queue.total = len(queue.items)
    if limit is not None:
        del queue.items[limit:]
    cited = cited_by_fact(vault, [i.facts[0] for i in queue.items if i.kind == "proposal"])
    queue.items = [replace(i, evidence=tuple(cited.get(i.id, ()))) if i.kind == "proposal" else i
                   for i in queue.items]
    return queue


def _counts(items: list[ReviewItem]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item.kind] = counts.get(item.kind, 0) + 1
    return counts


def proposals(vault: Any) -> list[ReviewItem]:
    """Return the clerk's proposals waiting for review, with the session lines they cite (the web view's list)."""
    return review_queue(vault, kinds=("proposal",)).items


def _contested(vault: Any) -> list[ReviewItem]:
    contested = {f.id: f for f in vault.list_facts(status="contested")}
    pairs: dict[str, str] = {}
    for rel in vault.list_relations(status="active", rel="conflicts-with"):  # only these decoded (an index)
        if rel.from_ in contested and rel.to in contested:
            pairs.setdefault(rel.from_, rel.to)
            pairs.setdefault(rel.to, rel.from_)
    items: list[ReviewItem] = []
    done: set[str] = set()
    for fid in sorted(contested):
        if fid in done:
            continue
        other = pairs.get(fid)
        facts = (contested[fid], contested[other]) if other else (contested[fid],)
        done.update(f.id for f in facts)
        items.append(ReviewItem("contested", fid, facts, note=f"conflicts with {other}" if other else
                                "no conflicts-with partner"))
    return items


def _due(vault: Any, repo: str, branch: str | None) -> list[ReviewItem]:
    """am due's items of one world that the stale kind does not already hold: watched paths gone, old observations."""
    from am.clock import now
    from am.packs.due import due_in_world

    items = []
    for item in due_in_world(vault, repo, branch, now(), 30):
        if item.kind in ("gone", "unconfirmed"):
            items.append(ReviewItem("due", item.fact, (vault.get_fact(item.fact),),
                                    note=f"{item.kind}: {item.why}; settle: {item.settle}"))
    return items


def _similar(vault: Any) -> list[ReviewItem]:
    from am.upkeep.similarpairs import similar_pairs

    items = []
    for pair in similar_pairs(vault):
        facts = (vault.get_fact(pair.newer[0]), vault.get_fact(pair.older[0]))
        word = "restates" if pair.kind == "same" else "may update or contradict"
        items.append(ReviewItem("similar", pair.newer[0], facts, note=f"{word} {pair.older[0]} ({pair.why}); "
                                f"supersede: {pair.older[0]} ends, keep-both: both hold"))
    return items


def decide(vault: Any, decision: str, fact_id: str, *, reason: str | None = None, text: str | None = None,
           repo: str | None = None, branch: str | None = None, commit: str | None = None,
           door: str = "review") -> WriteResult:
    """Carry out one review decision on a fact, in one commit authored by the reviewer (the vault's actor).

    ``confirm`` and ``supersede`` take a world (``repo``, ``branch``, ``commit``: where the fact is re-observed,
    or where the new fact is observed; a supersede without one inherits the old fact's world). Given to another
    decision it is refused, never ignored. ``door`` names the caller in that error (``review_decide`` for MCP).
    """
    if decision not in DECISIONS:
        raise UsageError(f"unknown decision {decision!r}", hint=f"use one of: {', '.join(DECISIONS)}")
    world = {name: value for name, value in (("repo", repo), ("branch", branch), ("commit", commit)) if value}
    if world and decision not in ("confirm", "supersede"):
        raise UsageError(f"{door} {decision} takes no {', '.join(world)}: only confirm and supersede have a world",
                         hint="leave them out")
    fact = vault.get_fact(fact_id)
    if decision == "keep-both" or (decision == "supersede" and not text):
        return _decide_pair(vault, decision, fact_id, reason)
    if decision == "confirm":
        return _confirm(vault, fact, repo, branch, commit)
    if decision == "supersede":
        if not text or not text.strip():
            raise UsageError("a supersede needs the corrected text", hint="pass --text 'what holds now'")
        return vault.supersede_fact(fact_id, text, reason=reason or "corrected in review",  # type: ignore[no-any-return]
                                    **world)
    if decision == "expire":
        if not reason or not reason.strip():
            raise UsageError("expiring a fact needs a reason", hint="pass --reason 'why it no longer holds'")
        return vault.expire_fact(fact_id, reason=reason)  # type: ignore[no-any-return]
    if decision == "reject":
        if fact.status != "pending-review":
            raise UsageError(f"{fact_id} is {fact.status}, not waiting for review",
                             hint="reject is for proposals and pending facts; expire it instead (--reason)")
        return _set(vault, fact, "expired", "reject", reason=f"rejected in review: {reason or 'no reason given'}")
    if fact.status == "contested":
        return _accept_contested(vault, fact, reason)
    if fact.status != "pending-review":
        raise UsageError(f"{fact_id} is {fact.status}, not waiting for review",
                         hint="accept takes proposals, pending and contested facts")
    if fact.extra.get("proposed_supersedes"):
        return _accept_superseding(vault, fact, reason)
    return _set(vault, fact, "active", "accept", reason=reason)


def _accept_superseding(vault: Any, fact: Fact, reason: str | None) -> WriteResult:
    """Accept a proposal that replaces holding facts (the clerk's ``proposed_supersedes``): it becomes active and
    supersedes them, in one commit (a fact no longer holding is left alone)."""
    from am.records.writes import one_line
    from am.writes.duplicates import HOLDING, holds_everywhere

    why = one_line(reason or f"accepted in review: {fact.id} replaces it")
    path, current, base = vault.writer.existing_for_update(fact.id, Fact, "fact")
    if current.status != "pending-review":
        raise UsageError(f"{fact.id} changed while being reviewed (now {current.status})", hint="list the queue again")
    extra = {k: v for k, v in current.extra.items() if k != "proposed_supersedes"}
    items: list[tuple[PurePosixPath, Any, str | None]] = []
    ended: list[str] = []
    for old_id in current.extra.get("proposed_supersedes") or ():
        o_path, old, o_base = vault.writer.existing_for_update(str(old_id), Fact, "fact")
        if old.status not in HOLDING or old.superseded_by:
            continue
        status = "superseded" if holds_everywhere(current, old) else old.status
        items.append((o_path, replace(old, superseded_by=fact.id, reason=why, status=status), o_base))
        ended.append(old.id)
    accepted = replace(current, status="active", extra=extra, supersedes=(*current.supersedes, *ended),
                       reason=one_line(reason) if reason else current.reason)
    items.insert(0, (path, accepted, base))
    return vault.writer.write(items, noun="review", verb="accept", ids=[fact.id, *ended],  # type: ignore[no-any-return]
                              reason=reason, subject=f"review: accept {fact.id}"
                              + (f" superseding {', '.join(ended)}" if ended else "") + f" (by {vault.actor})")


def _decide_pair(vault: Any, decision: str, fact_id: str, reason: str | None) -> WriteResult:
    """Decide a similar pair by its newer fact: supersede the older by it, or keep both (am/upkeep/similarpairs.py)."""
    from am.records.writes import WriteResult
    from am.upkeep.similarpairs import keep_both, pair_of, supersede_older

    pair = pair_of(vault, fact_id)
    if pair is None:
        if decision == "supersede":
            raise UsageError("a supersede needs the corrected text", hint="pass --text 'what holds now'")
        raise UsageError(f"{fact_id} is not the newer fact of a similar pair",
                         hint="am review list --kind similar lists the pairs; keep-both takes the id shown")
    if decision == "supersede":
        return supersede_older(vault, pair, reason=reason)
    commit = keep_both(vault, pair, reason=reason)
    newer, older = vault.get_fact(pair.newer[0]), vault.get_fact(pair.older[0])
    return WriteResult(commit, (newer, older), (PurePosixPath(pair.newer[1]), PurePosixPath(pair.older[1])))


def _set(vault: Any, fact: Fact, status: str, verb: str, *, reason: str | None) -> WriteResult:
    from am.records.writes import one_line

    path, current, base = vault.writer.existing_for_update(fact.id, Fact, "fact")
    if current.status != fact.status:
        raise UsageError(f"{fact.id} changed while being reviewed (now {current.status})", hint="list the queue again")
    updated = replace(current, status=status, reason=one_line(reason) if reason else current.reason)
    return vault.writer.write([(path, updated, base)], noun="review", verb=verb, ids=[fact.id],  # type: ignore[no-any-return]
                        reason=reason, subject=f"review: {verb} {fact.id} (by {vault.actor})")


def _confirm(vault: Any, fact: Fact, repo: str | None, branch: str | None, commit: str | None) -> WriteResult:
    """Re-observe at the world's commit: the tip of ``branch`` (or ``commit``) in the fact's repo."""
    if commit is None and branch is not None and (repo is None or repo == fact.repo) and fact.repo:
        from am.worlds.checks import verify_world

        commit = verify_world(fact.repo, branch, None).commit
    if fact.repo is None and fact.status == "pending-review":
        return _set(vault, fact, "active", "accept", reason="confirmed in review")
    return vault.confirm_fact(fact.id, commit=commit)  # type: ignore[no-any-return]


def _accept_contested(vault: Any, fact: Fact, reason: str | None) -> WriteResult:
    """Keep ``fact`` of a contested pair: it becomes active and supersedes the other, the edge expires."""
    from am.records.writes import one_line

    partner = None
    for rel in vault.list_relations(status="active", rel="conflicts-with"):
        if fact.id in (rel.from_, rel.to):
            partner = rel
            break
    why = one_line(reason or "chosen in review")
    path, current, base = vault.writer.existing_for_update(fact.id, Fact, "fact")
    items: list[tuple[PurePosixPath, Any, str | None]] = []
    ids = [fact.id]
    other_id = None
    if partner is not None:
        other_id = partner.to if partner.from_ == fact.id else partner.from_
        o_path, other, o_base = vault.writer.existing_for_update(other_id, Fact, "fact")
        items.append((o_path, replace(other, status="superseded", superseded_by=fact.id, reason=why), o_base))
        r_path, rel, r_base = vault.writer.existing_for_update(partner.id, Relation, "relation")
        items.append((r_path, replace(rel, status="expired", reason=why), r_base))
        ids += [other_id, partner.id]
    supersedes = tuple(dict.fromkeys((*current.supersedes, *([other_id] if other_id else []))))
    items.insert(0, (path, replace(current, status="active", supersedes=supersedes), base))
    return vault.writer.write(items, noun="review", verb="accept", ids=ids, reason=why,  # type: ignore[no-any-return]
                        subject=f"review: accept {fact.id}" + (f" over {other_id}" if other_id else "")
                        + f" (by {vault.actor})")
