"""A merge not yet made, as Git would make it: the commit `am diff --merge-preview` judges a world at.

The merge is computed by libgit2 (the same three-way merge ``git merge`` and ``git
merge-tree --write-tree`` make) and written as objects only: a tree and a commit that no
ref names, so the user's branches, index and work tree do not change, and ``git gc`` drops
them in time. A fast-forward is the other tip itself, an already merged branch the target
itself, as ``git merge`` would leave them. Its author and time are fixed from the two tips,
so asking again makes the same commit.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from am.git import GitStore

__all__ = ["merge_commit"]


def merge_commit(store: GitStore, ours: str, theirs: str, message: str) -> tuple[str, tuple[str, ...]]:
    """Return the commit merging ``theirs`` into ``ours`` (made if needed) and the paths Git could not merge."""
    from am.git.codeview import merge_commit as made

    return made(store, ours, theirs, message)
