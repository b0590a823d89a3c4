"""Git's index file (versions 2 and 3) kept as bytes and updated by splicing entries.

libgit2 re-serialises and re-hashes every entry on each write (~7 ms at 10k
files, ~35 ms at 50k). am changes a handful of entries per write, so it keeps
the index as one bytes object per entry, splices the changed ones in, and
writes the file back with one SHA-1 over its bytes: the cost of a write
becomes a memory copy and a hash. Entries are also kept joined in blocks of
``_BLOCK``, and a change re-joins only the blocks from its position on (the
entry count in the header changes the whole hash, so that is paid in full). What git's own writer does that matters for
safety is done here too:

* entries stay sorted by path bytes (then stage), as git compares them;
* the cached-tree extension (TREE) is invalidated along every changed path,
  exactly as git's ``cache_tree_invalidate_path`` does, so ``git commit`` and
  ``git write-tree`` never reuse a stale tree;
* racily clean entries (file time not older than the index being replaced)
  whose file no longer matches are "smudged" (size 0) so git re-hashes them;
* optional extensions other than TREE and REUC are dropped (git rebuilds
  them; libgit2 drops them too).

Anything else - index version 4 (compressed paths), a mandatory extension
(split index, sparse index), conflict stages, a checksum that is not SHA-1 -
makes :meth:`GitIndex.parse` return None, and the caller uses libgit2.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import hashlib
import operator
import os
import struct
import threading
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from am.git.values import hash_blob

__all__ = ["GitIndex", "IndexUnsupported"]

_HEADER = struct.Struct(">4sLL")
_STAT = struct.Struct(">10L20sH")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size, sha1, flags
_MODE_FILE = 0o100644
_NAME_MASK = 0x0FFF
_STAGE_MASK = 0x3000
_EXTENDED = 0x4000
_SIZE_AT = 36  # byte offset of the size field in an entry
_BLOCK = 512  # entries joined together; at 50k entries the file is ~100 blocks
_HASH_ASIDE = 1 << 20  # from this size the SHA-1 runs on a helper thread beside the write
_IOV_MAX = 1024  # buffers per writev (Linux's IOV_MAX)


class IndexUnsupported(Exception):
    """The index uses a feature this writer does not handle; use libgit2."""


def _entry_path(data: bytes, at: int, flags: int, extended: bool) -> tuple[bytes, int]:
    """Return the path of the entry at ``at`` and the offset just past it (padding included)."""
    start = at + 62 + (2 if extended else 0)
    length = flags & _NAME_MASK
    if length == _NAME_MASK:  # a long path: its length is where the NUL is
        length = data.index(b"\0", start) - start
    end = start + length
    # 1 to 8 NULs pad the entry to a multiple of eight bytes.
    size = ((end - at) + 8) & ~7
    return data[start:end], at + size


class _TreeNode:
    """One node of the TREE extension: a folder whose tree id git cached, or -1 when invalid."""

    __slots__ = ("name", "count", "oid", "children", "dumped")

    def __init__(self, name: bytes, count: int, oid: bytes | None) -> None:
        self.name = name
        self.count = count
        self.oid = oid
        self.children: list[_TreeNode] = []
        self.dumped: bytes | None = None  # this subtree's bytes, kept until something under it changes


def _parse_tree(data: bytes) -> _TreeNode:
    pos = 0

    def node() -> _TreeNode:
        nonlocal pos
        nul = data.index(b"\0", pos)
        name = data[pos:nul]
        newline = data.index(b"\n", nul)
        count_text, subtrees_text = data[nul + 1:newline].split(b" ")
        count, subtrees = int(count_text), int(subtrees_text)
        pos = newline + 1
        oid = None
        if count >= 0:
            oid = data[pos:pos + 20]
            pos += 20
        out = _TreeNode(name, count, oid)
        out.children = [node() for _ in range(subtrees)]
        return out

    root = node()
    if pos != len(data):
        raise IndexUnsupported("TREE extension has trailing bytes")
    return root


def _dump_tree(node: _TreeNode) -> bytes:
    """Return a subtree's bytes in pre-order; untouched subtrees reuse the bytes of the last dump."""
    if node.dumped is None:
        head = b"%s\0%d %d\n" % (node.name, node.count, len(node.children))
        if node.count >= 0 and node.oid is not None:
            head += node.oid
        node.dumped = head + b"".join(_dump_tree(child) for child in node.children)
    return node.dumped


def _invalidate(root: _TreeNode, path: bytes) -> None:
    """Mark every folder on ``path`` invalid, as git's cache_tree_invalidate_path does."""
    node = root
    parts = path.split(b"/")
    for i, part in enumerate(parts):
        node.count, node.oid, node.dumped = -1, None, None
        if i == len(parts) - 1:
            # A file where a folder was: git drops that folder's node.
            node.children = [c for c in node.children if c.name != part]
            return
        found = next((c for c in node.children if c.name == part), None)
        if found is None:
            return
        node = found


class GitIndex:
    """Git's index as sorted per-entry bytes, the kept extensions, and the entries that may be racily clean."""

    def __init__(self, version: int = 2) -> None:
        self.version = version
        self.paths: list[bytes] = []
        self.entries: list[bytes] = []
        self.tree: _TreeNode | None = None
        self.extensions: list[tuple[bytes, bytes]] = []  # kept verbatim (REUC)
        self.racy: set[bytes] = set()  # paths whose entry may be racily clean against the file it came from
        # entries[k * _BLOCK:(k + 1) * _BLOCK] joined; None (or missing) once changed.
        self._blocks: list[bytes | None] = []

    # ------------------------------------------------------------ reading

    @classmethod
    def parse(cls, data: bytes, mtime_ns: int | None = None, *,
              previous: tuple[GitIndex, int] | None = None) -> GitIndex:
        """Return the index held in ``data``; raise ValueError if damaged or torn, IndexUnsupported if unhandled.

        ``mtime_ns``, the index file's time, marks the entries that may be racily clean.

        ``previous`` is an index this process read or wrote earlier and the
        time of its file. Its blocks of entries found byte for byte at the
        same place in ``data`` are taken over instead of parsed again: when
        another am process wrote the index last, it usually changed a few
        entries near the end (today's folder), and parsing all of a 50k-entry
        index costs ~45 ms.
        """
        if len(data) < _HEADER.size + 20:
            raise ValueError("index file is too short")
        # git >= 2.40 with index.skipHash (set by feature.manyFiles) writes a zero trailer; git accepts it unchecked.
        if data[-20:] != bytes(20) and hashlib.sha1(memoryview(data)[:-20]).digest() != data[-20:]:
            raise ValueError("index checksum does not match (torn read or damaged file)")
        signature, version, count = _HEADER.unpack_from(data)
        if signature != b"DIRC":
            raise ValueError("not a Git index file")
        if version not in (2, 3):
            raise IndexUnsupported(f"index version {version}")
        out = cls(version)
        at, end = _HEADER.size, len(data) - 20
        newest = None if mtime_ns is None else struct.pack(
            ">LL", (mtime_ns // 1_000_000_000) & 0xFFFFFFFF, mtime_ns % 1_000_000_000)
        first = 0
        if previous is not None and newest is not None and mtime_ns is not None:
            first, at = out._take_blocks(previous[0], previous[1], data, mtime_ns, newest, count)
        # One pass with as little Python per entry as possible: this parse is
        # paid whenever another process wrote the index last (~50k entries).
        paths, entries = out.paths, out.entries
        add_path, add_entry = paths.append, entries.append
        racy: list[int] = []
        for i in range(first, count):
            if at + 62 > end:
                raise ValueError("index entries overrun the file")
            flags = (data[at + 60] << 8) | data[at + 61]
            if flags & _STAGE_MASK:
                raise IndexUnsupported("conflict entries")
            length = flags & _NAME_MASK
            if not flags & _EXTENDED and length != _NAME_MASK:
                path, nxt = data[at + 62:at + 62 + length], at + ((70 + length) & ~7)  # 1-8 NULs to a multiple of 8
            else:
                path, nxt = _entry_path(data, at, flags, bool(flags & _EXTENDED))
            add_path(path)
            add_entry(data[at:nxt])
            # git's racy-git rule: an entry whose file time is not older than the
            # index file's. Big-endian (seconds, nanoseconds) compare as bytes.
            if newest is not None and data[at + 8:at + 16] >= newest:
                racy.append(i)
            at = nxt
        if at > end:
            raise ValueError("index entries overrun the file")
        out.racy.update(paths[i] for i in racy)
        while at < end:
            sig, size = struct.unpack_from(">4sL", data, at)
            body = data[at + 8:at + 8 + size]
            at += 8 + size
            if not (b"A"[0] <= sig[0] <= b"Z"[0]):
                raise IndexUnsupported(f"mandatory extension {sig!r}")
            if sig == b"TREE":
                out.tree = _parse_tree(body) if body else None
            elif sig == b"REUC":
                out.extensions.append((sig, body))
            # Other optional extensions (UNTR, FSMN, EOIE, IEOT) describe the
            # old file; git rebuilds them and skipping them is allowed.
        if at != end:
            raise ValueError("index extensions overrun the file")
        # After the extensions: a split index (a mandatory one) has entries with empty names.
        # Entries taken over from ``previous`` were checked when it was read.
        if not all(map(operator.lt, islice(paths, max(0, first - 1), None), islice(paths, max(1, first), None))):
            raise ValueError("index entries are not sorted")
        return out

    def _take_blocks(self, previous: GitIndex, previous_ns: int, data: bytes, mtime_ns: int, newest: bytes,
                     count: int) -> tuple[int, int]:
        """Take over ``previous``'s leading blocks of entries that ``data`` holds unchanged; return (entries, offset).

        Entries are self-delimiting, so a block found byte for byte at the same
        offset is the same entries. An entry that was not racily clean against
        ``previous``'s file (older than it) is not against a newer file either;
        the ones that were are checked again against ``mtime_ns``.
        """
        at = _HEADER.size
        if previous.version != self.version or mtime_ns < previous_ns:
            return 0, at
        blocks = previous._filled_blocks()[:len(previous.entries) // _BLOCK]  # whole blocks only
        taken = 0
        for block in blocks:
            if taken + _BLOCK > count or not data.startswith(block, at):
                break
            at += len(block)
            taken += _BLOCK
        if not taken:
            return 0, _HEADER.size
        self.paths = previous.paths[:taken]
        self.entries = previous.entries[:taken]
        self._blocks = list(blocks[:taken // _BLOCK])
        for key in previous.racy:
            i = bisect_left(self.paths, key)
            if i < taken and self.paths[i] == key and self.entries[i][8:16] >= newest:
                self.racy.add(key)
        return taken, at

    def _filled_blocks(self) -> list[bytes]:
        """The entries joined in blocks of ``_BLOCK`` (the last one may be shorter); only changed blocks are joined again."""
        blocks, entries = self._blocks, self.entries
        count = -(-len(entries) // _BLOCK)
        del blocks[count:]
        for k in range(count):
            if k == len(blocks):
                blocks.append(None)
            if blocks[k] is None:
                blocks[k] = b"".join(entries[k * _BLOCK:(k + 1) * _BLOCK])
        return blocks  # type: ignore[return-value]  # every block was just filled

    @classmethod
    def read(cls, path: Path, *, previous: tuple[GitIndex, int] | None = None) -> tuple[GitIndex, int]:
        """Return the index file at ``path`` (empty if missing) and its mtime in ns (0 if missing); see ``parse``."""
        try:
            with open(path, "rb") as handle:
                st = os.fstat(handle.fileno())
                data = handle.read()
        except FileNotFoundError:
            return cls(), 0
        return cls.parse(data, st.st_mtime_ns, previous=previous), st.st_mtime_ns

    def __len__(self) -> int:
        return len(self.paths)

    def staged(self, path: str) -> str | None:
        """Return the blob id staged for ``path`` (hex), or None if it is not in the index."""
        key = path.encode()
        i = bisect_left(self.paths, key)
        if i < len(self.paths) and self.paths[i] == key:
            return self.entries[i][40:60].hex()
        return None

    # ------------------------------------------------------------ changing

    def set(self, path: str, oid: bytes, st: os.stat_result) -> None:
        """Put a regular-file entry for ``path`` with blob ``oid`` (20 bytes) and the file's stat data."""
        self.set_many([(path, oid, st)])

    def set_many(self, items: Sequence[tuple[str, bytes, os.stat_result]], *,
                 modes: Mapping[str, int] | None = None) -> None:
        """Put regular-file entries (path, blob id of 20 bytes, the file's stat data); a later one of a path wins.

        ``modes``: Git's mode of the paths that are not plain 100644 files
        (100755, or 120000 for a symbolic link, whose stat data is the link's own).

        New paths are merged in with one pass of slices over the sorted
        entries, not inserted one by one: an insertion moves every entry after
        it, and a bulk import's batch of 1,600 new files into a 100k-entry
        index cost ~0.35 s that way, growing with the vault.
        """
        made: dict[bytes, bytes] = {}
        for path, oid, st in items:
            key = path.encode()
            if len(oid) != 20:
                raise ValueError("a blob id is 20 bytes")
            length = min(len(key), _NAME_MASK)
            head = _STAT.pack(
                int(st.st_ctime) & 0xFFFFFFFF, st.st_ctime_ns % 1_000_000_000,
                int(st.st_mtime) & 0xFFFFFFFF, st.st_mtime_ns % 1_000_000_000,
                st.st_dev & 0xFFFFFFFF, st.st_ino & 0xFFFFFFFF, modes.get(path, _MODE_FILE) if modes else _MODE_FILE,
                st.st_uid & 0xFFFFFFFF, st.st_gid & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF, oid, length)
            body = head + key
            made[key] = body + b"\0" * (8 - len(body) % 8)
        paths, entries = self.paths, self.entries
        added: list[tuple[int, bytes]] = []  # (position in the old entries, key), in key order
        for key in sorted(made):
            i = bisect_left(paths, key)
            if i < len(paths) and paths[i] == key:
                entries[i] = made[key]
                self._changed(key, i, shifted=False)
            else:
                added.append((i, key))
        if not added:
            return
        new_paths: list[bytes] = paths[:added[0][0]]
        new_entries: list[bytes] = entries[:added[0][0]]
        for n, (i, key) in enumerate(added):
            new_paths.append(key)
            new_entries.append(made[key])
            end = added[n + 1][0] if n + 1 < len(added) else len(paths)
            new_paths += paths[i:end]
            new_entries += entries[i:end]
        self.paths, self.entries = new_paths, new_entries
        self._dirty(added[0][0], shifted=True)
        for _, key in added:
            self._changed(key, 0, shifted=False, blocks=False)

    def remove(self, path: str) -> None:
        """Drop the entry of ``path`` if there is one."""
        key = path.encode()
        i = bisect_left(self.paths, key)
        if i < len(self.paths) and self.paths[i] == key:
            del self.paths[i]
            del self.entries[i]
            self._changed(key, i, shifted=True)

    def _dirty(self, at: int, *, shifted: bool) -> None:
        """Drop the joined block holding entry ``at`` (and every later one if the entries after it moved)."""
        k = at // _BLOCK
        if shifted:
            del self._blocks[k:]
        elif k < len(self._blocks):
            self._blocks[k] = None

    def _changed(self, key: bytes, at: int, *, shifted: bool, blocks: bool = True) -> None:
        if blocks:
            self._dirty(at, shifted=shifted)
        if self.tree is not None:
            _invalidate(self.tree, key)
        # The new stat data may be as new as the index file about to be written.
        self.racy.add(key)

    def smudge_racy(self, root: Path, index_mtime_ns: int) -> int:
        """Zero the size of racily clean entries whose file changed, so git re-hashes them; return how many.

        ``index_mtime_ns`` is the time of the index file being replaced. An
        entry whose file time is not older than that may hide an edit made in
        the same clock tick; once the new (later) index is written, git would
        trust its stat data. git's writer does the same check.
        """
        smudged = 0
        still: set[bytes] = set()
        whole, frac = (index_mtime_ns // 1_000_000_000) & 0xFFFFFFFF, index_mtime_ns % 1_000_000_000
        for key in self.racy:
            i = bisect_left(self.paths, key)
            if i >= len(self.paths) or self.paths[i] != key:
                continue
            entry = self.entries[i]
            if struct.unpack_from(">LL", entry, 8) < (whole, frac):
                continue  # older than the index it was written with: git's stat check is enough
            if struct.unpack_from(">L", entry, 24)[0] >> 12 != 0o10:
                continue  # a symbolic link or submodule: git checks those its own way
            try:
                matches = hash_blob((root / key.decode()).read_bytes()) == entry[40:60].hex()
            except (OSError, UnicodeDecodeError):
                matches = False
            if not matches:
                self.entries[i] = entry[:_SIZE_AT] + b"\0\0\0\0" + entry[_SIZE_AT + 4:]
                self._dirty(i, shifted=False)
                smudged += 1
            else:
                still.add(key)
        self.racy = still
        return smudged

    # ------------------------------------------------------------ writing

    def _parts(self) -> list[bytes]:
        """Return the file as pieces (header, entries, extensions) without its SHA-1 trailer, copying no entry twice."""
        parts: list[bytes] = [_HEADER.pack(b"DIRC", self.version, len(self.entries))]
        parts += self._filled_blocks()
        if self.tree is not None:
            tree = _dump_tree(self.tree)
            parts.append(struct.pack(">4sL", b"TREE", len(tree)))
            parts.append(tree)
        for sig, body in self.extensions:
            parts.append(struct.pack(">4sL", sig, len(body)))
            parts.append(body)
        return parts

    def to_bytes(self) -> bytes:
        """Return the whole index file: header, entries, extensions and the SHA-1 trailer."""
        parts = self._parts()
        digest = hashlib.sha1()
        for part in parts:
            digest.update(part)
        return b"".join(parts) + digest.digest()

    def write(self, path: Path, *, sync: bool = True, early: Callable[[int], None] | None = None) -> None:
        """Write the index to ``path`` (a temporary file the caller renames into place), flushed unless told not to.

        ``early``, called with the file's descriptor once it is written,
        may start its flush (the caller's later sync finishes it).
        """
        parts = self._parts()
        digest = hashlib.sha1()
        hasher = None
        if sum(map(len, parts)) >= _HASH_ASIDE:
            # hashlib lets go of the GIL on large buffers: hash on a second core while this one writes.
            hasher = threading.Thread(target=_hash_into, args=(digest, parts), name="am-index-hash")
            hasher.start()
        else:
            _hash_into(digest, parts)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, parts)
            if hasher is not None:
                hasher.join()
                hasher = None
            _write_all(fd, [digest.digest()])
            if sync:
                os.fsync(fd)
            elif early is not None:
                early(fd)
        finally:
            if hasher is not None:
                hasher.join()
            os.close(fd)


def _hash_into(digest: Any, parts: Sequence[bytes]) -> None:
    for part in parts:
        digest.update(part)


def _write_all(fd: int, parts: Sequence[bytes]) -> None:
    """Write every part, in order, with few system calls."""
    pending = [memoryview(p) for p in parts if p]
    if not hasattr(os, "writev"):  # Windows
        for view in pending:
            while view:
                view = view[os.write(fd, view):]
        return
    while pending:
        done = os.writev(fd, pending[:_IOV_MAX])
        while done:
            head = pending[0]
            if done >= len(head):
                done -= len(head)
                pending.pop(0)
            else:
                pending[0] = head[done:]
                done = 0
