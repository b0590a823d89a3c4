"""The code diff a reviewer reads: what changed in watched paths between a fact's commit and a world's.

Used by `am review` (am/upkeep/review.py) to show a stale fact's evidence. The
diff is Git's unified patch of the files that match the fact's watched paths
(a path, a folder, or a glob, as am/worlds/stale.py matches them), cut to a
number of lines with a note of what was left out.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import pygit2

if TYPE_CHECKING:
    from am.git.store import GitStore

__all__ = ["code_diff"]


def code_diff(store: GitStore, old: str, new: str, watched: Sequence[str], *,
              matches: Callable[[str, str], bool], max_lines: int = 200) -> list[str]:
    """Return the unified diff lines of files matching ``watched`` from commit ``old`` to ``new``."""
    repo = store.repo
    try:
        old_tree = repo.revparse_single(old).peel(pygit2.Tree)
        new_tree = repo.revparse_single(new).peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError):
        return [f"(commit {old[:10]} or {new[:10]} is not in the clone: fetch it to see the diff)"]
    diff = cast(pygit2.Diff, repo.diff(old_tree, new_tree))  # type: ignore[call-overload]
    out: list[str] = []
    left = 0
    for patch in diff:
        if patch is None:
            continue
        delta = patch.delta
        paths = {delta.old_file.path, delta.new_file.path}
        if not any(matches(w, p) for w in watched for p in paths):
            continue
        text = patch.text or ""
        for line in text.splitlines():
            if len(out) < max_lines:
                out.append(line)
            else:
                left += 1
    if left:
        out.append(f"... {left} more diff lines")
    return out
