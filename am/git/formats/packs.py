"""A batch's Git objects written as one pack file, and am's small packs merged as they pile up.

A batch of eight commits is 56 new objects (a blob, five trees and a commit
each). Written through the repository's own object database, each cost
~0.3 ms at 50k facts (cProfile): libgit2 first checks that the object is not
there yet, a miss makes it re-scan the pack folder, and then the object is a
file of its own. The batch's objects are instead caught in memory
(``PackSink``, an object-database backend that libgit2 writes to) and written
as one pack and its index (Git's pack format, version 2), as
``git fast-import`` and ``git receive-pack`` do.

Durability follows git's ``core.fsyncMethod=batch``: the pack and its index are
written to temporary files, the caller flushes the file system (one syncfs),
and only then are they renamed into place, before the branch moves. Without
syncfs each file is fsynced before its rename.

Every batch adds a pack, so once ``TIDY_AT`` packs break a geometric
progression, ``tidy`` (asked after every batch) merges the small ones back
into one, as ``git repack --geometric=2`` does: each pack at least twice the size of all
smaller ones together. A vault so holds a few dozen packs at most, and each
object is copied a handful of times over its life (simulated: over 6,000
batches, a merge every 7.4 batches, never more than 14 packs at once, each
object copied 6.5 times).
A pack's entries are copied byte for byte (an offset delta whose base moved
gets its new distance); packs with a ``.keep`` file, cruft
and promisor packs, packs over ``_MERGE_MAX`` and every pack
a multi-pack index covers are left to git (am/git/formats/midx.py).

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import pygit2

from am.git.common import _fsync_dir, log, write_all
from am.git.formats.midx import covered_packs

_IDX_MAGIC = b"\xfftOc"
_WHOLE = frozenset({1, 2, 3, 4})  # commit, tree, blob, tag: an entry's type bits (6 and 7 are deltas)
_OFS_DELTA = 6  # a delta whose base is given by its distance back in the pack
_REF_DELTA = 7  # a delta whose base is given by its id
# An object smaller than this is never stored as a delta (a folder of a handful of entries).
_DELTA_MIN = 512
# At most this many deltas on top of a whole object: a reader applies them all.
_DELTA_DEPTH = 16
_LARGE = 0x80000000
# Packs larger than this are never read in to be merged (git's own packs, after a gc), and
# no merge reads more than this in all.
_MERGE_MAX = 64 * 1024 * 1024
# Packs are merged once at least this many of them break the geometric
# progression: a merge costs three fsyncs and a dozen unlinks, so it is not
# worth it for two small packs.
TIDY_AT = 8
# A temporary pack file this old belongs to no running write (a batch takes milliseconds).
_STALE = 3600.0


class PackSink(pygit2.OdbBackend):
    """An object-database backend that keeps what libgit2 writes in memory, until ``take``, over the real one.

    am's tree writer (am/git/formats/trees.py) puts its trees in ``objects`` directly.

    Reads of anything not written here go to ``store`` (the repository's own
    object database). ``exists`` answers for this backend's objects only: libgit2
    asks it before every write, and a miss in the real database makes libgit2
    re-scan the pack folder (~0.35 ms an object, measured); an object written
    again that the repository already has only costs a few bytes in the pack.
    """

    def __init__(self, store: pygit2.Odb) -> None:
        super().__init__()
        self.store = store
        self.objects: dict[pygit2.Oid, tuple[int, bytes]] = {}
        # Large files already written to the real database (am/git/formats/bigblob.py): ``exists`` says so, and
        # libgit2 then skips writing them again (it asks before every write), so they are not held here.
        self.ahead: set[pygit2.Oid] = set()
        # raw id -> raw id of the object it replaces (the same folder's tree before a
        # change): a hint for ``stage_pack``, which stores the new one as a delta.
        self.bases: dict[bytes, bytes] = {}

    def read_cb(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        found = self.objects.get(oid)
        if found is not None:
            return found
        kind, data = self.store.read(oid)  # NotFoundError (a KeyError): not anywhere
        return int(kind), data

    def read_header_cb(self, oid: pygit2.Oid) -> tuple[int, int]:
        found = self.objects.get(oid)
        if found is not None:
            return found[0], len(found[1])
        kind, size = self.store.read_header(oid)
        return int(kind), size

    def read_prefix_cb(self, short: str) -> tuple[int, bytes, pygit2.Oid]:
        raise KeyError(short)  # am looks objects up by their full id

    def exists_cb(self, oid: pygit2.Oid) -> bool:
        return oid in self.objects or oid in self.ahead

    def exists_prefix_cb(self, short: str) -> pygit2.Oid:
        raise KeyError(short)

    def refresh_cb(self) -> None:
        pass  # the real database looks for new packs itself when a read misses

    def write_cb(self, oid: pygit2.Oid, data: bytes, kind: int) -> None:
        self.objects[oid] = (kind, data)

    def take(self) -> tuple[list[tuple[bytes, int, bytes]], dict[bytes, bytes]]:
        """Hand over what was written since the last ``take``, as (raw id, type, data), and the ``bases``; forget both."""
        taken = [(oid.raw, kind, data) for oid, (kind, data) in self.objects.items()]
        bases = self.bases
        self.objects.clear()
        self.bases = {}
        return taken, bases

    def clear(self) -> None:
        """Forget what a batch that failed before its pack was written left here."""
        self.objects.clear()
        self.bases = {}


@dataclass
class BatchObjects:
    """A second handle on a repository whose new objects go to a ``PackSink`` instead of loose files."""

    repo: pygit2.Repository
    sink: PackSink
    pack_dir: Path


def objects_dir(gitdir: Path) -> Path:
    """The object folder of a repository: its own, or for a linked worktree the main repository's (``commondir``)."""
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return gitdir / "objects"
    return (gitdir / common) / "objects"  # an absolute commondir replaces gitdir here


def open_batch_repo(gitdir: Path) -> BatchObjects:
    """Open ``gitdir`` again with an object database that is only a ``PackSink`` over the real one.

    The real one (``pygit2.Odb`` on ``objects/``) reads loose objects, packs and
    alternates as libgit2 always does; every write lands in the sink.
    """
    objects = objects_dir(gitdir)
    repo = pygit2.Repository(str(gitdir), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    odb = pygit2.Odb()
    sink = PackSink(pygit2.Odb(str(objects)))
    odb.add_backend(sink, 1)
    repo.set_odb(odb)
    (objects / "pack").mkdir(exist_ok=True)
    return BatchObjects(repo, sink, objects / "pack")


def _entry_header(kind: int, size: int) -> bytes:
    """The type-and-size header of a pack entry: 3 bits of type, the size in little-endian groups of 7 bits."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _index(entries: list[tuple[bytes, int, int]], pack_sum: bytes) -> bytes:
    """A version-2 pack index for (raw id, crc32, offset) entries."""
    entries = sorted(entries)
    fanout = [0] * 256
    for raw, _crc, _offset in entries:
        fanout[raw[0]] += 1
    total = 0
    for i in range(256):
        total += fanout[i]
        fanout[i] = total
    n = len(entries)
    if any(offset >= _LARGE for _, _, offset in entries):
        # Would need the index's table of 8-byte offsets; am's packs are a batch, or merges of at most _MERGE_MAX.
        raise ValueError("am does not write packs over 2 GiB")
    body = b"".join((
        _IDX_MAGIC, struct.pack(">I", 2), struct.pack(">256I", *fanout),
        b"".join(raw for raw, _, _ in entries),
        struct.pack(f">{n}I", *(crc for _, crc, _ in entries)),
        struct.pack(f">{n}I", *(offset for _, _, offset in entries)),
        pack_sum,
    ))
    return body + hashlib.sha1(body).digest()


@dataclass
class PendingPack:
    """A pack and its index written to temporary files, to be renamed into place by ``install``."""

    pack_dir: Path
    name: str
    tmp_pack: Path
    tmp_idx: Path

    def install(self, *, sync: bool) -> None:
        """Rename the pack, then its index (readers find a pack by its index), into place."""
        os.replace(self.tmp_pack, self.pack_dir / f"{self.name}.pack")
        os.replace(self.tmp_idx, self.pack_dir / f"{self.name}.idx")
        if sync:
            _fsync_dir(self.pack_dir)

    def discard(self) -> None:
        for tmp in (self.tmp_pack, self.tmp_idx):
            tmp.unlink(missing_ok=True)

    def whole(self) -> bool:
        """Whether both temporary files are there and whole: the pack's trailer is its SHA-1 and names it, and
        the index's trailers hold the pack's checksum and its own (what a crash of the machine could tear)."""
        try:
            pack, idx = self.tmp_pack.read_bytes(), self.tmp_idx.read_bytes()
        except OSError:
            return False
        return (len(pack) > 32 and len(idx) > 40 and pack[-20:].hex() == self.name.removeprefix("pack-")
                and hashlib.sha1(pack[:-20]).digest() == pack[-20:] and idx[-40:-20] == pack[-20:]
                and hashlib.sha1(idx[:-20]).digest() == idx[-20:])


def _write_new(path: Path, data: bytes, *, sync: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)  # git's packs are read-only
    try:
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _stage(pack_dir: Path, count: int, bodies: list[bytes], entries: list[tuple[bytes, int, int]],
           *, sync: bool) -> PendingPack:
    """Write a pack of ``count`` entries (their bytes in ``bodies``) and its index to temporary files."""
    pack = b"".join([b"PACK", struct.pack(">II", 2, count), *bodies])
    pack_sum = hashlib.sha1(pack).digest()
    tag = os.urandom(6).hex()  # not the secrets module: it imports hmac and random (~15 ms a process)
    pending = PendingPack(pack_dir, f"pack-{pack_sum.hex()}", pack_dir / f"tmp_pack_am_{tag}",
                          pack_dir / f"tmp_idx_am_{tag}")
    try:
        _write_new(pending.tmp_pack, pack + pack_sum, sync=sync)
        _write_new(pending.tmp_idx, _index(entries, pack_sum), sync=sync)
    except BaseException:
        pending.discard()
        raise
    return pending


def stage_pack(pack_dir: Path, objects: list[tuple[bytes, int, bytes]], *, sync: bool,
               bases: dict[bytes, bytes] | None = None) -> PendingPack:
    """Write (raw id, type, data) objects, in this order, as one pack and index in temporary files of ``pack_dir``.

    The objects are zlib-compressed at level 1, as libgit2 writes loose
    objects. An object whose ``bases`` entry names an object earlier in the
    list is stored as a delta of it (an offset delta, as git's own packs are)
    when that is much smaller: a batch's commits each write the folder of the
    day again with one more entry, so all but the first of its versions shrink
    to a few dozen bytes. ``sync`` fsyncs both files (when no syncfs follows).
    """
    offset = 12
    bodies: list[bytes] = []
    entries: list[tuple[bytes, int, int]] = []
    placed: dict[bytes, tuple[int, bytes, int]] = {}  # raw id -> (offset, data, delta depth)
    for raw, kind, data in objects:
        depth = 0
        body = None
        base = placed.get(bases.get(raw, b"")) if bases and len(data) >= _DELTA_MIN else None
        if base is not None and base[2] < _DELTA_DEPTH:
            delta = make_delta(base[1], data)
            if 2 * len(delta) < len(data):
                body = _entry_header(_OFS_DELTA, len(delta)) + _ofs_distance(offset - base[0]) + zlib.compress(delta, 1)
                depth = base[2] + 1
        if body is None:
            body = _entry_header(kind, len(data)) + zlib.compress(data, 1)
        placed[raw] = (offset, data, depth)
        entries.append((raw, zlib.crc32(body), offset))
        bodies.append(body)
        offset += len(body)
    return _stage(pack_dir, len(objects), bodies, entries, sync=sync)


def _ofs_distance(distance: int) -> bytes:
    """An offset delta's distance back to its base, in git's encoding (big-endian groups of 7 bits, each but the last plus one)."""
    out = bytearray([distance & 0x7F])
    distance >>= 7
    while distance:
        distance -= 1
        out.append(0x80 | (distance & 0x7F))
        distance >>= 7
    out.reverse()
    return bytes(out)


def _read_distance(data: bytes, at: int) -> tuple[int, int]:
    """Decode an offset delta's distance at ``at``; return it and the offset just past it."""
    byte = data[at]
    at += 1
    distance = byte & 0x7F
    while byte & 0x80:
        byte = data[at]
        at += 1
        distance = ((distance + 1) << 7) | (byte & 0x7F)
    return distance, at


def _varint(n: int) -> bytes:
    """A size in a delta's header: little-endian groups of 7 bits."""
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if not n:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def _common_prefix(a: bytes, b: bytes, limit: int) -> int:
    """The length of the longest common prefix of ``a`` and ``b``, at most ``limit``: slices compared in C."""
    at, step = 0, 4096
    while step:
        while at + step <= limit and a[at:at + step] == b[at:at + step]:
            at += step
        step >>= 2
    return at


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``limit`` (as ``_common_prefix``)."""
    at, step, end_a, end_b = 0, 4096, len(a), len(b)
    while step:
        while at + step <= limit and a[end_a - at - step:end_a - at] == b[end_b - at - step:end_b - at]:
            at += step
        step >>= 2
    return at


def make_delta(source: bytes, target: bytes) -> bytes:
    """A git delta that makes ``target`` from ``source``: copy their common prefix and suffix, insert the rest.

    Enough for a tree with a few entries changed next to each other (one
    more fact in a folder). Copies are at most 64 KiB each, as git itself
    wrote them for years, so every reader takes them.
    """
    limit = min(len(source), len(target))
    head = _common_prefix(source, target, limit)
    tail = _common_suffix(source, target, limit - head)
    out = bytearray(_varint(len(source)) + _varint(len(target)))
    _copy(out, 0, head)
    middle = target[head:len(target) - tail]
    for at in range(0, len(middle), 0x7F):
        chunk = middle[at:at + 0x7F]
        out.append(len(chunk))
        out += chunk
    _copy(out, len(source) - tail, tail)
    return bytes(out)


def _copy(out: bytearray, offset: int, size: int) -> None:
    """Append copy instructions for ``size`` bytes of the source from ``offset``."""
    while size:
        step = min(size, 0x10000)
        op = 0x80
        args = bytearray()
        for i in range(4):
            byte = (offset >> (8 * i)) & 0xFF
            if byte:
                op |= 1 << i
                args.append(byte)
        for i in range(3):
            byte = (step >> (8 * i)) & 0xFF
            if byte:
                op |= 0x10 << i
                args.append(byte)
        out.append(op)
        out += args
        offset += step
        size -= step


# ------------------------------------------------------------ merging small packs


@dataclass
class _Packed:
    """What a merge needs of one pack: its entries' ids, CRCs and offsets, and the bytes between header and trailer."""

    ids: list[bytes]
    crcs: tuple[int, ...]
    offsets: tuple[int, ...]
    body: bytes


def _read_pack(pack_dir: Path, name: str) -> _Packed | None:
    """Read a pack and its index, or None if either is gone, not version 2, or they do not belong together."""
    try:
        idx = (pack_dir / f"{name}.idx").read_bytes()
        pack = (pack_dir / f"{name}.pack").read_bytes()
    except OSError:
        return None  # removed meanwhile (a git gc): leave it
    if idx[:8] != _IDX_MAGIC + struct.pack(">I", 2) or pack[:8] != b"PACK" + struct.pack(">I", 2):
        return None
    n = struct.unpack_from(">I", idx, 8 + 255 * 4)[0]
    ids_at = 8 + 256 * 4
    crc_at = ids_at + 20 * n
    off_at = crc_at + 4 * n
    if (len(idx) != off_at + 4 * n + 40 or idx[-40:-20] != pack[-20:]
            or struct.unpack_from(">I", pack, 8)[0] != n):
        return None  # large offsets (a pack over 2 GiB), or a damaged pair: not am's to touch
    return _Packed([idx[i:i + 20] for i in range(ids_at, crc_at, 20)], struct.unpack_from(f">{n}I", idx, crc_at),
                   struct.unpack_from(f">{n}I", idx, off_at), pack[12:-20])


def _entries_without(packed: _Packed, placed: dict[bytes, int],
                     at: int) -> list[tuple[bytes, int, int, bytes]] | None:
    """A pack's entries but those in ``placed``, in pack order, as (raw id, crc32, new offset, bytes) from ``at``.

    ``placed`` gives the merged pack's offset of every object already in it.
    An offset delta gets the distance to its base's new place (its base was
    either copied just before, or placed earlier); its CRC is computed again.
    None if an entry's base cannot be found.
    """
    order = sorted(range(len(packed.ids)), key=packed.offsets.__getitem__)
    ends = [packed.offsets[i] - 12 for i in order[1:]] + [len(packed.body)]
    by_offset = {packed.offsets[i]: packed.ids[i] for i in order}
    ids = set(packed.ids)
    local: dict[bytes, int] = {}
    out = []
    for i, end in zip(order, ends):
        raw = packed.ids[i]
        if raw in placed:
            continue
        piece, crc = packed.body[packed.offsets[i] - 12:end], packed.crcs[i]
        kind = (piece[0] >> 4) & 7
        header_end = 1
        while piece[header_end - 1] & 0x80:
            header_end += 1
        if kind == _OFS_DELTA:
            distance, after = _read_distance(piece, header_end)
            base = by_offset.get(packed.offsets[i] - distance)
            if base is None:
                return None
            base_at = local.get(base, placed.get(base))
            if base_at is None:
                return None
            piece = piece[:header_end] + _ofs_distance(at - base_at) + piece[after:]
            crc = zlib.crc32(piece)
        elif kind == _REF_DELTA:
            if piece[header_end:header_end + 20] not in ids and piece[header_end:header_end + 20] not in placed:
                return None
        elif kind not in _WHOLE:
            return None
        local[raw] = at
        out.append((raw, crc, at, piece))
        at += len(piece)
    return out


def _remove_stale_temporaries(pack_dir: Path, names: list[str]) -> None:
    """Remove am's temporary pack files left by a process killed mid-write (older than ``_STALE``)."""
    now = time.time()
    for n in names:
        if n.startswith(("tmp_pack_am_", "tmp_idx_am_")):
            try:
                if now - (pack_dir / n).stat().st_mtime > _STALE:
                    (pack_dir / n).unlink()
            except FileNotFoundError:
                pass


def _geometric_split(sizes: list[int]) -> int:
    """How many of the smallest packs (``sizes`` ascending) to merge so that the rest double at each step.

    The rule of ``git repack --geometric=2``.
    """
    split = 0
    for i in range(len(sizes) - 1, 0, -1):
        if sizes[i] < 2 * sizes[i - 1]:
            split = i + 1
            break
    total = sum(sizes[:split])
    while split < len(sizes) and 2 * total > sizes[split]:
        total += sizes[split]
        split += 1
    return split


def _mergeable(pack_dir: Path, names: list[str]) -> list[tuple[int, str]]:
    """The packs a merge may take, as (size, name) from the smallest; never one a multi-pack index covers."""
    covered = covered_packs(pack_dir, names)
    if covered is None:
        return []
    present = set(names)
    sized: list[tuple[int, str]] = []
    for n in names:
        if not (n.startswith("pack-") and n.endswith(".idx")):
            continue
        base = n[:-4]
        if base in covered:
            continue  # git's multi-pack index names it: git's to repack
        if any(f"{base}{suffix}" in present for suffix in (".keep", ".promisor", ".mtimes")):
            continue  # kept, from a partial clone's promisor, or a cruft pack of git gc: git's to manage
        try:
            size = (pack_dir / f"{base}.pack").stat().st_size
        except FileNotFoundError:
            continue
        if size <= _MERGE_MAX:
            sized.append((size, base))
    sized.sort()
    return sized


def tidy(pack_dir: Path, *, least: int = 2) -> int:
    """Merge small packs into one if at least ``least`` break the geometric progression; return how many were.

    Deciding costs one listing of the folder and a stat a pack. The merged
    pack is fsynced and in place before any pack it replaces is removed
    (each pack's index first, so no reader finds an index without its pack).
    The caller holds the vault's write lock, so no other am process merges or
    writes a pack meanwhile; a pack that vanishes meanwhile (git gc) is skipped.
    """
    try:
        names = os.listdir(pack_dir)
    except FileNotFoundError:
        return 0
    _remove_stale_temporaries(pack_dir, names)
    sized = _mergeable(pack_dir, names)
    split = _geometric_split([s for s, _ in sized])
    while split > 2 and sum(s for s, _ in sized[:split]) > _MERGE_MAX:
        split -= 1
    if split < max(2, least):
        return 0
    # A pack's entries are copied as one run of bytes, so offsets only shift (a delta's
    # base, even one given by offset, stays at the same distance). A pack may not hold
    # an object twice: a pack sharing objects with those taken before it (a batch wrote
    # again what the repository had: the same file content twice, a folder back as it
    # was) is copied entry by entry without them, its offset deltas pointed at their
    # bases' new places.
    placed: dict[bytes, int] = {}  # raw id -> offset in the merged pack
    sources: list[str] = []
    bodies: list[bytes] = []
    entries: list[tuple[bytes, int, int]] = []
    at = 12
    for _size, base in sized[:split]:
        packed = _read_pack(pack_dir, base)
        if packed is None:
            continue
        if placed.keys().isdisjoint(packed.ids):
            moved = [o - 12 + at for o in packed.offsets]
            entries += zip(packed.ids, packed.crcs, moved)
            placed.update(zip(packed.ids, moved))
            bodies.append(packed.body)
            at += len(packed.body)
        else:
            pieces = _entries_without(packed, placed, at)
            if pieces is None:
                continue
            for raw, crc, offset, piece in pieces:
                entries.append((raw, crc, offset))
                placed[raw] = offset
                bodies.append(piece)
                at += len(piece)
        sources.append(base)
    if len(sources) < 2:
        return 0
    pending = _stage(pack_dir, len(entries), bodies, entries, sync=True)
    if pending.name in sources:
        sources.remove(pending.name)  # the same objects as one source: that file stays
    pending.install(sync=True)
    present = set(names)  # the sources' files were all listed above
    for base in sources:
        for suffix in (".idx", ".pack", ".rev", ".bitmap"):
            if f"{base}{suffix}" not in present:
                continue
            try:
                (pack_dir / f"{base}{suffix}").unlink()
            except FileNotFoundError:
                pass
            except OSError as err:
                log.warning("could not remove %s%s after merging it: %s", base, suffix, err)
    return len(sources)

