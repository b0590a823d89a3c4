"""Write-time checks of a world (DESIGN §5.7): the repo, branch and commit a write names must exist.

With a registered clone, ``--branch B`` must name a branch (or tag) of it and
``--commit`` must resolve there; the commit is stored in full, and a branch
given without a commit records the branch's tip, so the fact follows B's
merges by ancestry. An unknown name is an ``UnknownWorldError`` that lists
what exists and suggests the closest name, unless the writer says
``unverified`` (a branch not fetched here, a repo cloned elsewhere).

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from am.errors import UnknownWorldError
from am.registry import Registry
from am.worlds.branches import branch_names, branch_tip, check_on_branch, closest_hint, known_list

if TYPE_CHECKING:
    from am.git import GitStore

__all__ = ["CheckedWorld", "branches_with", "check_confirm", "clone_head", "home_branch", "keeps_branch", "main_line", "verify_world"]


@dataclass(frozen=True)
class CheckedWorld:
    """The world a write records: repo, branch, and the full commit (the branch's tip when none was given)."""

    repo: str | None
    branch: str | None
    commit: str | None
    verified: bool


def _on_branch(store: GitStore, tip: str, commit: str) -> bool:
    """Whether ``commit`` is on a branch whose tip is ``tip`` (the tip or an ancestor of it)."""
    return commit == tip or store.is_ancestor(commit, tip)


def main_line(store: GitStore) -> str | None:
    """Return the clone's main line: what origin/HEAD names, else the first of main, master, trunk it has."""
    target = store.symbolic_target("refs/remotes/origin/HEAD")
    if target is not None and target.startswith("refs/remotes/origin/") and store.find_commit(target) is not None:
        return target[len("refs/remotes/origin/"):]
    return next((name for name in ("main", "master", "trunk") if branch_tip(store, name) is not None), None)


def home_branch(store: GitStore, branch: str | None, observed: str | None) -> str | None:
    """Return the branch a fact must stay on when it is observed again, or None (DESIGN §5.6).

    Its own branch while the clone has it. Once that branch is gone (merged and
    deleted, or renamed: main -> trunk) or the fact names none, the fact still
    holds by its commit on the main line, where that line holds the commit (in
    its history, or landed by a squash): the main line, then. Else none.
    """
    if branch is not None and branch_tip(store, branch) is not None:
        return branch
    main = main_line(store)
    if main is None or observed is None:
        return None
    from am.worlds.ancestry import CommitGraph

    tip = branch_tip(store, main)
    held = CommitGraph(store, tip).contains(observed) if tip is not None else False
    return main if held is not False else None  # a commit the clone lacks (shallow): keep it on the main line


def keeps_branch(store: GitStore, branch: str | None, observed: str | None, commit: str) -> bool:
    """Whether a fact of ``branch`` observed at ``observed``, re-observed at ``commit``, keeps its worlds (DESIGN §5.6).

    The one rule of a confirm: the commit is on the fact's home branch
    (home_branch: its own, or the main line once its own is gone), or the fact
    has none (nothing left to take it out of). A branch merged into another
    still takes the fact out while it is there: the commit graph cannot tell a
    feature merged into main from main merged into the feature to keep it
    current, so a merged branch is deleted first (git branch -d refuses an
    unmerged one).
    """
    home = home_branch(store, branch, observed)
    if home is None:
        return True
    tip = branch_tip(store, home)
    return tip is None or _on_branch(store, tip, commit)


def branches_with(store: GitStore, commit: str) -> list[str]:
    """Return the local branches (else origin's) whose history holds ``commit``, as `git branch --contains` does."""
    for prefix in ("refs/heads/", "refs/remotes/origin/"):
        names = [ref[len(prefix):] for ref in store.ref_names() if ref.startswith(prefix) and ref != prefix + "HEAD"]
        found = [n for n in names if _on_branch(store, store.find_commit(prefix + n) or "", commit)]
        if found:
            return found
    return []


def check_confirm(store: GitStore, fact_id: str, branch: str | None, observed: str | None, commit: str) -> None:
    """Refuse to confirm a fact at a commit that would take it off its home branch (UnknownWorldError)."""
    if keeps_branch(store, branch, observed, commit):
        return
    home = home_branch(store, branch, observed) or "?"
    others = [b for b in branches_with(store, commit) if b != home]
    other = others[0] if len(others) == 1 else "OTHER"
    on = f" (on {known_list(others)})" if others else ""
    whose = (f"a fact of branch {home!r}" if home == branch else
             f"a fact that holds on {home!r} ({'its branch ' + repr(branch) + ' is not in the clone' if branch else 'it names no branch'})")
    raise UnknownWorldError(
        f"{fact_id} is {whose}, and commit {commit[:10]}{on} is not on it: confirming there "
        f"would take the fact off {home}",
        hint=f"confirm it at a commit of {home} (am fact confirm {fact_id} --commit {home}); "
             + (f"if {home} is merged, delete it first (git branch -d {home}); " if home == branch else "")
             + f"or, if it no longer holds on {other}: "
             f"am fact supersede {fact_id} \"what holds there\" --branch {other} --reason \"...\"")


def clone_head(repo: str, registry: Registry | None = None) -> str | None:
    """Return the commit the registered clone of ``repo`` has checked out (its HEAD), or None."""
    from am.worlds.ancestry import open_clone

    store, _ = open_clone(repo, registry)
    return None if store is None else store.head()


def verify_world(repo: str | None, branch: str | None, commit: str | None, *, unverified: bool = False,
                 registry: Registry | None = None) -> CheckedWorld:
    """Check a write's world against the registered clone; return what to record."""
    if repo is None:
        if (branch or commit) and not unverified:
            raise UnknownWorldError(
                f"--{'branch' if branch else 'commit'} needs --repo: a branch or commit means something only in a "
                "code repository", hint="pass --repo NAME (see: am repo list), or --unverified to record it as given")
        return CheckedWorld(None, branch, commit, False)
    if unverified:
        return CheckedWorld(repo, branch, commit, False)
    from am.worlds.ancestry import open_clone

    registry = registry or Registry.load()
    if repo not in registry.repos:
        names = sorted(registry.repos)
        raise UnknownWorldError(
            f"repo {repo!r} is not registered on this machine (registered: {known_list(names)})",
            hint=closest_hint(repo, names, f"register its clone (am repo add {repo} PATH), or pass --unverified"))
    store, why = open_clone(repo, registry)
    if store is None:
        raise UnknownWorldError(f"repo {repo!r}: {why}", hint="or record it as given: pass --unverified")
    tip: str | None = None
    if branch is not None:
        tip = branch_tip(store, branch)
        if tip is None:
            names = branch_names(store)
            raise UnknownWorldError(
                f"branch {branch!r} is not in the clone of {repo} at {store.root} (branches: {known_list(names)})",
                hint=closest_hint(branch, names, "fetch it, check the name, or pass --unverified"))
    if commit is not None:
        full = store.find_commit(commit)
        if full is None:
            raise UnknownWorldError(
                f"commit {commit!r} is not in the clone of {repo} at {store.root}",
                hint="give a commit id the clone has (git log --oneline), fetch it, or pass --unverified")
        if tip is not None and branch is not None:
            # The fact would name a branch it does not hold on: it holds only where its commit is.
            check_on_branch(store, repo, branch, tip, full, fix=", or --unverified")
        return CheckedWorld(repo, branch, full, True)
    if tip is None and branch is None:
        return CheckedWorld(repo, None, None, True)
    return CheckedWorld(repo, branch, tip, True)

