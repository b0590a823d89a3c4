"""The one way a record reaches Git: checked, rendered, committed, and handed to the cache.

``RecordWriter`` is what the facade hands the write floor: the vault's ``RecordFiles`` (folder, store,
settings, cache; am/cache/recordfiles.py) and its ``Authorship``. ``write`` checks each record (schema,
secrets, size, the vault's format), renders it (am/writes/forms.py), and commits the batch as one
commit through the store's group commit; ``after_write`` brings the cache up to date from it.

An update (supersede, status, expire) is a compare-and-swap on the record's blob: its base
(``existing_for_update``) is the blob id of exactly the bytes it parsed, checked against HEAD's
version, so a record another writer changed after it was read is never overwritten with an update
of the old version; the loser is run again on the new version (``retrying``, issue 14).

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import (
    CollisionError,
    ConflictError,
    DirtyFileError,
    InvalidRecordError,
    PathTakenError,
    UsageError,
)
from am.git import Change, hash_blob
from am.records.codec import MAX_RECORD_BYTES, decode_record_bytes, parse_record
from am.records.model import Record
from am.records.writes import WriteResult, check_no_secret, check_to_write
from am.writes.formats import check_format
from am.writes.forms import check_names_free, render_for_write
from am.writes.lookup import get_typed

if TYPE_CHECKING:
    from am.cache.recordfiles import RecordFiles
    from am.writes.authorship import Authorship

__all__ = ["RecordWriter"]

log = logging.getLogger("am")


class RecordWriter:
    """A vault's writes: the files they read and replace, who makes them, and what is in flight."""

    def __init__(self, files: RecordFiles, authorship: Authorship) -> None:
        self.files = files
        self.store = files.store
        self.authorship = authorship
        # What this vault's writes in flight rendered: by path, the bytes and the record (read by the cache).
        self.known: dict[str, tuple[bytes, Record]] = {}
        # Topic ids found at their own path, with that file's stat data then (am/writes/facts.py).
        self.topics_seen: dict[str, tuple[int, int, int]] = {}

    def write(self, items: Sequence[tuple[PurePosixPath, Record, str | None]], *, noun: str, verb: str,
              ids: Sequence[str], reason: str | None = None, summary: str | None = None,
              allow_secrets: bool = False, subject: str | None = None) -> WriteResult:
        """Write records as one commit: (path, record, blob it replaces or None for a new file)."""
        records = [r for _, r, _ in items]
        for path, record, _ in items:
            check_to_write(path, record, allow_secrets=allow_secrets)  # as the holder checks a queued request
        changes = [Change(path, render_for_write(self.files, path, record, base).encode("utf-8"), base=base)
                   for path, record, base in items]
        self.check_writable(changes)
        authorship = self.authorship
        message = authorship.message(noun, verb, ids, reason=reason, summary=summary, subject=subject)
        with self.handing_over(changes, [(record, base) for _, record, base in items]):
            commit = self.store.commit_grouped(changes, message=message, author=authorship.author(),
                                               committer=authorship.committer(), op=f"{noun}.{verb}",
                                               after=self.after_write,
                                               queue=not allow_secrets)  # the queue carries no override
        return WriteResult(commit=commit, records=tuple(records), paths=tuple(p for p, _, _ in items))

    def after_write(self, commit: str, paths: Sequence[PurePosixPath], base: str | None = None, *,
                    blobs: Mapping[str, str] | None = None) -> None:
        """Bring derived state up to date after a write (``base``: where a group of commits began; ``blobs``: its blobs)."""
        cache = self.files.held_cache()
        if cache is not None:
            cache.after_commit(commit, paths, base=base, blobs=blobs, known=self.known)
        else:
            # Not open yet (a write that needed no lookup): opening it takes the commit in.
            try:
                self.files.cache()
            except Exception as err:  # noqa: BLE001 - the write is committed; the next read catches up
                log.warning("could not open the search cache after commit %s (%s)", commit[:10], err)

    def ensure_new(self, record_id: str) -> None:
        """Refuse a new record whose id another record has, or is a name by which links reach another record."""
        existing = self.files.locate(record_id)
        if existing is not None:
            raise CollisionError(f"a record with id {record_id!r} already exists at {existing}",
                                 hint="choose another id")
        check_names_free(self.files, record_id)  # nor a name by which links reach another record

    def check_writable(self, changes: Sequence[Change]) -> None:
        """Refuse a write to a vault of a newer format, and a record file larger than a read accepts."""
        check_format(self.files.settings)
        for c in changes:
            if len(c.data) > MAX_RECORD_BYTES:
                raise InvalidRecordError(f"the record is {len(c.data) // 1024} KiB; a record may be at most "
                                         f"{MAX_RECORD_BYTES // 1024} KiB (reads refuse larger files)",
                                         path=str(c.path), hint="split it into several facts, or link to a file")

    def check_secrets(self, records: Sequence[Record], allow_secrets: bool) -> None:
        """Refuse records that hold a credential, unless allowed (history is forever)."""
        for record in records:
            check_no_secret(record, allow_secrets=allow_secrets)

    @contextmanager
    def handing_over(self, changes: Sequence[Change], records: Sequence[tuple[Record, str | None]]) -> Iterator[None]:
        """Offer the cache, during a write, the records of its new files with the bytes they were rendered to.

        A new file rendered plainly parses back to its record (the codec's round trip, proved by every test
        through AM_CHECK_KNOWN): the cache takes it from here instead of parsing the file again (a tenth of a
        bulk import). Not with ``property_links``, whose ``"[[Name]]"`` values the cache resolves itself.
        """
        plain = self.files.settings.get("property_links") is not True
        ours = {str(c.path): (c.data, r) for c, (r, base) in zip(changes, records) if base is None and plain}
        self.known.update(ours)
        try:
            yield
        finally:
            for key, entry in ours.items():
                if self.known.get(key) is entry:
                    del self.known[key]

    def existing_for_update(self, record_id: str, kind: type[Record], noun: str) -> tuple[PurePosixPath, Any, str]:
        """Return a committed record to update, with the blob id of exactly the bytes it was parsed from.

        That blob is the write's compare-and-swap base: if another writer
        changed the record after it was read here, the commit is refused
        (``ConflictError``) instead of overwriting their change with an update
        of the old version.
        """
        files = self.files
        for _ in range(5):
            path, _record = get_typed(files, record_id, kind, noun)
            try:
                data = (files.root / path).read_bytes()
            except FileNotFoundError:
                continue  # moved or replaced while being read: look it up again
            record = parse_record(decode_record_bytes(data, path=str(path)), str(path))
            if not isinstance(record, kind) or record.id != record_id:
                continue
            base = self.base_of(path)
            if base is None:
                raise UsageError(f"{path} is not committed yet", hint="commit it first (git add/commit), then retry")
            if hash_blob(data) == base:
                return path, record, base
            # Compared as git compares: after its filters. An autocrlf clone has CRLF in the work tree that the
            # repository does not; the update is of the committed bytes, so the commit keeps the repository's ends.
            if self.store.blob_as_git_stores(path, data) == base:
                committed = self.store.read_object(base)
                return path, parse_record(decode_record_bytes(committed, path=str(path)), str(path)), base
        raise DirtyFileError(f"{path} has uncommitted changes",
                             hint="commit or discard them first, then retry")

    def base_of(self, path: PurePosixPath) -> str | None:
        """Return the blob id of the committed version of ``path`` (None: not committed)."""
        return self.store.blob_id(path)

    def retrying(self, write: Callable[[], WriteResult]) -> WriteResult:
        """Run an update; if another writer changed its record first, run it again on the new version."""
        for tries_left in range(2, -1, -1):
            try:
                return write()
            except ConflictError as err:
                if isinstance(err, PathTakenError) or tries_left == 0:
                    raise
        raise AssertionError("unreachable")
