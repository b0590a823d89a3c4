"""The names a world may use in a clone, and the closest one to a mistyped name.

``branch_names`` lists the branches and tags a world may name, ``branch_tip`` resolves
one; ``did_you_mean``, ``known_list`` and ``check_repo_known`` say what exists when a name
does not. Below both ``ancestry`` (which sets up a slice's world) and ``checks`` (which
checks a write's world); imports neither.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from am.errors import UnknownWorldError

if TYPE_CHECKING:
    from am.git import GitStore

__all__ = ["branch_names", "branch_tip", "check_on_branch", "check_repo_known", "closest_hint", "did_you_mean",
           "known_list"]


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """Return the closest of ``choices`` to a mistyped ``word``, or None."""
    found = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return found[0] if found else None


def known_list(choices: Sequence[str], *, limit: int = 12) -> str:
    """Return up to ``limit`` names as a comma list ('none' when empty)."""
    names = sorted(set(choices))
    if not names:
        return "none"
    more = len(names) - limit
    return ", ".join(names[:limit]) + (f" and {more} more" if more > 0 else "")


def check_repo_known(repo: str, known: Iterable[str]) -> None:
    """Raise UnknownWorldError for a repo neither registered here nor named by the vault, suggesting the closest."""
    names = sorted(set(known))
    if repo not in names:
        raise UnknownWorldError(
            f"repo {repo!r} is neither registered here nor named by any record (known: {known_list(names)})",
            hint=closest_hint(repo, names, "check the name (am repo list)"))


def closest_hint(word: str, choices: Sequence[str], fix: str) -> str:
    guess = did_you_mean(word, choices)
    return (f"did you mean {guess!r}? " if guess else "") + fix


def branch_names(store: GitStore) -> list[str]:
    """Return the branch and tag names a world may name in a clone (local, origin's, tags)."""
    names = set()
    for ref in store.ref_names():
        for prefix in ("refs/heads/", "refs/remotes/origin/", "refs/tags/"):
            if ref.startswith(prefix):
                name = ref[len(prefix):]
                if name != "HEAD":
                    names.add(name)
    return sorted(names)


def branch_tip(store: GitStore, branch: str) -> str | None:
    """Return the commit a branch (or origin's branch, or a tag) names in a clone, or None."""
    for ref in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}", f"refs/tags/{branch}"):
        tip = store.find_commit(ref)
        if tip is not None:
            return tip
    return None


def check_on_branch(store: GitStore, repo: str, branch: str, tip: str, commit: str, *, fix: str = "") -> None:
    """Refuse a world that names ``branch`` (whose tip is ``tip``) at a ``commit`` not on it (UnknownWorldError).

    One rule for every door, write or read: ``am fact add`` would file a fact under a branch it does not hold
    on, and ``am slice`` would title a pack "@ main" while judging it at another branch's commit.
    ``fix``: what else the door offers (a write: ", or --unverified").
    """
    if commit == tip or store.is_ancestor(commit, tip):
        return
    raise UnknownWorldError(
        f"commit {commit[:10]} is not on branch {branch!r} of {repo} (its tip is {tip[:10]})",
        hint=f"pass the branch the commit is on (git branch --contains {commit[:10]}){fix}")
