"""Which packs git's multi-pack index covers (its PNAM chunk), so am merges only the packs it does not.

A pack a multi-pack index names must stay as it is until git writes the
index again; a pack written after it (am's batches) is not in it, and is
merged and removed as in a repository without one. Format: git's
Documentation/gitformat-pack.txt, "multi-pack-index (MIDX) files have the
following format". An index this module cannot read, or an incremental chain
(``multi-pack-index.d/``), covers every pack: nothing is merged.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import struct
from itertools import pairwise
from pathlib import Path

__all__ = ["covered_packs"]

_HEADER = struct.Struct(">4sBBBBL")  # signature, version, hash version, chunks, base files, packs
_CHUNK = struct.Struct(">4sQ")
_PNAM = b"PNAM"


def covered_packs(pack_dir: Path, names: list[str]) -> set[str] | None:
    """Return the pack base names (``pack-<id>``) git's multi-pack index covers; None if it covers all or is unreadable.

    An empty set when there is no multi-pack index.
    """
    if "multi-pack-index.d" in names:
        return None
    if "multi-pack-index" not in names:
        return set()
    try:
        data = (pack_dir / "multi-pack-index").read_bytes()
        signature, version, _hash, chunks, bases, packs = _HEADER.unpack_from(data, 0)
        if signature != b"MIDX" or version != 1 or bases != 0:
            return None
        table = [_CHUNK.unpack_from(data, _HEADER.size + i * _CHUNK.size) for i in range(chunks + 1)]
        for (cid, start), (_next, end) in pairwise(table):
            if cid == _PNAM:
                found = [n.decode("utf-8") for n in data[start:end].split(b"\0") if n]
                if len(found) != packs:
                    return None
                return {n.removesuffix(".idx") for n in found}
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None
