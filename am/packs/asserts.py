"""`am assert`: checks of what memory says in a world, for CI (DESIGN §14).

A check names a world (repo and branch) and what must be true there:
``no_contested`` (no contested fact holds), ``max_stale_days`` (no fact stale there for
more than N days: since the commit that made it stale), ``holds`` (these facts hold
there), ``no_orphan_paths`` (every holding fact's watched paths name files that exist
at the world's commit). Checks come from flags, or from ``.am/checks.yml``::

    checks:
      - repo: project-alpha
        branch: main
        no_contested: true
        max_stale_days: 30
        holds: [fact-alpha-getuser-main]
        no_orphan_paths: true

Each failure names the fact, the world and why; the command exits 1 when any fails.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from am.errors import InvalidRecordError
from am.packs.pack import SliceRequest

__all__ = ["Check", "Failure", "load_checks", "run_check", "CHECKS_FILE"]

CHECKS_FILE = ".am/checks.yml"
_KEYS = {"repo", "branch", "no_contested", "max_stale_days", "holds", "no_orphan_paths"}


@dataclass(frozen=True)
class Check:
    """One world and what must be true in it."""

    repo: str
    branch: str | None = None
    no_contested: bool = False
    max_stale_days: int | None = None
    holds: tuple[str, ...] = ()
    no_orphan_paths: bool = False

    @property
    def label(self) -> str:
        return self.repo + (f"@{self.branch}" if self.branch else "")

    def asks(self) -> bool:
        return self.no_contested or self.max_stale_days is not None or bool(self.holds) or self.no_orphan_paths


@dataclass(frozen=True)
class Failure:
    """One thing that is not as a check asks: which rule, in which world, which fact, and why."""

    rule: str
    world: str
    fact: str
    text: str
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "world": self.world, "fact": self.fact, "text": self.text, "why": self.why}


@dataclass
class Outcome:
    """What a check found: its failures, and how many facts it judged."""

    check: Check
    failures: list[Failure] = field(default_factory=list)
    judged: int = 0


def _bad(field_name: str, problem: str, fix: str) -> InvalidRecordError:
    return InvalidRecordError(f"{CHECKS_FILE}: {problem}", field=field_name, hint=fix)


def load_checks(root: Path) -> list[Check]:
    """Read ``.am/checks.yml`` (strict YAML); every mistake names the entry, the field and the fix."""
    from am.records.frontmatter import strict_load

    path = root / CHECKS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    data = strict_load(text, path=CHECKS_FILE) if text.strip() else {}
    entries = data.get("checks")
    if not isinstance(entries, list):
        raise _bad("checks", "has no list under 'checks:'", "write checks: followed by '- repo: NAME' entries")
    out = []
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise _bad(f"checks[{n}]", f"entry {n} is not a mapping", "write '- repo: NAME' and its rules")
        unknown = set(entry) - _KEYS
        if unknown:
            raise _bad(f"checks[{n}].{sorted(unknown)[0]}", f"entry {n} has unknown key {sorted(unknown)[0]!r}",
                       f"use: {', '.join(sorted(_KEYS))}")
        repo, branch = entry.get("repo"), entry.get("branch")
        if not isinstance(repo, str) or not repo:
            raise _bad(f"checks[{n}].repo", f"entry {n} names no repo", "add repo: NAME (am repo list)")
        if branch is not None and not isinstance(branch, str):
            raise _bad(f"checks[{n}].branch", f"entry {n}'s branch is not a name", "write branch: main")
        days = entry.get("max_stale_days")
        if days is not None and (not isinstance(days, int) or isinstance(days, bool) or days < 0):
            raise _bad(f"checks[{n}].max_stale_days", f"entry {n}'s max_stale_days is not a number of days",
                       "write max_stale_days: 30")
        holds = entry.get("holds", [])
        if isinstance(holds, str):
            holds = [holds]
        if not isinstance(holds, list) or not all(isinstance(h, str) for h in holds):
            raise _bad(f"checks[{n}].holds", f"entry {n}'s holds is not a list of fact ids", "write holds: [ID, ID]")
        for flag in ("no_contested", "no_orphan_paths"):
            if not isinstance(entry.get(flag, False), bool):
                raise _bad(f"checks[{n}].{flag}", f"entry {n}'s {flag} is not true or false", f"write {flag}: true")
        out.append(Check(repo, branch, bool(entry.get("no_contested", False)), days, tuple(holds),
                         bool(entry.get("no_orphan_paths", False))))
    return out


def _first_line(fact: Any) -> str:
    return str(getattr(fact, "body", "")).strip().split("\n", 1)[0]


def run_check(vault: Any, check: Check, now: datetime) -> Outcome:
    """Judge one check's world as am slice does, and return what fails."""
    from am.packs.worlddiff import state_of

    state = state_of(vault, SliceRequest(repo=check.repo, branch=check.branch))
    outcome = Outcome(check, judged=len(state.facts))
    where = state.label
    if check.no_contested:
        for fid in sorted(state.contested):
            outcome.failures.append(Failure("no-contested", where, fid, _first_line(state.facts[fid]),
                                            "contested here (settle it: am review --kind contested)"))
    for fid in check.holds:
        if fid not in state.facts:
            why = state.superseded.get(fid)
            outcome.failures.append(Failure(
                "holds", where, fid, "",
                f"superseded here by {why}" if why else f"does not hold here (am why {fid} --repo {check.repo}"
                + (f" --branch {check.branch})" if check.branch else ")")))
    if check.max_stale_days is not None or check.no_orphan_paths:
        store = _clone(check.repo)
        if check.max_stale_days is not None:
            for fid, mark in sorted(state.marks.items()):
                changed = datetime.fromtimestamp(store.commit_info(mark.commit).time, now.tzinfo)
                days = (now - changed).days
                if days > check.max_stale_days:
                    outcome.failures.append(Failure(
                        "max-stale-days", where, fid, _first_line(state.facts[fid]),
                        f"stale for {days} days ({mark.path} changed in {mark.commit[:10]}); "
                        f"re-check it: am fact confirm {fid} --here, or supersede it"))
        if check.no_orphan_paths:
            from am.worlds.codetree import CodeTree

            tree = CodeTree(store, str(state.world["commit"]))
            for fid, fact in sorted(state.facts.items()):
                gone = [p for p in getattr(fact, "paths", ()) if not tree.holds(p)]
                if gone:
                    outcome.failures.append(Failure(
                        "no-orphan-paths", where, fid, _first_line(fact),
                        f"watches {', '.join(gone)}, which {'is' if len(gone) == 1 else 'are'} not in "
                        f"{str(state.world['commit'])[:10]} (renamed or deleted: supersede it with the new path)"))
    return outcome


def _clone(repo: str) -> Any:
    from am.errors import UnknownWorldError
    from am.worlds.ancestry import open_clone

    store, why = open_clone(repo)
    if store is None:
        raise UnknownWorldError(f"this check reads the code of {repo}: {why}", hint=f"am repo add {repo} PATH")
    return store
