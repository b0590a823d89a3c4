"""The work tree's files of a branch move (am sync, am merge): checked clean first, then written.

A move writes only the files that change, each by a temporary name and a rename (no half file is
seen), executables with their execute bits and symbolic links as links where git would make them
(``Links``); a link that would leave the vault is written as a file holding its target, as git does
with ``core.symlinks=false``. ``check_clean`` refuses, changing nothing, when a file to be written
holds someone's uncommitted or staged edit. Used by ``am/git/remote.py``, which moves the branch.

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import pygit2

import am.git.common as common
from am.errors import DirtyFileError
from am.git.common import log
from am.git.incoming import link_inside
from am.git.program.catfile import STREAM_OVER, stream_blob
from am.git.values import hash_blob, hash_fd

if TYPE_CHECKING:
    from am.git.program.prewrite import Prewrite
    from am.git.store import GitStore

# Git's modes of a blob in a tree: a plain file, an executable, a symbolic link.
FILE_MODE, EXEC_MODE, LINK_MODE = 0o100644, 0o100755, 0o120000


def check_clean(store: GitStore, expected: str | None, changes: list[tuple[str, str | None]],
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
        on_disk = work_blob(os.path.join(root, path), path)
        if on_disk not in (old, new) and not (new is None and on_disk is None):
            raise DirtyFileError(f"{path} has uncommitted changes",
                                 hint="commit or discard them first (git add/commit or git checkout -- FILE), "
                                      f"then run {again}")
        if index.staged(path) not in (old, new):
            raise DirtyFileError(f"{path} has staged changes",
                                 hint="commit them first (git commit), or unstage them (git restore --staged FILE)")


def work_blob(full: str, path: str) -> str | None:
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
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise DirtyFileError(f"{path} is a folder in the work tree")
        return hash_fd(fd)  # a mebibyte at a time: a large file is never held whole
    finally:
        os.close(fd)


class Links:
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
            return bool(self.store.repo[self.expected].peel(pygit2.Tree)[path].filemode == LINK_MODE)
        except KeyError:
            return False


def write_files(store: GitStore, by_folder: dict[str, list[tuple[str, str | None, int]]], made: Mapping[str, bytes],
                 *, sync_each: bool, ahead: Prewrite | None, links: Links | None = None) -> None:
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
            (later.setdefault(folder, []) if new in listed and new not in made and mode == FILE_MODE
             else now).append(item)
        write_folder(store, folder, now, made, sync_each=sync_each, ahead=None, links=links)
    for folder, files in later.items():
        write_folder(store, folder, files, made, sync_each=sync_each, ahead=ahead, links=links)


def write_folder(store: GitStore, folder: str, files: list[tuple[str, str | None, int]], made: Mapping[str, bytes],
                  *, sync_each: bool, ahead: Prewrite | None, links: Links | None = None) -> None:
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
            if is_link(dir_fd, name) and not (links is not None and (mode == LINK_MODE or links.was_link(path))):
                raise DirtyFileError(f"{path} is a symbolic link; am will not write through it")
            if new is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=dir_fd)
            elif mode != FILE_MODE or ahead is None or not ahead.take(new, dir_fd, name):
                data = made.get(new)
                tag = f".am-{os.getpid()}.tmp"
                if data is None and store.blob_size(new) > STREAM_OVER:
                    if mode == LINK_MODE:  # no system makes a link of megabytes: what git writes, a file of it
                        log.warning("%s is a symbolic link of %d bytes: written as a file holding its target; the "
                                    "commit keeps it a link", path, store.blob_size(new))
                    stream_atomic(store, dir_fd, name, new, tag=tag, sync=sync_each,
                                  perms=0o777 if mode == EXEC_MODE else 0o644)
                    continue
                data = store.read_object(new) if data is None else data
                if mode == LINK_MODE and links is not None and links.enabled and link_inside(folder, data):
                    link_atomic(dir_fd, name, data, tag=tag)
                    continue
                if mode == LINK_MODE and links is not None and links.enabled:
                    log.warning("%s is a symbolic link to %r, outside the vault (or through .git): written as a "
                                "file holding its target, as git does without core.symlinks; the commit keeps "
                                "it a link", path, data.decode("utf-8", "replace"))
                write_atomic(dir_fd, name, data, tag=tag, sync=sync_each, perms=0o777 if mode == EXEC_MODE else 0o644)
    finally:
        os.close(dir_fd)


def is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except FileNotFoundError:
        return False


def link_atomic(dir_fd: int, name: str, target: bytes, *, tag: str) -> None:
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


def stream_atomic(store: GitStore, dir_fd: int, name: str, blob: str, *, tag: str, sync: bool,
                  perms: int = 0o644) -> None:
    """As ``write_atomic``, the bytes copied from the blob by ``git cat-file``, never held in memory (a large file)."""
    tmp = f".{name}{tag}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, perms, dir_fd=dir_fd)
    try:
        stream_blob(str(store.root), blob, fd)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def write_atomic(dir_fd: int, name: str, data: bytes, *, tag: str, sync: bool, perms: int = 0o644) -> None:
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
