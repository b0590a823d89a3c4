"""The code repository's files at one commit, and which watched paths they hold.

`am assert --no-orphan-paths`, `am due` and `am coverage` ask the same question of a clone:
does a fact's watched path (a file, a folder or a glob, as staleness reads it) name
anything at the world's commit? The tree is read once per commit from the object store
(no checkout, so an unclean work tree does not change the answer).

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from am.worlds.stale import path_matches

if TYPE_CHECKING:
    from am.git import GitStore

__all__ = ["CodeTree"]


class CodeTree:
    """Every file path at a commit of a clone (blobs and links; submodules as their folder)."""

    def __init__(self, store: GitStore, commit: str) -> None:
        from am.git.codeview import tree_files

        self.files = tree_files(store, commit)
        self._set = frozenset(self.files)
        self._dirs = frozenset(p.rsplit("/", i)[0] for p in self.files for i in range(1, p.count("/") + 1))

    def holds(self, watched: str) -> bool:
        """Return whether a watched path names at least one file at this commit."""
        plain = watched.strip().strip("/")
        if not set("*?[") & set(plain):
            return plain in self._set or plain in self._dirs
        return any(path_matches(watched, f) for f in self.files)

    def watched_files(self, watched: Iterable[str]) -> set[str]:
        """Return the files at this commit that any of the watched paths covers."""
        patterns = list(watched)
        out: set[str] = set()
        plain = [p.strip().strip("/") for p in patterns if not set("*?[") & set(p)]
        globs = [p for p in patterns if set("*?[") & set(p)]
        for f in self.files:
            if any(f == p or f.startswith(p + "/") for p in plain) or any(path_matches(g, f) for g in globs):
                out.add(f)
        return out
