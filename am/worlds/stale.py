"""Watched code paths: when a code commit touches a fact's ``paths``, the fact needs review.

``mark_stale`` diffs the code repository between two commits and sets every
``active`` or ``contested`` fact of that repo whose ``paths`` the change
touched to ``pending-review`` — all in one vault commit, by the actor
``am-watch``, whose subject and reason name the code commit. The code-repo
hooks call it after each commit or merge; ``am stale`` calls it on demand.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from am.errors import AmError, GitError, UsageError

__all__ = ["WATCH_ACTOR", "StaleResult", "code_root_of", "last_seen", "mark_stale", "path_matches", "watching_facts"]

WATCH_ACTOR = "am-watch"
_GLOB = set("*?[")


@dataclass(frozen=True)
class StaleResult:
    """What one staleness check saw and did."""

    repo: str
    since: str | None
    until: str | None
    changed: tuple[str, ...]
    marked: tuple[str, ...]
    skipped: tuple[str, ...]
    commit: str | None

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the result."""
        return {
            "repo": self.repo, "since": self.since, "until": self.until, "changed_paths": list(self.changed),
            "marked": list(self.marked), "skipped": list(self.skipped), "vault_commit": self.commit,
        }


def _norm(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def path_matches(watched: str, changed: str) -> bool:
    """Return whether a changed file falls under a watched path (a file, a folder, or a glob)."""
    w, c = _norm(watched), _norm(changed)
    if not w:
        return False
    if _GLOB & set(w):
        return fnmatch.fnmatchcase(c, w) or fnmatch.fnmatchcase(c, w.rstrip("/") + "/*")
    w = w.rstrip("/")
    return c == w or c.startswith(w + "/")


def watching_facts(vault: Any, repo: str, changed: Sequence[str]) -> list[Any]:
    """Return the facts of ``repo`` that hold now (active or contested) and watch a changed path."""
    out = []
    for fact in vault.list_facts(repo=repo):
        if fact.status not in ("active", "contested") or not fact.paths:
            continue
        if any(path_matches(w, c) for w in fact.paths for c in changed):
            out.append(fact)
    return out


def _state_file(vault: Any, repo: str) -> Path:
    return Path(vault.store.gitdir) / "am" / "watch" / f"{repo}.last"


def last_seen(vault: Any, repo: str) -> str | None:
    """Return the code commit the last staleness check of ``repo`` reached, if remembered."""
    try:
        return _state_file(vault, repo).read_text(encoding="ascii").strip() or None
    except OSError:
        return None


def _remember(vault: Any, repo: str, commit: str) -> None:
    target = _state_file(vault, repo)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    tmp.write_text(commit + "\n", encoding="ascii")
    os.replace(tmp, target)


def mark_stale(vault: Any, *, code_root: Path, repo: str, since: str | None = None, until: str | None = None,
               remember: bool = False, dry_run: bool = False) -> StaleResult:
    """Mark the facts watching paths changed in ``code_root`` between ``since`` and ``until`` (HEAD)."""
    from am.git import GitStore
    from am.records.ids import check_id
    from am.records.model import Fact, replace
    from am.records.writes import one_line

    check_id(repo, field="repo")
    code = GitStore.open(code_root)
    tip = code.resolve(until or "HEAD")
    base: str | None
    if since is not None:
        base = code.resolve(since)
    else:
        remembered = last_seen(vault, repo)
        base = remembered if remembered and _exists(code, remembered) else None
        if base is None:
            parents = code.commit_info(tip).parents
            base = parents[0] if parents else None
    changed = tuple(sorted({p for p, _ in code.diff_paths(base, tip)})) if base != tip else ()
    facts = watching_facts(vault, repo, changed)
    marked: list[str] = []
    skipped: list[str] = []
    commit: str | None = None
    if facts and not dry_run:
        items = []
        reason = one_line(f"code commit {tip} in {repo} changed " + ", ".join(changed[:5])
                          + (f" and {len(changed) - 5} more" if len(changed) > 5 else ""))
        for fact in facts:
            try:
                path, current, blob = vault._existing_for_update(fact.id, Fact, "fact")
            except AmError as err:
                skipped.append(f"{fact.id}: {err}")
                continue
            items.append((path, replace(current, status="pending-review", reason=reason), blob))
            marked.append(fact.id)
        if items:
            result = vault._write(
                items, noun="fact", verb="stale", ids=marked, reason=reason,
                subject=one_line(f"fact: pending-review {len(marked)} after {repo}@{tip[:12]}", limit=120),
            )
            commit = result.commit
    elif facts:
        marked = [f.id for f in facts]
    if remember and not dry_run:
        _remember(vault, repo, tip)
    return StaleResult(repo, base, tip, changed, tuple(marked), tuple(skipped), commit)


def _exists(store: Any, commit: str) -> bool:
    try:
        store.resolve(commit)
        return True
    except GitError:
        return False


def code_root_of(repo: str, path: str | None = None) -> Path:
    """Return the local clone of a code repository: the given path, else the registry's."""
    from am.registry import Registry

    if path:
        return Path(path).expanduser().resolve()
    registry = Registry.load()
    if repo not in registry.repos:
        known = ", ".join(sorted(registry.repos)) or "none yet"
        raise UsageError(f"no code repository named {repo!r} is registered (known: {known})",
                         hint=f"pass --code-repo PATH, or register it: am hooks install --code-repo PATH --repo {repo}")
    return Path(registry.repos[repo])
