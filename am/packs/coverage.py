"""`am coverage`: which of a clone's files memory watches in a world, which it does not, and what it lost.

For a registered clone at the world's commit: every file, the files covered by a watched
path of a fact that holds there (a file, a folder or a glob, as staleness reads them), the
counts per folder, and the facts whose watched paths name nothing at that commit. Read from
the commit's tree, not the work tree.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from am.packs.pack import SliceRequest

__all__ = ["Coverage", "coverage_of"]


@dataclass(frozen=True)
class Coverage:
    """A world's files, those watched, per folder, and the facts watching paths that are gone."""

    world: dict[str, Any]
    label: str
    files: int
    covered: frozenset[str]
    folders: tuple[tuple[str, int, int], ...]  # (folder, files under it, of them covered)
    orphans: tuple[tuple[str, tuple[str, ...]], ...]  # (fact id, its paths that name nothing)
    facts_watching: int

    def to_json(self) -> dict[str, Any]:
        return {"world": self.world, "files": self.files, "covered": len(self.covered),
                "facts_watching": self.facts_watching,
                "folders": [{"folder": f, "files": n, "covered": c} for f, n, c in self.folders],
                "covered_files": sorted(self.covered),
                "orphans": [{"fact": fid, "paths": list(paths)} for fid, paths in self.orphans]}


def _folder(path: str, depth: int) -> str:
    parts = path.split("/")[:-1]
    return "/".join(parts[:depth]) + "/" if parts else "."


def coverage_of(vault: Any, repo: str, branch: str | None, commit: str | None, *, depth: int = 1) -> Coverage:
    """Return the coverage of a world: its files at its commit against the watched paths of the facts holding."""
    from am.errors import UnknownWorldError
    from am.packs.worlddiff import state_of
    from am.worlds.ancestry import open_clone
    from am.worlds.codetree import CodeTree

    state = state_of(vault, SliceRequest(repo=repo, branch=branch, commit=commit))
    store, why = open_clone(repo)
    at = state.world.get("commit")
    if store is None or not at:
        raise UnknownWorldError(f"am coverage reads the code of {repo}: {why or 'no commit in the world'}",
                                hint=f"am repo add {repo} PATH")
    tree = CodeTree(store, str(at))
    watching = {fid: tuple(getattr(f, "paths", ())) for fid, f in state.facts.items() if getattr(f, "paths", ())}
    covered = tree.watched_files({p for paths in watching.values() for p in paths})
    orphans = tuple((fid, gone) for fid, paths in sorted(watching.items())
                    if (gone := tuple(p for p in paths if not tree.holds(p))))
    counts: dict[str, list[int]] = {}
    for f in tree.files:
        slot = counts.setdefault(_folder(f, depth), [0, 0])
        slot[0] += 1
        slot[1] += f in covered
    folders = tuple((name, n, c) for name, (n, c) in sorted(counts.items()))
    return Coverage(state.world, state.label, len(tree.files), frozenset(covered), folders, orphans, len(watching))
