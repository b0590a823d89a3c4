"""Remotes and merges of a vault: the remote's settings, merge bases, the merge commit, and moving the branch to it.

Network operations (fetch, push) run the ``git`` program (``am/git/program/transport.py``
says why); the refspec never has a ``+``, so a push that is not a fast-forward is
refused by the remote and reported, never forced. Local work (the merge commit,
the branch move, the work tree and Git's index) is done here with pygit2 under
am's write lock, following the write protocol of ``am/git/write/transaction.py``: files
first, then the branch by compare-and-swap, then the index. A journal in
``.git/am/`` names the move while it is under way, so a sync killed half way is
completed by the next one (``resume_advance``).

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import pygit2

import am.git.common as common
import am.git.coord.asidelocks as asidelocks
import am.git.coord.inflight as inflight
import am.git.formats.packs as packs
import am.git.movefiles as movefiles
import am.git.program.transport as transport
from am.errors import GitError, UsageError
from am.git.incoming import check_incoming, check_record_sizes
from am.git.common import _fsync_dir, _Moved
from am.git.refs import UNKNOWN
from am.git.reading import tree_blob_ids
from am.git.program.transport import JOURNAL, PushResult
from am.git.values import failpoint, hash_blob, worktree_blob_id

if TYPE_CHECKING:
    from am.git.program.prewrite import Prewrite
    from am.git.store import GitStore

__all__ = [
    "SYNC_FAILPOINTS",
    "PushResult",
    "StagedMerge",
    "advance",
    "check_incoming",
    "check_record_sizes",
    "clear_remote_lock",
    "fetch",
    "merge_base",
    "merge_commit",
    "push",
    "remote_names",
    "remote_url",
    "resume_advance",
    "set_upstream",
    "upstream",
]

SYNC_FAILPOINTS = (
    "sync-fetched",      # the remote's commits fetched, nothing merged
    "sync-merge-commit",  # the merge commit written to a temporary pack, nothing of the vault changed
    "sync-files",        # the work tree holds the merged files, nothing flushed, the pack not in place
    "sync-flushed",      # files and pack flushed, the pack in place, the branch has not moved
    "sync-moved",        # the branch moved, Git's index not yet updated
    "sync-pushing",      # the push is under way
)


def remote_names(store: GitStore) -> list[str]:
    """Return the names of the vault's configured remotes."""
    return sorted(r.name for r in store.repo.remotes if r.name)


def remote_url(store: GitStore, name: str) -> str | None:
    """Return a remote's URL, or None when no remote has that name."""
    return store.config_value(f"remote.{name}.url")


def upstream(store: GitStore, branch: str) -> tuple[str, str] | None:
    """Return (remote, remote branch) a local branch tracks, or None."""
    remote = store.config_value(f"branch.{branch}.remote")
    merge = store.config_value(f"branch.{branch}.merge")
    if not remote or not merge or remote == ".":
        return None
    return remote, merge.removeprefix("refs/heads/")


def set_upstream(store: GitStore, *, remote: str, url: str, branch: str) -> Callable[[], None]:
    """Point ``remote`` at ``url`` (adding it) and make it the upstream of ``branch``.

    Returns what puts the settings back as they were, for a first fetch that fails.
    """
    if not url.strip() or url.startswith("-") or "\n" in url:
        raise UsageError(f"{url!r} is not a remote URL", hint="give a URL or path such as ssh://host/vault.git")
    old_url = remote_url(store, remote)
    keys = (f"branch.{branch}.remote", f"branch.{branch}.merge")
    old = {key: store.config_value(key) for key in keys}
    if old_url is None:
        transport.git(store.root, "remote", "add", remote, url)
    else:
        transport.git(store.root, "remote", "set-url", remote, url)
    transport.git(store.root, "config", keys[0], remote)
    transport.git(store.root, "config", keys[1], f"refs/heads/{branch}")
    store.__dict__.pop("_config", None)

    def restore() -> None:
        if old_url is None:
            transport.git(store.root, "remote", "remove", remote, check=False)
        else:
            transport.git(store.root, "remote", "set-url", remote, old_url, check=False)
        for key, value in old.items():
            transport.git(store.root, "config", *((key, value) if value else ("--unset", key)), check=False)
        store.__dict__.pop("_config", None)

    return restore


def fetch(store: GitStore, remote: str, branch: str) -> str | None:
    """Fetch a remote's branch; return its commit, or None when the remote has no such branch (yet)."""
    named = remote_url(store, remote) is not None
    found = transport.fetch(store.root, store.gitdir, remote, branch, named=named)
    if found == UNKNOWN:
        return store.branch_tip(f"refs/remotes/{remote}/{branch}")
    return found


def push(store: GitStore, remote: str, commit: str, branch: str) -> PushResult:
    """Push ``commit`` to the remote's ``branch`` as a fast-forward only, and say how it went for that ref."""
    return transport.push(store.root, remote, commit, branch)


def clear_remote_lock(store: GitStore, remote: str, lock: str) -> Path | None:
    """Move aside a ref lock a killed push left in a remote on this machine, if it is provably stale.

    Stale means: the remote is a path on this machine (its URL a path or
    ``file://``), the lock lies in its ``refs/`` (or is its ``packed-refs.lock``),
    is older than ``AM_GIT_LOCK_STALE`` seconds (60), and no process runs in
    that repository (``/proc``: no ``git receive-pack`` or other git command
    has it as its folder). It is kept in this vault's ``.git/am/stale-locks/``.
    Returns where it went, or None (left alone).
    """
    url = remote_url(store, remote)
    if url is None or "://" in url and not url.startswith("file://") or re.match(r"^[^/]+:", url):
        return None  # a server's lock: only its owner can tell whether a push holds it
    repo_dir = Path(os.path.realpath(url.removeprefix("file://") if url.startswith("file://")
                                     else os.path.join(store.root, url)))
    path = Path(os.path.realpath(lock))
    if path.parent == repo_dir / ".git" or (repo_dir / ".git").is_dir() and path.is_relative_to(repo_dir / ".git"):
        repo_dir = repo_dir / ".git"  # a non-bare remote
    if not (path.is_relative_to(repo_dir / "refs") or path == repo_dir / "packed-refs.lock") \
            or not path.name.endswith(".lock"):
        return None
    try:
        age = time.time() - path.stat().st_mtime
    except OSError:
        return None
    if age < common._GIT_LOCK_STALE or _runs_in(repo_dir):
        return None
    moved = asidelocks.move_aside(store._am_dir, path, label=f"remote-{remote}-")
    if moved is not None:
        common.log.warning("moved aside a stale ref lock of %s (%.0f s old, no git process in it): %s -> %s",
                           remote, age, path, moved)
    return moved


def _runs_in(repo_dir: Path) -> bool:
    """Return whether a process runs in ``repo_dir`` (its working folder there); True when that cannot be told."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return True
    for pid in pids:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue  # gone, or another user's (whose git could not write this repository's refs as ours)
        if Path(cwd) == repo_dir or Path(cwd).is_relative_to(repo_dir):
            return True
    return False


def merge_base(store: GitStore, a: str, b: str) -> str | None:
    """Return the best common ancestor of two commits, or None (unrelated histories)."""
    try:
        found = store.repo.merge_base(a, b)
    except (pygit2.GitError, KeyError, ValueError):
        return None
    return None if found is None else str(found)


_FILE, _EXEC, _LINK = 0o100644, 0o100755, 0o120000


def _build_tree(repo: pygit2.Repository, commit: str, files: Mapping[str, bytes | str | None],
                changes: list[tuple[str, str | None]] | None = None, *, modes: Mapping[str, int] | None = None,
                new_modes: dict[str, int] | None = None) -> pygit2.Oid:
    """Write ``commit``'s tree with ``files`` set (bytes, or a blob id) or removed (None); return its id.

    ``modes``: Git's mode of a file set here (100644, 100755, 120000); a file
    not named keeps the mode it has in ``commit``, a new one is 100644.
    ``changes``, when given, receives (path, new blob id or None) of every file
    whose blob or mode differs from ``commit``'s: what a diff of the two trees would
    list, read off the folders the build walks anyway; ``new_modes`` the mode of
    each of them that is not 100644.
    """
    nested: dict[str, object] = {}
    for path, data in files.items():
        parts = path.split("/")  # a tree's paths: never empty parts, never a leading or trailing slash
        node = nested
        for part in parts[:-1]:
            node = node.setdefault(part, {})  # type: ignore[assignment]
            if not isinstance(node, dict):
                raise GitError(f"{path}: a file of the merge is where a folder should be")
        if data is None:
            node[parts[-1]] = None
        elif isinstance(data, str):
            node[parts[-1]] = pygit2.Oid(hex=data)
        else:
            node[parts[-1]] = repo.create_blob(data)

    def write(tree: pygit2.Tree | None, changes_here: dict[str, object], prefix: str) -> pygit2.Oid | None:
        builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
        for name, change in changes_here.items():
            entry = tree[name] if tree is not None and name in tree else None
            old_blob = entry.id if entry is not None and entry.type_str == "blob" else None
            if isinstance(change, dict):
                sub = repo[entry.id].peel(pygit2.Tree) if entry is not None and entry.type_str == "tree" else None
                oid = write(sub, change, f"{prefix}{name}/")
                if oid is None:
                    if entry is not None:
                        builder.remove(name)
                else:
                    builder.insert(name, oid, pygit2.enums.FileMode.TREE)
            elif change is None:
                if entry is not None:
                    builder.remove(name)
                    if changes is not None and old_blob is not None:
                        changes.append((prefix + name, None))
            else:
                old_mode = entry.filemode if entry is not None and old_blob is not None else None
                mode = modes.get(prefix + name) if modes else None
                if mode is None:
                    mode = old_mode if old_mode is not None else _FILE
                builder.insert(name, change, mode)  # type: ignore[arg-type]
                if changes is not None and (change != old_blob or mode != old_mode):
                    changes.append((prefix + name, str(change)))
                    if new_modes is not None and mode != _FILE:
                        new_modes[prefix + name] = int(mode)
        if len(builder) == 0 and tree is not None and changes_here:
            return None  # a folder emptied by the merge goes too
        return builder.write()

    oid = write(repo[commit].peel(pygit2.Tree), nested, "")
    return oid if oid is not None else repo.TreeBuilder().write()


@dataclass(frozen=True)
class StagedMerge:
    """A merge commit written to a temporary pack, not yet in the repository: ``advance`` flushes and installs it.

    ``changes`` are the files that differ from the first parent (path, new blob
    id or None), ``data`` the bytes of the blobs the merge made (the work tree
    needs them before the pack is in place), ``modes`` Git's mode of each changed
    file that is not 100644 (an executable, a symbolic link).
    """

    commit: str
    pending: packs.PendingPack
    changes: tuple[tuple[str, str | None], ...]
    data: Mapping[str, bytes] = field(default_factory=dict)
    modes: Mapping[str, int] = field(default_factory=dict)


def merge_commit(store: GitStore, ours: str, files: Mapping[str, bytes | str | None], parents: list[str], *,
                 message: str, author: tuple[str, str], committer: tuple[str, str],
                 modes: Mapping[str, int] | None = None) -> StagedMerge:
    """Write the merge: ``ours``'s tree with ``files`` applied, and a commit of it, as one temporary pack.

    ``modes``: the mode each file of ``files`` takes (see ``_build_tree``): an
    executable stays one, a symbolic link stays a link.

    Nothing is flushed or installed here and no branch moves: ``advance`` writes
    the work tree, flushes the pack with it (one syncfs for both) and renames
    the pack into place before the branch moves (docs/commit-protocol.md).
    """
    if "\x00" in message:
        raise GitError("a commit message may not contain NUL")
    objects = store._batch_objects()
    objects.sink.clear()  # left by a batch that failed before its pack was written
    changes: list[tuple[str, str | None]] = []
    new_modes: dict[str, int] = {}
    tree = _build_tree(objects.repo, ours, files, changes, modes=modes, new_modes=new_modes)
    oid = objects.repo.create_commit(None, pygit2.Signature(*author), pygit2.Signature(*committer), message,
                                     tree, [pygit2.Oid(hex=p) for p in parents])
    taken, bases = objects.sink.take()
    data = {hash_blob(d): d for d in files.values() if isinstance(d, bytes)}
    pending = packs.stage_pack(objects.pack_dir, taken, sync=common._syncfs is None, bases=bases)
    failpoint("sync-merge-commit")
    return StagedMerge(str(oid), pending, tuple(sorted(changes)), data, new_modes)


def advance(store: GitStore, target: str, *, expected: str | None, reflog: str,
            staged: StagedMerge | None = None, ahead: Prewrite | None = None, again: str = "am sync",
            source: str | None = None) -> list[str]:
    """Move HEAD's branch from ``expected`` to ``target``, bringing the work tree and Git's index along.

    Only the paths that differ are written; a user's uncommitted or staged
    edit to one of them is refused before anything changes. Raises _Moved
    (from am.git.common) when the branch is no longer at ``expected``.
    ``staged``: the merge commit ``target``, still in its temporary pack; it is
    flushed with the work tree's files and installed before the branch moves.
    ``again``: the command to run once an edit in the way is dealt with.
    ``source``: the commit the changes come from, named if its tree has a path Git refuses (``check_incoming``).
    Returns the paths that changed. The caller holds ``write_lock``.
    """
    ref = store.head_ref()
    journaled = False
    try:
        if store.branch_tip(ref) != expected:
            raise _Moved()
        modes: dict[str, int] = dict(staged.modes) if staged is not None else {}
        changes = list(staged.changes) if staged is not None else store.tree_changes(expected, target, modes=modes)
        check_incoming(changes, source or target)
        check_record_sizes(changes, store.blob_size, source or target)
        movefiles.check_clean(store, expected, changes, again)
        journal = store._am_dir / JOURNAL
        note: dict[str, object] = {"ref": ref, "from": expected, "to": target, "reflog": reflog}
        if staged is not None:  # a sync killed before the pack is in place installs it from here
            note["pack"] = {"name": staged.pending.name, "pack": staged.pending.tmp_pack.name,
                            "idx": staged.pending.tmp_idx.name}
        # Needed only once the branch may move, which is after _apply's flush of the file system: without syncfs
        # (not Linux) it is flushed here. A kill before then leaves it in the page cache, which is enough.
        _write_journal(journal, note, sync=common._syncfs is None)
        journaled = True
        _apply(store, ref, expected, target, changes, reflog, staged=staged, ahead=ahead, modes=modes)
    except BaseException:
        if staged is not None and not journaled:
            staged.pending.discard()  # nothing names it: the merge never reached the vault
        raise
    journal.unlink(missing_ok=True)
    return [p for p, _ in changes]


def _apply(store: GitStore, ref: str, expected: str | None, target: str,
           changes: list[tuple[str, str | None]], reflog: str, *, staged: StagedMerge | None = None,
           ahead: Prewrite | None = None, modes: Mapping[str, int] | None = None) -> None:
    """Write the work tree's files, stage Git's index, flush once, install the staged pack, move the branch, set the index.

    ``modes``: Git's mode of each changed file that is not 100644 (``Reader.tree_changes``).
    """
    sync_each = common._syncfs is None
    made = staged.data if staged is not None else {}
    modes = modes or {}
    by_folder: dict[str, list[tuple[str, str | None, int]]] = {}
    for path, new in changes:
        folder, _, name = path.rpartition("/")
        by_folder.setdefault(folder, []).append((name, new, modes.get(path, _FILE)))
    links = movefiles.Links(store, expected)
    movefiles.write_files(store, by_folder, made, sync_each=sync_each, ahead=None if sync_each else ahead, links=links)
    entries = [(PurePosixPath(p), pygit2.Oid(hex=n)) for p, n in changes if n is not None]
    removed = [PurePosixPath(p) for p, n in changes if n is None]
    # Git's index is staged before the flush, as a write's is (docs/commit-protocol.md step 6): the one
    # syncfs covers it, and its write-out starts now, beside the pack's.
    kept = modes or None  # only the changed files' modes: tree_changes and the merge name no others
    index = store.staging.stage_index(entries, removed, sync=sync_each, early=not sync_each, modes=kept)
    try:
        failpoint("sync-files")
        if not sync_each:
            # One flush for every file written: the merge's pack, the work tree, the journal, the index.
            store.staging.sync_filesystems()
        if staged is not None:
            staged.pending.install(sync=sync_each)  # flushed under temporary names, renamed before the branch moves
        failpoint("sync-flushed")
        left = inflight.read(store._am_dir)  # a killed write's note, for the next write to heal as before
        if store.branch_tip(ref) != target:
            _note_move(store, ref, target, entries, left)
            store.staging.lock_index_for_move()  # as a write does: no git commit between the move and the index
            store.staging.move_ref(ref, expected, pygit2.Oid(hex=target), reflog)
    except BaseException:
        store.staging.let_go_index_lock()
        store.staging.drop_staged(index)
        raise
    failpoint("sync-moved")
    store.staging.finish_index(index, entries, removed, ref=ref, modes=kept)  # left alone if HEAD left the branch
    if left is None:
        inflight.clear(store._am_dir)
    else:
        inflight.write(store._am_dir, left.ref, left.tip, list(left.entries))


def _note_move(store: GitStore, ref: str, target: str, entries: list[tuple[PurePosixPath, pygit2.Oid]],
               left: inflight.Note | None) -> None:
    """Note the move's index entries as a write's batch does (am/git/coord/inflight.py) before the branch moves.

    A sync killed between its branch move and its index update leaves Git's
    index at the old tree (the other side's records staged as deleted); with
    the note, the next am write sets those entries, as it does for a killed
    write, before any sync runs again. ``left``, a note a killed write left, is kept in it (and put back
    once the index is set).
    """
    noted = [] if left is None else [(p, oid) for p, oid in left.entries]
    inflight.write(store._am_dir, ref, target, noted + [(p, str(oid)) for p, oid in entries])


def _write_journal(path: Path, data: dict[str, object], *, sync: bool) -> None:
    """Write the journal of a branch move; ``sync`` flushes it now (else the work tree's flush, before the move, does)."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(data, out)
        if sync:
            out.flush()
            os.fsync(out.fileno())
    os.replace(tmp, path)
    if sync:
        _fsync_dir(path.parent)


def resume_advance(store: GitStore) -> str | None:
    """Finish a branch move a killed sync left half done; return the commit it moved to, or None. Hold write_lock."""
    journal = store._am_dir / JOURNAL
    try:
        data = json.loads(journal.read_text(encoding="utf-8"))
        ref, old, new, reflog = data["ref"], data["from"], data["to"], data["reflog"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError):
        journal.unlink(missing_ok=True)
        return None
    tip = store.branch_tip(ref)
    if ref == store.head_ref() and tip == old and store.repo.get(new) is None:
        _install_noted_pack(store, data.get("pack"))  # killed before the merge's pack was in place
    if ref != store.head_ref() or tip not in (old, new) or store.repo.get(new) is None:
        if ref == store.head_ref() and tip is not None and store.repo.get(new) is not None \
                and store.is_ancestor(new, tip):
            # An am write moved the branch on from the moved tip before any sync ran: the files are in
            # place, but Git's index may still hold the old tree for the move's paths (staged deletions).
            restage_lagging(store, old, new, tip)
        journal.unlink(missing_ok=True)  # the branch went elsewhere since: nothing of this move to finish
        return None
    modes: dict[str, int] = {}
    changes = store.tree_changes(old, new, modes=modes)
    if tip == old:
        movefiles.check_clean(store, old, changes)  # the user may have edited a file since the kill
    _apply(store, ref, old, new, changes, reflog, modes=modes)
    journal.unlink(missing_ok=True)
    return str(new)


def restage_lagging(store: GitStore, old: str | None, new: str, tip: str) -> list[str]:
    """Set Git's index to ``tip``'s blob for each path of the move ``old`` -> ``new`` whose index entry lags.

    A path lags when its index entry is still ``old``'s while the work tree
    already holds ``tip``'s file: what a sync killed between its branch move
    and its index update leaves (git status shows the other side's records
    as deleted, and a plain ``git commit -a`` would delete them). A path
    whose index or work file is anything else is a person's edit, left alone.
    Returns the paths set. Hold write_lock.
    """
    old_tree = None if old is None else store.repo[old].peel(pygit2.Tree)
    tip_tree = store.repo[tip].peel(pygit2.Tree)
    index = store.staging.read_index()
    entries: list[tuple[PurePosixPath, pygit2.Oid]] = []
    removed: list[PurePosixPath] = []
    paths = [path for path, _ in store.tree_changes(old, new)]
    modes: dict[str, int] = {}  # tip's mode of each file set back that is not 100644: it goes with tip's blob
    before = tree_blob_ids(store.repo, old_tree, paths)
    after = tree_blob_ids(store.repo, tip_tree, paths, modes=modes)
    root = f"{store.root}/"
    for path in paths:
        was, now = before[path], after[path]
        staged = index.staged(path)
        if staged == now or staged != was or worktree_blob_id(root + path) != now:
            continue
        if now is None:
            removed.append(PurePosixPath(path))
        else:
            entries.append((PurePosixPath(path), pygit2.Oid(hex=now)))
    if entries or removed:
        store.staging.update_index(entries, removed, modes={str(p): modes[str(p)] for p, _ in entries
                                                            if str(p) in modes})
        common.log.warning("Git's index lagged the branch for %d files a killed sync brought; set to HEAD's",
                           len(entries) + len(removed))
    return [str(p) for p, _ in entries] + [str(p) for p in removed]


_PACK_NAME = re.compile(r"pack-[0-9a-f]{40}")
_TMP_NAME = re.compile(r"tmp_(pack|idx)_am_[0-9a-f]{12}")


def _install_noted_pack(store: GitStore, noted: object) -> None:
    """Put in place the temporary pack a journal names, if it is whole (its checksums hold); else leave it."""
    if not isinstance(noted, dict):
        return
    name, tmp_pack, tmp_idx = noted.get("name"), noted.get("pack"), noted.get("idx")
    if not (isinstance(name, str) and _PACK_NAME.fullmatch(name) and isinstance(tmp_pack, str)
            and _TMP_NAME.fullmatch(tmp_pack) and isinstance(tmp_idx, str) and _TMP_NAME.fullmatch(tmp_idx)):
        return
    pack_dir = store._batch_objects().pack_dir
    pending = packs.PendingPack(pack_dir, name, pack_dir / tmp_pack, pack_dir / tmp_idx)
    if not pending.whole():
        return  # torn by a crash of the machine (or gone): the move cannot be finished, and is dropped
    if common._syncfs is None:
        for tmp in (pending.tmp_pack, pending.tmp_idx):
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    else:
        store.staging.sync_filesystems()
    pending.install(sync=common._syncfs is None)
