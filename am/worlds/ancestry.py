"""The world of a slice: which code repository, branch and commit, and which rule decides.

``setup_world`` turns ``--repo/--branch/--commit`` into a ``World`` and an
ancestry oracle read from the registered local clone (through GitStore, the
only pygit2 user). When there is no clone, or the branch or commit is not in
it, it falls back to the branch-name rule and says why in ``notes``.

The world's history is walked once and kept in memory per (clone, commit),
and on disk in the vault's cache (``HistoryFiles``), so judging N facts costs
one walk (or a short walk from a cached older tip) plus N set lookups.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

import bisect
import json
import logging
import os
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from am.clock import now
from am.errors import AmError, UnknownWorldError
from am.registry import Registry
from am.worlds.rules import RULE_ANCESTRY, RULE_BRANCH, RULE_NONE, World

if TYPE_CHECKING:
    from am.cache.index import VaultFiles
    from am.git import GitStore
    from am.records.model import Record
    from am.worlds.landed import Landing, Landings
    from am.worlds.stale import Staleness

__all__ = ["CommitGraph", "HistoryFiles", "WorldSetup", "setup_world", "open_clone", "is_shallow", "refs_stamp", "now", "records_at"]

log = logging.getLogger("am")

_HISTORY_CACHE: dict[tuple[str, str], frozenset[str]] = {}
_CACHE_LIMIT = 8
_FILES_PER_CLONE = 8
_SUFFIX = ".hist"
_RESOLVED = "resolved.json"
_RESOLVED_LIMIT = 20000
_HEX = re.compile(r"[0-9a-fA-F]{4,40}")


class HistoryFiles:
    """Histories of commits kept on disk (in the vault's disposable cache), one file per commit.

    A commit's ancestors never change, so a file named by the commit is valid
    for ever. When a branch moves on, the new history is the cached history of
    an older tip plus a short walk from the new tip down to it.
    """

    def __init__(self, folder: Path, store: GitStore) -> None:
        import hashlib  # OpenSSL's start-up only when a registered clone's history is cached

        self.store = store
        # A shallow clone's histories stop at its shallow commits: deepened, it is another clone.
        self.folder = folder / hashlib.sha1(_clone_key(store).encode()).hexdigest()[:16]
        self._objects_dir: Path | None = None

    def _path(self, tip: str) -> Path:
        return self.folder / f"{tip}{_SUFFIX}"

    def load(self, tip: str) -> frozenset[str] | None:
        """Return the cached history of a commit, or None."""
        try:
            data = self._path(tip).read_bytes()
        except OSError:
            return None
        if len(data) % 20:
            return None
        history = frozenset(data[i:i + 20].hex() for i in range(0, len(data), 20))
        return history if tip in history else None

    def save(self, tip: str, history: frozenset[str]) -> None:
        """Write a commit's history atomically, keeping the newest few files per clone."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{tip}.{os.getpid()}.tmp"
            tmp.write_bytes(b"".join(bytes.fromhex(h) for h in sorted(history)))
            os.replace(tmp, self._path(tip))
            files = sorted(self.folder.glob(f"*{_SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in files[_FILES_PER_CLONE:]:
                old.unlink(missing_ok=True)
        except OSError as err:  # a cache that cannot be written only costs time
            log.warning("could not cache the history of %s: %s", tip[:12], err)

    def _objects(self) -> Path:
        if self._objects_dir is None:
            gitdir = Path(self.store.gitdir)
            try:  # a linked worktree keeps its objects in the clone's common folder
                self._objects_dir = (gitdir / (gitdir / "commondir").read_text().strip() / "objects").resolve()
            except OSError:
                self._objects_dir = gitdir / "objects"
        return self._objects_dir

    def _packs(self) -> list[str]:
        """Name the clone's pack files: a gc that drops commits (a rewritten branch) writes new ones."""
        try:
            return sorted(n for n in os.listdir(self._objects() / "pack") if n.endswith(".pack"))
        except OSError:
            return []

    def _loose(self, full: str) -> bool:
        return (self._objects() / full[:2] / full[2:]).is_file()

    def load_resolved(self) -> dict[str, str]:
        """Return the commit ids (and hex prefixes) already resolved in this clone: id -> full id.

        A commit stays what its id names, but a gc may remove it (a rewritten branch):
        the ids are kept only while the clone's packs are those they were found with,
        and one found as a loose object only while that object is there.
        """
        return self._read()[0]

    def _read(self) -> tuple[dict[str, str], set[str]]:
        try:
            data = json.loads((self.folder / _RESOLVED).read_text())
            ids, listed = data["ids"], {str(full) for full in data["loose"]}
        except (OSError, ValueError, TypeError, KeyError):
            return {}, set()
        if not isinstance(ids, dict) or data.get("packs") != self._packs():
            return {}, set()
        loose = {full for full in listed if self._loose(full)}
        return {str(k): str(v) for k, v in ids.items() if v not in listed or v in loose}, loose

    def save_resolved(self, found: dict[str, str]) -> None:
        """Remember resolved commit ids, with the clone's packs and the ones found as loose objects."""
        try:
            known, loose = self._read()
            known.update(found)
            loose |= {full for full in found.values() if self._loose(full)}
            if len(known) > _RESOLVED_LIMIT:
                known = dict(list(known.items())[-_RESOLVED_LIMIT:])
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{_RESOLVED}.{os.getpid()}.tmp"
            kept = sorted(loose & set(known.values()))
            tmp.write_text(json.dumps({"packs": self._packs(), "loose": kept, "ids": known}))
            os.replace(tmp, self.folder / _RESOLVED)
        except OSError as err:  # a cache that cannot be written only costs time
            log.warning("could not cache resolved commits: %s", err)

    def history(self, tip: str) -> frozenset[str]:
        """Return the history of ``tip``: cached, extended from a cached ancestor, or walked."""
        found = self.load(tip)
        if found is not None:
            return found
        try:
            files = sorted(self.folder.glob(f"*{_SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:
            files = []
        for path in files[:3]:
            base = path.name[: -len(_SUFFIX)]
            if self.store.is_ancestor(base, tip):
                older = self.load(base)
                if older is not None:
                    history = older | self.store.ancestors(tip, known=base)
                    self.save(tip, history)
                    return history
        history = frozenset(self.store.ancestors(tip))
        self.save(tip, history)
        return history


class CommitGraph:
    """An ancestry oracle over one commit's history in a code repository."""

    def __init__(self, store: GitStore, tip: str, *, cache_dir: Path | None = None) -> None:
        self.store = store
        self.tip = tip
        # The disk cache holds the histories and the commit ids resolved in this clone.
        self._files = HistoryFiles(cache_dir, store) if cache_dir is not None else None
        clone = _clone_key(store)
        # Whether the clone is shallow (git clone --depth): a commit it lacks may be beyond its depth.
        self.shallow = clone != str(store.gitdir)
        key = (clone, tip)
        history = _HISTORY_CACHE.get(key)
        if history is None:
            if self._files is not None:
                history = self._files.history(tip)
            else:
                history = frozenset(store.ancestors(tip))
            if len(_HISTORY_CACHE) >= _CACHE_LIMIT:
                _HISTORY_CACHE.pop(next(iter(_HISTORY_CACHE)))
            _HISTORY_CACHE[key] = history
        self.history = history
        self._resolved: dict[str, str | None] | None = None  # read on the first commit not in the history
        self._sorted: list[str] | None = None
        self._landings: Landings | None = None  # built on the first commit the clone has and the history lacks
        self._landed: dict[str, Landing | None] = {}
        # What each commit asked about outside the history came to: "?" not in the clone, "-" not landed,
        # else the commit it landed as. It depends on the clone's refs and objects, not only on the tip.
        self.outside: dict[str, str] = {}

    def contains(self, commit: str) -> bool | None:
        """Return whether a commit (id, prefix, tag) is in the history; None if the clone lacks it."""
        if commit in self.history:
            return True
        if self._resolved is None:
            # Commit ids found in the clone before (kept on disk with the histories):
            # asking Git again would import pygit2 in a read that needs nothing else from it.
            self._resolved = dict(self._files.load_resolved()) if self._files is not None else {}
        if commit not in self._resolved:
            full = self._in_history(commit)
            if full is None:
                full = self.store.find_commit(commit)
                # Only ids: a tag or branch name may move, an id never does.
                if full is not None and self._files is not None and _HEX.fullmatch(commit):
                    self._files.save_resolved({commit: full})
            self._resolved[commit] = full
        full = self._resolved[commit]
        if full is None:
            self.outside[commit] = "?"
            return None
        if full in self.history:
            return True
        landed = self.landing(full)
        self.outside[commit] = "-" if landed is None else landed.commit
        return landed is not None

    def landing(self, commit: str) -> Landing | None:
        """Return how a commit outside the history landed in it as an equivalent commit (am.worlds.landed), else None.

        ``commit`` is an id, a prefix or a name; one outside the clone or in the history has no landing.
        """
        full = commit if len(commit) == 40 else (self._resolved or {}).get(commit)
        if full is None or full in self.history:
            return None
        if full not in self._landed:
            if self._landings is None:
                from am.git.program.patchids import PatchIds
                from am.worlds.landed import Landings

                folder = self._files.folder if self._files is not None else None
                store = self.store  # not self: the landings would hold the graph that holds them
                self._landings = Landings(PatchIds(Path(store.gitdir), repo=lambda: store.repo), self.tip, self.history,
                                          folder=folder)
            self._landed[full] = self._landings.find(full)
        return self._landed[full]

    def full_id(self, commit: str) -> str | None:
        """Return the full id of a commit of this history named by its id or a unique prefix, else None.

        A commit that landed here as an equivalent commit (``landing``, already asked) stands for that
        commit, so staleness is judged from where its change landed.
        """
        if commit in self.history:
            return commit
        found = self._in_history(commit)
        if found is not None:
            return found
        full = commit if len(commit) == 40 else (self._resolved or {}).get(commit)
        landed = self._landed.get(full) if full is not None else None
        return landed.commit if landed is not None else None

    def staleness(self) -> Staleness:
        """Return the staleness of watched paths in this world (DESIGN §5.6), cached beside the histories."""
        from am.worlds.stale import Staleness

        folder = self._files.folder if self._files is not None else None
        return Staleness(self.store, self.tip, self.history, folder=folder)

    def _in_history(self, prefix: str) -> str | None:
        """Return the one history commit a hex prefix names (bisect; no object lookups)."""
        prefix = prefix.lower()
        if len(prefix) < 4 or len(prefix) >= 40 or not all(c in "0123456789abcdef" for c in prefix):
            return None
        if self._sorted is None:
            self._sorted = sorted(self.history)
        i = bisect.bisect_left(self._sorted, prefix)
        found = self._sorted[i] if i < len(self._sorted) and self._sorted[i].startswith(prefix) else None
        if found is None or (i + 1 < len(self._sorted) and self._sorted[i + 1].startswith(prefix)):
            return None  # absent or ambiguous here: let Git decide
        return found


# Where a world's commit came from when the door filled it from a clone checked out at a commit (a CI job).
DETACHED_HEAD = "HEAD of the clone, detached"


@dataclass(frozen=True)
class WorldSetup:
    """A world, the oracle that judges commits in it, and how it was decided."""

    world: World
    oracle: CommitGraph | None
    rule: str
    notes: tuple[str, ...] = ()
    clone: str | None = None
    commit_source: str | None = None

    @property
    def history_size(self) -> int:
        return 0 if self.oracle is None else len(self.oracle.history)


def shallow_points(gitdir: Path) -> str | None:
    """Return the commits a shallow clone's history stops at (its ``shallow`` file, as git reads it), else None."""
    from am.git.program.partial import shallow_text

    return shallow_text(gitdir)


def is_shallow(gitdir: Path) -> bool:
    """Return whether a clone is shallow (git clone --depth): a commit it lacks may be beyond its depth."""
    return shallow_points(gitdir) is not None


def refs_stamp(gitdir: Path) -> tuple[tuple[str, int, int], ...]:
    """Stat the clone's refs and shallow file: a fetch or a deleted branch changes it, and with it where a commit
    outside a world's history landed (am.worlds.landed), while the world's own commit stays."""
    try:
        common = gitdir / (gitdir / "commondir").read_text().strip()
    except OSError:
        common = gitdir
    found: list[tuple[str, int, int]] = []
    for name in ("packed-refs", "shallow"):
        try:
            st = (common / name).stat()
            found.append((name, st.st_mtime_ns, st.st_size))
        except OSError:
            pass
    for folder, _, files in os.walk(common / "refs"):
        for name in files:
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            found.append((os.path.join(folder, name), st.st_mtime_ns, st.st_size))
    return tuple(sorted(found))


def _clone_key(store: GitStore) -> str:
    """Name a clone's histories: a shallow clone's change when it is deepened, so they are kept apart."""
    points = shallow_points(Path(store.gitdir))
    return str(store.gitdir) if points is None else f"{store.gitdir}\nshallow:{points}"


def open_clone(name: str, registry: Registry | None = None) -> tuple[GitStore | None, str | None]:
    """Open the registered clone of a code repository; return (store, why not)."""
    registry = registry or Registry.load()
    path = registry.repos.get(name)
    if path is None:
        return None, f"repo {name} is not registered on this machine (register its clone: am repo add {name} PATH)"
    from am.git import LazyStore

    try:
        # A warm slice reads the branch tip from the ref files and the history from the
        # disk cache: pygit2 is imported only when a question needs the object store.
        return LazyStore.open_code(Path(path).expanduser()), None
    except AmError as err:
        fix = f"register this machine's clone: am repo add {name} PATH --replace"
        if not os.path.lexists(Path(path).expanduser()):  # a registry copied from another machine, a clone moved
            return None, f"the clone of {name} registered at {path} is not on this machine ({fix})"
        return None, f"the clone of {name} at {path} cannot be read ({err.message}; {fix})"


def _cached_tip(store: GitStore, commit: str, cache_dir: Path | None) -> str | None:
    """Return ``commit`` when it is a full id whose history is already kept (in memory or on disk), else None."""
    if len(commit) != 40 or not _HEX.fullmatch(commit):
        return None
    if (_clone_key(store), commit) in _HISTORY_CACHE:
        return commit
    if cache_dir is not None and HistoryFiles(cache_dir, store).load(commit) is not None:
        return commit
    return None


def _check_branch_of(store: GitStore, repo: str, branch: str, commit: str) -> None:
    """Refuse a world that names a branch the clone lacks, or a commit not on it (the rule of a write's world)."""
    from am.worlds.branches import branch_names, branch_tip, check_on_branch, closest_hint, known_list

    tip = branch_tip(store, branch)
    if tip is None:
        names = branch_names(store)
        raise UnknownWorldError(
            f"branch {branch} is not in the clone of {repo} at {store.root} (branches: {known_list(names)})",
            hint=closest_hint(branch, names, "fetch it, or check the name"))
    check_on_branch(store, repo, branch, tip, commit)


def _current_branch(store: GitStore) -> str | None:
    try:
        return store.head_ref().removeprefix("refs/heads/")
    except AmError:
        return None


def setup_world(repo: str | None, branch: str | None = None, commit: str | None = None, *,
                at: datetime | None = None, include_pending: bool = False,
                registry: Registry | None = None, cache_dir: Path | None = None,
                known_repos: Callable[[], Collection[str]] | None = None,
                commit_source: str | None = None) -> WorldSetup:
    """Build the world of a slice and its ancestry oracle, falling back to branch names.

    ``commit_source``: where a commit passed in came from when the user did not type it (DETACHED_HEAD:
    the door filled it from a registered clone's detached HEAD); the pack's header says so.

    A world that cannot exist is an ``UnknownWorldError`` (exit code 12): a repo
    neither registered here nor named by the vault (``known_repos()``), or a
    branch or commit the registered clone does not have. A repo the vault knows
    but this machine has no clone of is judged by branch name, and says so.
    """
    from am.worlds.branches import (
        branch_names,
        branch_tip,
        check_repo_known,
        did_you_mean,
        known_list,
    )

    def world(b: str | None, c: str | None) -> World:
        return World(repo=repo, branch=b, commit=c, at=at, include_pending=include_pending)

    if repo is None:
        return WorldSetup(world(branch, commit), None, RULE_NONE,
                          ("no repo given: only records that name no repo hold",))
    registry = registry or Registry.load()
    if repo not in registry.repos and known_repos is not None:
        check_repo_known(repo, set(known_repos()) | set(registry.repos))
    store, why = open_clone(repo, registry)
    notes: list[str] = []
    if store is not None:
        if commit is not None:
            # A full id whose history is cached is known to be in the clone: no need to open it (pygit2).
            tip, source = _cached_tip(store, commit, cache_dir) or store.find_commit(commit), commit_source or "given"
            if tip is None:
                raise UnknownWorldError(f"commit {commit} is not in the clone of {repo} at {store.root}",
                                        hint="fetch it, or check the id (git log --oneline)")
            if branch is not None:  # both given: the commit must be on the branch, as a write's must
                _check_branch_of(store, repo, branch, tip)
        elif branch is not None:
            tip, source = branch_tip(store, branch), "branch tip"
            if tip is None:
                names = branch_names(store)
                guess = did_you_mean(branch, names)
                raise UnknownWorldError(
                    f"branch {branch} is not in the clone of {repo} at {store.root} (branches: {known_list(names)})",
                    hint=(f"did you mean {guess!r}? " if guess else "") + "fetch it, or check the name")
        else:
            tip, source = store.head(), "HEAD of the clone"
            branch = _current_branch(store)
            if tip is None:
                why = f"the clone at {store.root} has no commits"
        if tip is not None:
            oracle = CommitGraph(store, tip, cache_dir=cache_dir)
            return WorldSetup(world(branch, tip), oracle, RULE_ANCESTRY, tuple(notes), str(store.root), source)
    assert why is not None
    notes.append(why)
    if branch is None:
        notes.append("no branch given: only records that name no branch hold")
    return WorldSetup(world(branch, commit), None, RULE_BRANCH, tuple(notes))


def records_at(vault: VaultFiles, commit: str) -> Iterator[Record]:
    """Yield the records in a vault commit's tree (record time: --as-of)."""
    from am.errors import InvalidRecordError
    from am.records.codec import decode_record_bytes, parse_record

    store = vault.store
    for path, blob in sorted(store.tree_files(["topics", "facts", "relations"], commit=commit)):
        if not path.endswith(".md"):
            continue
        try:
            yield parse_record(decode_record_bytes(store.read_object(blob), path=path), path)
        except InvalidRecordError as err:
            log.warning("skipping %s", err)
