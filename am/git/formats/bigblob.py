"""Large files (session logs) written to Git's object store before the commit that names them.

A write puts its objects in memory first and then in one pack (am/git/formats/packs.py):
right for records of a few kilobytes, but a 50 MB session log would be held
twice more while it is packed. Written here first, as a loose object through
libgit2's own store (compressed as it is written), the log is already in the
object store when the commit's write reaches it; the batch's object sink (am/git/formats/packs.py) is
told, and the caller names the blob in its change (``Change(..., blob=id)``): the write
uses that id and never hands the bytes to libgit2 again. (Handed a buffer, libgit2
copies all of it into a write stream before it asks whether the object exists:
measured, a second copy of a 50 MB log in the peak memory of ``am ingest``.) The
batch's pack holds only the small files. The loose object is flushed with the rest
of the write (one ``syncfs`` before the branch moves).

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import pygit2

if TYPE_CHECKING:
    from am.git.formats.packs import BatchObjects
    from am.git.values import Change

__all__ = ["LARGE", "blob_of", "store_blob"]

LARGE = 1 << 20  # files from this size on are written ahead, as loose objects


class Objects(Protocol):
    """What ``store_blob`` needs of a store (a GitStore): its repository and the batch's second handle."""

    @property
    def repo(self) -> pygit2.Repository: ...

    def _batch_objects(self) -> BatchObjects: ...


def store_blob(store: Objects, data: bytes) -> str:
    """Write ``data`` as a blob into the repository's object store (not the batch's); return its id."""
    oid = store.repo.create_blob(data)
    store._batch_objects().sink.ahead.add(oid)
    return str(oid)


def blob_of(change: Change, odb: pygit2.Repository, ahead: set[pygit2.Oid]) -> pygit2.Oid:
    """The blob of a change in a write: the one written ahead (named by the change), or written now."""
    if change.blob is not None and (oid := pygit2.Oid(hex=change.blob)) in ahead:
        # libgit2 would first copy the whole buffer into a write stream only to find it exists (measured:
        # +1x a 50 MB session log's size in the peak memory of am ingest, bench/bench_sessions.py).
        return oid
    return odb.create_blob(change.data)
