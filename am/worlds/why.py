"""Why a fact is or is not in a world: every rule of DESIGN §5 with its evidence (``am why``).

``explain`` walks the rules in the order ``am.worlds.rules.judge`` applies
them and says, for each, what it saw: "5796218 is not an ancestor of
main@743299d". It decides exactly as ``judge`` does (a test holds the two
equal for every fact of the demo vault in every world of its code repository);
supersession and staleness, which need the other records and the code graph,
come in as the caller found them (``resolve``'s ``superseded_here`` and
``am.worlds.stale``).

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from am.records.model import STATUSES, Fact
from am.worlds.rules import (
    RULE_ANCESTRY,
    RULE_BRANCH,
    RULE_SHALLOW,
    AncestryOracle,
    Verdict,
    World,
    judge,
    to_moment,
)
from am.worlds.stale import StaleMark

if TYPE_CHECKING:
    from am.worlds.landed import Landing

__all__ = ["Explanation", "Step", "explain"]


@dataclass(frozen=True)
class Step:
    """One rule applied to the fact: its name, whether it let the fact through (None: did not apply), the evidence."""

    rule: str
    passed: bool | None
    evidence: str

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape."""
        return {"rule": self.rule, "passed": self.passed, "evidence": self.evidence}


@dataclass(frozen=True)
class Explanation:
    """Whether a fact holds in a world, where a pack shows it, and the steps that decided it."""

    fact_id: str
    world: dict[str, Any]
    holds: bool
    section: str | None  # facts, pinned, contested, stale, pending-review; None when it does not hold
    steps: tuple[Step, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape."""
        return {"fact": self.fact_id, "world": self.world, "holds": self.holds, "section": self.section,
                "steps": [s.to_json() for s in self.steps]}

    def render(self) -> str:
        """Return the explanation as text for people."""
        w = self.world
        where = w.get("repo") or "no repo"
        if w.get("branch"):
            where += f" @ {w['branch']}"
        if w.get("commit"):
            where += f" ({str(w['commit'])[:10]})"
        heading = {"facts": None, "pinned": "Pinned", "stale": "Stale here", "contested": "Contested",
                   "pending-review": "Pending review"}.get(self.section or "")  # the pack's own headings
        verdict = ("does not hold here" if not self.holds else
                   f"holds here (shown under: {heading})" if heading else "holds here (shown under its topic)")
        lines = [f"{self.fact_id} in {where}: {verdict}"]
        for step in self.steps:
            mark = "note" if step.rule in _NOTES else {True: "pass", False: "FAIL", None: "skip"}[step.passed]
            lines.append(f"  {mark:<4}  {step.rule:<12} {step.evidence}")
        return "\n".join(lines) + "\n"


# Steps that decide nothing and say something the reader must know (passed is None).
_NOTES = frozenset({"dirty"})


def _short(commit: str | None) -> str:
    return (commit or "?")[:7]


def _at(world: World) -> str:
    return f"{world.branch or 'commit'}@{_short(world.commit)}"


def explain(fact: Fact, world: World, oracle: AncestryOracle | None, *, superseded_by: str | None = None,
            stale: StaleMark | None = None, at_label: str = "now") -> Explanation:
    """Explain, rule by rule, whether ``fact`` holds in ``world`` (the verdict is ``judge``'s)."""
    steps: list[Step] = []
    verdict: Verdict = judge(fact, world, oracle)
    status = fact.status
    failed = False

    def add(rule: str, passed: bool | None, evidence: str) -> None:
        nonlocal failed
        steps.append(Step(rule, None if failed else passed, evidence if not failed else f"(not reached) {evidence}"))
        if passed is False:
            failed = True

    # 1. status
    if status not in STATUSES:
        add("status", False, f"status {status!r} is not one of the five ({', '.join(STATUSES)}): never holds")
    elif status in ("expired", "superseded"):
        add("status", False, f"status {status}: never holds (only history views show it)")
    elif status == "pending-review" and not world.include_pending:
        add("status", False, "status pending-review: shown only with --include-pending")
    else:
        extra = " (flagged as contested)" if status == "contested" else ""
        add("status", True, f"status {status}: holds{extra}")
    # 2. repo
    if fact.repo is None:
        add("repo", True, "names no repo: holds in every world of the vault")
    elif fact.repo != world.repo:
        add("repo", False, f"repo {fact.repo}, but the world's repo is {world.repo or 'none'}")
    else:
        add("repo", True, f"repo {fact.repo} is the world's repo")
    # 3./4. ancestry, else branch name
    if fact.repo is not None and fact.repo == world.repo:
        decided = False
        if oracle is not None and fact.commit:
            seen = oracle.contains(fact.commit)
            if seen is None:
                shallow = (" (the clone is shallow, and it may be beyond its depth: git fetch --unshallow in the clone)"
                           if getattr(oracle, "shallow", False) else "")
                add("ancestry", None, f"commit {_short(fact.commit)} is not in the clone{shallow}: judged by branch name")
            else:
                decided = True
                landed = _landing(oracle, fact.commit) if seen else None
                if landed is not None:
                    add("ancestry", True, f"{_short(fact.commit)} is not an ancestor of {_at(world)}, but landed on "
                                          f"{world.branch or 'it'} as {_short(landed.commit)} ({landed.describe()})")
                elif seen:
                    add("ancestry", True, f"{_short(fact.commit)} is an ancestor of (or is) {_at(world)}")
                else:
                    add("ancestry", False, f"{_short(fact.commit)} is not an ancestor of {_at(world)}")
        elif oracle is None:
            add("ancestry", None, "no registered clone or world commit: judged by branch name")
        else:
            add("ancestry", None, "the fact names no commit: judged by branch name")
        if oracle is not None and fact.until_commit:
            if oracle.contains(fact.until_commit):
                ended = _landing(oracle, fact.until_commit)
                where = (f"landed in the history of {_at(world)} as {_short(ended.commit)} ({ended.describe()})"
                         if ended is not None else f"is in the history of {_at(world)}")
                add("until", False, f"until_commit {_short(fact.until_commit)} {where}")
            else:
                add("until", True, f"until_commit {_short(fact.until_commit)} is not in the history of {_at(world)}")
        if not decided:
            if fact.version is None:
                add("branch", True, "names no branch: holds on every branch")
            elif fact.version == world.branch:
                add("branch", True, f"branch {fact.version} is the world's branch")
            else:
                add("branch", False, f"branch {fact.version}, but the world's branch is {world.branch or 'none'}")
    if fact.dirty:  # decides nothing; said whatever the verdict
        steps.append(Step("dirty", None, f"written with uncommitted changes in the clone's work tree (dirty: true): "
                                         f"{_short(fact.commit)} may not hold what it says, and the work may have "
                                         f"been discarded; once it is committed: am fact confirm {fact.id} --commit C"))
    # 5. valid time
    if fact.valid_from is None and fact.valid_until is None:
        add("time", None, "no valid time set")
    else:
        span = f"valid {fact.valid_from or '...'}..{fact.valid_until or '...'}"
        ok = _time_ok(fact, world)
        add("time", ok, f"{span}, {'includes' if ok else 'excludes'} {at_label}")
    holds = verdict.holds
    # 6. supersession in this world
    if superseded_by is not None:
        add("supersession", False, f"superseded here by {superseded_by}, which holds here")
        holds = False
    else:
        add("supersession", True, "no fact that supersedes it holds here")
    # 7. staleness (flagged, never hidden)
    if not fact.paths:
        add("staleness", None, "watches no code paths")
    elif stale is not None:
        add("staleness", True, f"stale, flagged: {stale.path} changed @ {stale.commit[:10]} "
                               f"(after {_short(fact.commit)}, in this history)")
    elif verdict.rule == RULE_ANCESTRY and fact.commit:
        landed = _landing(oracle, fact.commit)
        since = _short(fact.commit) if landed is None else f"{_short(landed.commit)} (where it landed)"
        add("staleness", True, f"fresh: no commit after {since} in this history changed " + ", ".join(fact.paths))
    else:
        add("staleness", None, "not derived: needs the fact's commit in a registered clone's world")
    section: str | None = None
    if holds:
        section = ("contested" if status == "contested" else "pending-review" if status == "pending-review"
                   else "stale" if stale is not None else "pinned" if fact.pinned else "facts")
    rule = {RULE_ANCESTRY: "commit ancestry", RULE_BRANCH: "branch name",
            RULE_SHALLOW: "branch name (shallow clone)"}.get(verdict.rule, "repo-less")
    data = {"repo": world.repo, "branch": world.branch, "commit": world.commit, "at": at_label, "rule": rule}
    return Explanation(fact.id, data, holds, section, tuple(steps))


def _landing(oracle: AncestryOracle | None, commit: str) -> Landing | None:
    """Return how a commit outside the world's history landed in it, when the oracle can tell (CommitGraph)."""
    find = getattr(oracle, "landing", None)
    return find(commit) if find is not None else None


def _time_ok(fact: Fact, world: World) -> bool:
    at = world.at
    if at is None:
        return True
    if fact.valid_from is not None:
        start = to_moment(fact.valid_from)
        if start is not None and at < start:
            return False
    if fact.valid_until is not None:
        end = to_moment(fact.valid_until)
        if end is not None and at >= end:
            return False
    return True
