"""Validity of records in a world (DESIGN §5); pure, given an ancestry oracle.

A world is (repo, branch, commit, time). ``resolve(records, world, oracle)``
decides, for every record, whether it holds there and, if not, why:

1. status: ``active`` holds, ``contested`` holds and is flagged,
   ``pending-review`` only on request, ``expired``/``superseded`` never;
2. repo: a record with ``repo`` holds only in that repo's worlds;
3. commit ancestry (the repo's clone is registered and the world's commit is
   known): observed at ``commit`` C, the record holds iff C is an ancestor of
   (or equal to) the world's commit — or C's change landed there as an
   equivalent commit (a squash, rebase or cherry-pick: ``am.worlds.landed``,
   which the oracle asks) — and its ``until_commit`` is not;
4. branch name, the fallback (no clone, or the record's commit is not in the
   clone): ``version`` must equal the branch or be absent; a commit a shallow
   clone lacks is counted apart (``RULE_SHALLOW``, ``WHY_SHALLOW``);
5. valid time: ``valid_from <= at < valid_until`` where set;
6. per-world supersession: a record is hidden where a record that supersedes
   it holds (``supersedes`` on the new record or ``superseded_by`` on the old,
   whichever a writer left).

The ancestry oracle answers "is this commit in the world's history?" from one
walk of that history (``am.worlds.ancestry``), so the cost per slice grows with the
history plus the facts, never with their product.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, NamedTuple, Protocol

from am.records.ids import stored_moment
from am.records.model import RELATION_TYPES, Fact, Record, Relation, Topic

__all__ = [
    "AncestryOracle",
    "SetAncestry",
    "World",
    "Verdict",
    "Resolution",
    "RULE_ANCESTRY",
    "RULE_BRANCH",
    "RULE_NONE",
    "RULE_SHALLOW",
    "WHY_SHALLOW",
    "judge",
    "resolve",
    "to_moment",
    "FactView",
]

RULE_ANCESTRY = "commit-ancestry"
RULE_BRANCH = "branch-name"
RULE_NONE = "repo-less"
# A commit the clone lacks because it is shallow (git clone --depth): judged by branch name, and counted apart.
RULE_SHALLOW = "branch-name (shallow clone)"

# Reasons a record does not hold, as counted in a pack's header.
WHY_PENDING = "pending-review"
WHY_REPO = "other repo"
WHY_HISTORY = "not in this commit's history"
WHY_UNTIL = "ended at an earlier commit"
WHY_BRANCH = "other branch"
WHY_SHALLOW = "other branch, commit beyond the shallow clone"
WHY_TIME = "outside its valid time"
WHY_SUPERSEDED = "superseded here"
WHY_STATUS = "unknown status"
_KNOWN_STATUSES = frozenset(("active", "contested", "pending-review", "expired", "superseded"))


class AncestryOracle(Protocol):
    """Answers whether a commit is in the world's history."""

    def contains(self, commit: str) -> bool | None:
        """Return True if ``commit`` is the world's commit or an ancestor, False if not, None if unknown."""
        ...


class SetAncestry:
    """An oracle from the full ids of the world's history and of other commits known to exist."""

    def __init__(self, history: Iterable[str], known: Iterable[str] = ()) -> None:
        self.history = frozenset(h.lower() for h in history)
        self._all = sorted(self.history | {k.lower() for k in known})

    def contains(self, commit: str) -> bool | None:
        """Return whether ``commit`` (a full id, or a unique prefix of 4+ hex digits) is in the history."""
        c = commit.lower()
        if c in self.history:
            return True
        if len(c) < 4:
            return None
        # Bisect, so a short sha costs log(commits), not a scan of the history.
        i = bisect.bisect_left(self._all, c)
        matches: list[str] = []
        while i < len(self._all) and self._all[i].startswith(c) and len(matches) < 2:
            matches.append(self._all[i])
            i += 1
        if len(matches) != 1:
            return None
        return matches[0] in self.history


class _FactFields(NamedTuple):
    id: str
    status: str
    confidence: str
    repo: str | None
    version: str | None
    commit: str | None
    until_commit: str | None
    valid_from: str | None
    valid_until: str | None
    supersedes: tuple[str, ...]
    superseded_by: str | None
    pinned: bool
    created: str | None
    topics: tuple[str, ...]
    # The position in the cache's ranking (pinned, confidence, newest, id); -1: not ranked.
    rank: int = -1


class FactView(_FactFields):
    """A fact's world fields without its body: all that judging and ranking need.

    The cache hands these out for every fact, and full facts only for the few a
    pack shows, so a slice of 100k facts does not decode 100k bodies.
    """

    __slots__ = ()
    # Class attributes, not fields: a view of a fact has the fact's type and no body.
    type: ClassVar[str] = "fact"
    body: ClassVar[str] = ""


@dataclass(frozen=True)
class World:
    """Where a question is asked: repo, branch, commit and valid time."""

    repo: str | None = None
    branch: str | None = None
    commit: str | None = None
    at: datetime | None = None
    include_pending: bool = False


@dataclass(frozen=True)
class Verdict:
    """Whether one record holds in a world, why not, and which rule decided."""

    holds: bool
    why: str | None = None
    rule: str = RULE_NONE
    flagged: bool = False


@dataclass
class Resolution:
    """Every record sorted into what holds in a world and what does not."""

    topics: dict[str, Topic] = field(default_factory=dict)
    facts: dict[str, Fact | FactView] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    all_topics: dict[str, Topic] = field(default_factory=dict)
    excluded: dict[str, int] = field(default_factory=dict)
    superseded_here: dict[str, str] = field(default_factory=dict)
    rules: dict[str, int] = field(default_factory=dict)
    # (facts that hold, of them contested) when only counted: am.packs.cache leaves ``facts`` empty.
    counted: tuple[int, int] | None = None

    @property
    def contested(self) -> list[Fact | FactView]:
        return [f for f in self.facts.values() if f.status == "contested"]

    def fact_counts(self) -> tuple[int, int]:
        """Return how many facts hold and how many of them are contested."""
        if self.counted is not None:
            return self.counted
        return len(self.facts), sum(1 for f in self.facts.values() if f.status == "contested")


def to_moment(value: str) -> datetime | None:
    """Read a frontmatter date or date-time (None if unreadable); one without an offset is UTC (stored_moment)."""
    return stored_moment(value)


def _time_ok(record: Fact | FactView | Relation, at: datetime | None) -> bool:
    if at is None or (record.valid_from is None and record.valid_until is None):
        return True
    if record.valid_from is not None:
        start = to_moment(record.valid_from)
        if start is not None and at < start:
            return False
    if record.valid_until is not None:
        end = to_moment(record.valid_until)
        if end is not None and at >= end:
            return False
    return True


_VERDICTS: dict[tuple[bool, str | None, str, bool], Verdict] = {}


def _verdict(holds: bool, why: str | None = None, rule: str = RULE_NONE, flagged: bool = False) -> Verdict:
    # Verdicts are values; sharing them saves building one per record (100k per slice).
    key = (holds, why, rule, flagged)
    found = _VERDICTS.get(key)
    if found is None:
        found = _VERDICTS[key] = Verdict(holds, why, rule, flagged)
    return found


def judge(record: Fact | FactView | Relation, world: World, oracle: AncestryOracle | None) -> Verdict:
    """Decide whether a fact or relation holds in a world, before supersession."""
    status = record.status
    if status in ("expired", "superseded"):
        return _verdict(False, status)
    if status not in _KNOWN_STATUSES:
        return _verdict(False, WHY_STATUS)  # a hand-set status outside the five never holds (am check says so)
    if status == "pending-review" and not world.include_pending:
        return _verdict(False, WHY_PENDING)
    repo = record.repo
    rule = RULE_NONE
    if repo is not None:
        if repo != world.repo:
            return _verdict(False, WHY_REPO)
        rule = RULE_BRANCH
        decided = False
        if oracle is not None and record.commit:
            seen = oracle.contains(record.commit)
            if seen is not None:
                rule, decided = RULE_ANCESTRY, True
                if not seen:
                    return _verdict(False, WHY_HISTORY, rule)
            elif getattr(oracle, "shallow", False):
                rule = RULE_SHALLOW
        if oracle is not None and record.until_commit:
            if oracle.contains(record.until_commit):
                return _verdict(False, WHY_UNTIL, RULE_ANCESTRY)
        if not decided and record.version is not None and record.version != world.branch:
            return _verdict(False, WHY_SHALLOW if rule == RULE_SHALLOW else WHY_BRANCH, rule)
    if (record.valid_from is not None or record.valid_until is not None) and not _time_ok(record, world.at):
        return _verdict(False, WHY_TIME, rule)
    return _verdict(True, None, rule, status == "contested")


def _count(counter: dict[str, int], key: str) -> None:
    counter[key] = counter.get(key, 0) + 1


def resolve(records: Iterable[Record | FactView], world: World, oracle: AncestryOracle | None) -> Resolution:
    """Sort records into what holds in ``world``, applying supersession per world."""
    out = Resolution()
    candidates: dict[str, Fact | FactView] = {}
    rule_of: dict[str, str] = {}
    relations: dict[str, Relation] = {}
    seen: dict[str, set[str]] = {"topic": set(), "fact": set(), "relation": set()}
    replacing: list[str] = []
    replaced: list[str] = []
    plain, by_branch = _verdict(True), _verdict(True, None, RULE_BRANCH)
    here, branch = world.repo, world.branch
    for record in records:
        # Two files with one id (a person's copy): the first wins, as in the cache's lookup.
        ids = seen[record.type]
        rid = record.id
        if rid in ids:
            continue
        ids.add(rid)
        if isinstance(record, Topic):
            out.all_topics[rid] = record
            if record.status in ("active", "contested") or (
                    record.status == "pending-review" and world.include_pending):
                out.topics[rid] = record
            continue
        # Most facts name no valid time, and no repo or this one on no branch or this one: they hold
        # without asking the judge (a slice sees 100k). With an oracle, the judge decides by ancestry.
        if isinstance(record, Relation) and record.rel not in RELATION_TYPES:
            continue  # a hand-written type outside the seven never holds (am check says so), as a status outside five
        if record.status == "active" and record.valid_from is None and record.valid_until is None and (
                record.repo is None or (oracle is None and record.repo == here
                                        and (record.version is None or record.version == branch))):
            verdict = plain if record.repo is None else by_branch
        else:
            verdict = judge(record, world, oracle)
        if not verdict.holds:
            if not isinstance(record, Relation):
                _count(out.excluded, verdict.why or record.status)
            continue
        if isinstance(record, Relation):
            relations[rid] = record
        else:
            candidates[rid] = record
            rule_of[rid] = verdict.rule
            if record.supersedes:
                replacing.append(rid)
            if record.superseded_by:
                replaced.append(rid)
    # A pending-review fact is not yet believed, so it supersedes nothing.
    believed = ("active", "contested")
    hidden: dict[str, str] = {}
    for fid in sorted(replacing):
        if candidates[fid].status in believed:
            for old in candidates[fid].supersedes:
                if old in candidates and old != fid:
                    hidden.setdefault(old, fid)
    for fid in sorted(replaced):
        successor = candidates[fid].superseded_by
        if successor and successor in candidates and candidates[successor].status in believed and successor != fid:
            hidden.setdefault(fid, successor)
    facts = out.facts
    for fid in sorted(candidates):
        if fid in hidden:
            out.superseded_here[fid] = hidden[fid]
            _count(out.excluded, WHY_SUPERSEDED)
            continue
        facts[fid] = candidates[fid]
    for rule, count in Counter(rule_of[fid] for fid in facts).items():
        out.rules[rule] = count
    for rid in sorted(relations):
        rel = relations[rid]
        if rel.from_ in hidden or rel.to in hidden:
            continue
        out.relations[rid] = rel
    return out
