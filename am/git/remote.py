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

import contextlib
import errno
import functools
import json
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import pygit2

import am.git.common as common
import am.git.formats.packs as packs
import am.git.program.transport as transport
from am.errors import DirtyFileError, GitError, UsageError
from am.git.incoming import check_incoming, link_inside
from am.git.common import _fsync_dir, _Moved, log
from am.git.refs import UNKNOWN
from am.git.program.transport import JOURNAL, PushResult
from am.git.values import failpoint, hash_blob

if TYPE_CHECKING:
    from am.git.program.prewrite import Prewrite
    from am.git.store import GitStore

__all__ = [
    "SYNC_FAILPOINTS",
    "PushResult",
    "StagedMerge",
    "advance",
    "check_incoming",
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
        _check_clean(store, expected, changes, again)
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


def _check_clean(store: GitStore, expected: str | None, changes: list[tuple[str, str | None]],
                 again: str = "am sync") -> None:
    """Refuse, changing nothing, if a path to be written holds a user's uncommitted or staged edit."""
    old_tree = None if expected is None else store.repo[expected].peel(pygit2.Tree)
    index = store.staging.read_index()
    root = str(store.root)
    for path, new in changes:
        try:
            old: str | None = str(old_tree[path].id) if old_tree is not None else None
        except KeyError:
            old = None
        on_disk = _work_blob(os.path.join(root, path), path)
        if on_disk not in (old, new) and not (new is None and on_disk is None):
            raise DirtyFileError(f"{path} has uncommitted changes",
                                 hint="commit or discard them first (git add/commit or git checkout -- FILE), "
                                      f"then run {again}")
        if index.staged(path) not in (old, new):
            raise DirtyFileError(f"{path} has staged changes",
                                 hint="commit them first (git commit), or unstage them (git restore --staged FILE)")


def _work_blob(full: str, path: str) -> str | None:
    """The blob id Git would store for the work tree's ``full`` (a symbolic link: its target), or None if absent."""
    try:  # a string path, not a Path: a merge checks hundreds of files; O_NOFOLLOW: a link is read as git reads it
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        if err.errno != errno.ELOOP:
            raise
        return hash_blob(os.fsencode(os.readlink(full)))
    try:
        with open(fd, "rb") as handle:
            return hash_blob(handle.read())
    except IsADirectoryError:
        raise DirtyFileError(f"{path} is a folder in the work tree") from None


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
    links = _Links(store, expected)
    _write_files(store, by_folder, made, sync_each=sync_each, ahead=None if sync_each else ahead, links=links)
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
        if store.branch_tip(ref) != target:
            store.staging.lock_index_for_move()  # as a write does: no git commit between the move and the index
            store.staging.move_ref(ref, expected, pygit2.Oid(hex=target), reflog)
    except BaseException:
        store.staging.let_go_index_lock()
        store.staging.drop_staged(index)
        raise
    failpoint("sync-moved")
    store.staging.finish_index(index, entries, removed, ref=ref, modes=kept)  # left alone if HEAD left the branch


class _Links:
    """What writing a move's symbolic links needs: whether to make links at all, and which the old tree had.

    Read only when a link is met: a move of plain files pays nothing.
    """

    def __init__(self, store: GitStore, expected: str | None) -> None:
        self.store = store
        self.expected = expected

    @functools.cached_property
    def enabled(self) -> bool:
        # As git: core.symlinks=false (a file system without links) checks a link out as a file holding its target.
        return (self.store.config_value("core.symlinks") or "true").lower() not in ("false", "no", "off", "0")

    def was_link(self, path: str) -> bool:
        """Whether the tree the move starts from has a symbolic link at ``path`` (which the move may replace)."""
        if self.expected is None:
            return False
        try:
            return bool(self.store.repo[self.expected].peel(pygit2.Tree)[path].filemode == _LINK)
        except KeyError:
            return False


def _write_files(store: GitStore, by_folder: dict[str, list[tuple[str, str | None, int]]], made: Mapping[str, bytes],
                 *, sync_each: bool, ahead: Prewrite | None, links: _Links | None = None) -> None:
    """Write (or remove) the work tree's files of a move, folder by folder.

    ``ahead``: a helper writing some of the blobs ahead (am.git.program.prewrite;
    never with ``sync_each``, whose files are each flushed where written).
    Files it means to write are taken last, renamed into place as it
    finishes each; the others (the merge's own records) are written first.
    The helper writes plain 100644 files: an executable or a link is written here.
    """
    theirs = sum(1 for files in by_folder.values() for _, new, _ in files if new is not None and new not in made)
    listed = ahead.listed(theirs) if ahead is not None and theirs else frozenset()
    later: dict[str, list[tuple[str, str | None, int]]] = {}
    for folder, files in by_folder.items():
        now: list[tuple[str, str | None, int]] = []
        for item in files:
            new, mode = item[1], item[2]
            (later.setdefault(folder, []) if new in listed and new not in made and mode == _FILE
             else now).append(item)
        _write_folder(store, folder, now, made, sync_each=sync_each, ahead=None, links=links)
    for folder, files in later.items():
        _write_folder(store, folder, files, made, sync_each=sync_each, ahead=ahead, links=links)


def _write_folder(store: GitStore, folder: str, files: list[tuple[str, str | None, int]], made: Mapping[str, bytes],
                  *, sync_each: bool, ahead: Prewrite | None, links: _Links | None = None) -> None:
    """Write (or remove) some files of one folder: the helper's copy when it has one, else the bytes.

    An executable is written with its execute bits (as git: 0777 less the
    umask), a symbolic link as a link when ``am.git.incoming.link_inside`` and core.symlinks
    allow, else as a file holding its target (what git writes without
    core.symlinks); Git's index and the commit keep it a link either way.
    """
    if not files:
        return
    root = str(store.root)
    # The folder's path is checked once for symbolic links, then every file is written through a
    # descriptor of it: no path is walked again per file, and no link swapped in meanwhile is followed.
    store.worktree.safe_target(PurePosixPath(folder, "_"))  # "_": a stand-in name, so that every folder of the path is checked
    os.makedirs(os.path.join(root, folder), exist_ok=True)
    dir_fd = os.open(os.path.join(root, folder), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for name, new, mode in files:
            path = f"{folder}/{name}" if folder else name
            if _is_link(dir_fd, name) and not (links is not None and (mode == _LINK or links.was_link(path))):
                raise DirtyFileError(f"{path} is a symbolic link; am will not write through it")
            if new is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=dir_fd)
            elif mode != _FILE or ahead is None or not ahead.take(new, dir_fd, name):
                data = made.get(new)
                data = store.read_object(new) if data is None else data
                tag = f".am-{os.getpid()}.tmp"
                if mode == _LINK and links is not None and links.enabled and link_inside(folder, data):
                    _link_atomic(dir_fd, name, data, tag=tag)
                    continue
                if mode == _LINK and links is not None and links.enabled:
                    log.warning("%s is a symbolic link to %r, outside the vault (or through .git): written as a "
                                "file holding its target, as git does without core.symlinks; the commit keeps "
                                "it a link", path, data.decode("utf-8", "replace"))
                _write_atomic(dir_fd, name, data, tag=tag, sync=sync_each, perms=0o777 if mode == _EXEC else 0o644)
    finally:
        os.close(dir_fd)


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except FileNotFoundError:
        return False


def _link_atomic(dir_fd: int, name: str, target: bytes, *, tag: str) -> None:
    """Make a symbolic link of the folder ``dir_fd`` by a temporary name and rename it into place."""
    tmp = f".{name}{tag}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=dir_fd)  # left by a killed sync
    os.symlink(target, tmp, dir_fd=dir_fd)
    try:
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        os.unlink(tmp, dir_fd=dir_fd)
        raise


def _write_atomic(dir_fd: int, name: str, data: bytes, *, tag: str, sync: bool, perms: int = 0o644) -> None:
    """Write a file of the folder ``dir_fd`` by a temporary name and rename it into place (no half file is seen).

    ``perms``: the new file's permissions before the umask (0o777 for an executable, as git).
    """
    tmp = f".{name}{tag}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, perms, dir_fd=dir_fd)
    try:
        common.write_all(fd, data)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


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
        journal.unlink(missing_ok=True)  # the branch went elsewhere since: nothing of this move to finish
        return None
    modes: dict[str, int] = {}
    changes = store.tree_changes(old, new, modes=modes)
    if tip == old:
        _check_clean(store, old, changes)  # the user may have edited a file since the kill
    _apply(store, ref, old, new, changes, reflog, modes=modes)
    journal.unlink(missing_ok=True)
    return str(new)


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
