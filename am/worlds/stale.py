"""Staleness per world, derived from the code graph (DESIGN §5.6).

A fact with ``paths`` observed at commit C is *stale in a world* when a commit
in that world's history and not in C's history changed one of its paths. It is
never written into the fact: the same fact can be stale on a branch that
rewrote ``src/api/users.py`` and fresh on main, where nothing touched it.

"Changed" means the commit's own change: against its parent, or for a merge
against every parent (a merge that only brings a branch's work in changes
nothing itself; the branch's commits are in the history and count on their
own). A root commit changes every file it has.

Cost. The world's history is taken in topological order once, with each
commit's parents and the paths it changed (both immutable, so kept on disk per
clone in ``touched.jsonl`` and extended as the clone grows). One pass then
carries, per commit, a bit set of the commits that touched a watched path and
are its ancestors; a fact at C is stale iff some commit touching its path is in
the world and not in C's set. The answer for every (commit, watched path) pair
asked is kept per world tip (``stale/<tip>.json``), so a warm slice reads one
small file and imports no pygit2. The code-repository hook computes it for the
new tip right after a commit (``am hooks install --code-repo``).

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from am.git import GitStore

__all__ = ["StaleMark", "Staleness", "WatchedFact", "path_matches", "stale_facts"]

log = logging.getLogger("am")

_GLOB = set("*?[")
_TOUCHED = "touched.jsonl"
_STALE_DIR = "stale"
_TIPS_KEPT = 16
_LOADED: dict[Path, tuple[int, dict[str, list[str] | None]]] = {}


class StaleMark(NamedTuple):
    """Why a fact is stale in a world: the watched path, the file that changed, and the commit that changed it."""

    watched: str
    path: str
    commit: str

    def describe(self) -> str:
        """Return 'code changed since: PATH @ COMMIT' in short form."""
        return f"code changed since: {self.path} @ {self.commit[:10]}"

    def to_json(self) -> dict[str, str]:
        """Return the stable JSON shape."""
        return {"watched": self.watched, "path": self.path, "commit": self.commit}


class WatchedFact(NamedTuple):
    """What staleness needs of a fact: its id, the commit it was observed at, and the paths it watches."""

    id: str
    commit: str
    paths: tuple[str, ...]


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


class _Matcher:
    """Which watched paths a commit's changed files fall under: plain paths by a lookup per folder, globs by fnmatch."""

    def __init__(self, watched: Iterable[str]) -> None:
        self.plain: dict[str, list[str]] = {}
        self.globs: list[str] = []
        for w in watched:
            norm = _norm(w)
            if not norm:
                continue
            if _GLOB & set(norm):
                self.globs.append(w)
            else:
                self.plain.setdefault(norm.rstrip("/"), []).append(w)

    def watching(self, changed: Iterable[str]) -> set[str]:
        """Return the watched paths (as given) that any of the changed files falls under."""
        found: set[str] = set()
        plain = self.plain
        for path in changed:
            c = _norm(path)
            while c:
                hit = plain.get(c)
                if hit:
                    found.update(hit)
                c = c.rpartition("/")[0]
            for g in self.globs:
                if g not in found and path_matches(g, path):
                    found.add(g)
        return found


class _Touched:
    """Each commit's parents and the paths it changed itself, kept on disk per clone (append-only)."""

    def __init__(self, folder: Path | None, store: GitStore) -> None:
        self.folder = folder
        self.store = store
        self.known: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        if folder is not None:
            try:
                with open(folder / _TOUCHED, encoding="utf-8") as handle:
                    for line in handle:
                        try:
                            cid, parents, paths = json.loads(line)
                        except ValueError:
                            continue  # a torn last line: that commit is read again
                        self.known[str(cid)] = (tuple(parents), tuple(paths))
            except OSError:
                pass

    def history(self, tip: str) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """Return (commit, parents, changed paths) for ``tip``'s history, parents before children."""
        order = self._topo_from_known(tip)
        if order is None:
            fresh: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []
            order = []
            for cid, parents in self.store.topo_history(tip):
                found = self.known.get(cid)
                if found is None:
                    found = (parents, tuple(self.store.touched_paths(cid)))
                    self.known[cid] = found
                    fresh.append((cid, *found))
                order.append(cid)
            self._append(fresh)
        return [(c, *self.known[c]) for c in order]

    def _topo_from_known(self, tip: str) -> list[str] | None:
        """Order ``tip``'s history from the file alone (no pygit2), or None when a commit is missing."""
        if tip not in self.known:
            return None
        order: list[str] = []
        state: dict[str, int] = {}
        stack: list[tuple[str, int]] = [(tip, 0)]
        while stack:
            cid, i = stack.pop()
            entry = self.known.get(cid)
            if entry is None:
                return None
            parents = entry[0]
            if i == 0:
                if state.get(cid):
                    continue
                state[cid] = 1
            if i < len(parents):
                stack.append((cid, i + 1))
                parent = parents[i]
                if not state.get(parent):
                    stack.append((parent, 0))
                continue
            state[cid] = 2
            order.append(cid)
        return order

    def _append(self, rows: list[tuple[str, tuple[str, ...], tuple[str, ...]]]) -> None:
        if not rows or self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            text = "".join(json.dumps([c, list(p), list(t)], separators=(",", ":")) + "\n" for c, p, t in rows)
            with open(self.folder / _TOUCHED, "a", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as err:  # a cache that cannot be written only costs time
            log.warning("could not cache the changed paths of the code repository: %s", err)


class Staleness:
    """Which (commit, watched path) pairs are stale in one world: read from the cache, else computed."""

    def __init__(self, store: GitStore, tip: str, history: frozenset[str], *, folder: Path | None) -> None:
        self.store = store
        self.tip = tip
        self.history = history
        self.folder = folder

    def _file(self) -> Path | None:
        return None if self.folder is None else self.folder / _STALE_DIR / f"{self.tip}.json"

    def _load(self) -> dict[str, list[str] | None]:
        path = self._file()
        if path is None:
            return {}
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            return {}
        kept = _LOADED.get(path)
        if kept is not None and kept[0] == stamp:
            return kept[1]  # a long-lived process (an MCP server) reads each tip's file once; callers never change it
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        pairs = data.get("pairs") if isinstance(data, dict) else None
        if not isinstance(pairs, dict):
            return {}
        if len(_LOADED) >= _TIPS_KEPT:
            _LOADED.pop(next(iter(_LOADED)))
        _LOADED[path] = (stamp, pairs)
        return pairs

    def _save(self, pairs: Mapping[str, list[str] | None]) -> None:
        path = self._file()
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"tip": self.tip, "pairs": dict(sorted(pairs.items()))}), encoding="utf-8")
            os.replace(tmp, path)
            files = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in files[_TIPS_KEPT:]:
                old.unlink(missing_ok=True)
        except OSError as err:
            log.warning("could not cache staleness for %s: %s", self.tip[:12], err)

    def known(self) -> Mapping[str, list[str] | None]:
        """Return the answers kept for this tip ('COMMIT PATH' -> [changed path, commit] or None); may be empty."""
        return self._load()

    def answers(self, pairs: Iterable[tuple[str, str]]) -> Mapping[str, list[str] | None]:
        """Return the answers ('COMMIT PATH' -> [changed path, commit] or None) covering every pair asked."""
        known = self._load()
        wanted = [p for p in pairs if p[0] in self.history]
        if any(_key(p) not in known for p in wanted):
            everything = {*wanted, *(_unkey(k) for k in known)}
            known = {**known, **self._compute(everything)}
            self._save(known)
        return known

    def marks(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], StaleMark | None]:
        """Return, for each (full commit id, watched path) in this history, what makes it stale here, or None."""
        wanted = [p for p in pairs if p[0] in self.history]
        known = self.answers(wanted)
        out: dict[tuple[str, str], StaleMark | None] = {}
        for pair in wanted:
            found = known.get(_key(pair))
            out[pair] = None if not found else StaleMark(pair[1], found[0], found[1])
        return out

    def _compute(self, pairs: set[tuple[str, str]]) -> dict[str, list[str] | None]:
        """Compute every pair from the world's history in one pass (see the module's docstring)."""
        pairs = {p for p in pairs if p[0] in self.history}
        watched = sorted({w for _, w in pairs})
        touched = _Touched(self.folder, self.store)
        order = touched.history(self.tip)
        # The commits that touched a watched path, by bit (older commits lower), and per watched path the mask.
        bit_of: dict[str, int] = {}
        path_mask: dict[str, int] = {w: 0 for w in watched}
        change: dict[int, tuple[str, tuple[str, ...]]] = {}
        matcher = _Matcher(watched)
        for cid, _, paths in order:
            hits = matcher.watching(paths)
            if not hits:
                continue
            bit = bit_of[cid] = len(bit_of)
            change[bit] = (cid, paths)
            for w in hits:
                path_mask[w] |= 1 << bit
        # Each commit's set of touching ancestors (itself included), freed once its last child has read it.
        children: dict[str, int] = {}
        for _, parents, _ in order:
            for p in parents:
                children[p] = children.get(p, 0) + 1
        needed = {c for c, _ in pairs}
        ancestors_of: dict[str, int] = {}
        kept: dict[str, int] = {}
        for cid, parents, _ in order:
            mask = 1 << bit_of[cid] if cid in bit_of else 0
            for p in parents:
                mask |= ancestors_of.get(p, 0)
                left = children.get(p, 0) - 1
                children[p] = left
                if left <= 0:
                    ancestors_of.pop(p, None)
            ancestors_of[cid] = mask
            if cid in needed:
                kept[cid] = mask
        out: dict[str, list[str] | None] = {}
        for commit, w in pairs:
            outside = path_mask.get(w, 0) & ~kept.get(commit, 0)
            if not outside:
                out[_key((commit, w))] = None
                continue
            cid, paths = change[outside.bit_length() - 1]  # the newest such commit
            path = next(p for p in sorted(paths) if path_matches(w, p))
            out[_key((commit, w))] = [path, cid]
        return out


def _key(pair: tuple[str, str]) -> str:
    return f"{pair[0]} {pair[1]}"


def _unkey(key: str) -> tuple[str, str]:
    commit, _, path = key.partition(" ")
    return commit, path


def stale_facts(staleness: Staleness | None, facts: Iterable[WatchedFact],
                resolve: Any = None) -> dict[str, StaleMark]:
    """Return the facts that are stale in the world, each with its first stale path (sorted) as evidence.

    ``resolve(commit) -> full id | None`` turns a fact's (possibly short) commit into the full id.
    """
    if staleness is None:
        return {}
    history = staleness.history
    chosen: list[tuple[str, str, tuple[str, ...]]] = []
    for fid, given, paths in facts:
        commit: str | None = given
        if given not in history:
            commit = resolve(given) if resolve is not None else None
        if commit and paths:
            chosen.append((fid, commit, paths if len(paths) == 1 else tuple(sorted(set(paths)))))
    known = staleness.known()
    if any(f"{c} {w}" not in known for _, c, ws in chosen for w in ws):
        known = staleness.answers((c, w) for _, c, ws in chosen for w in ws)
    out: dict[str, StaleMark] = {}
    for fid, commit, watched in chosen:
        for w in watched:
            found = known.get(f"{commit} {w}")
            if found:
                out[fid] = StaleMark(w, found[0], found[1])
                break
    return dict(sorted(out.items()))
