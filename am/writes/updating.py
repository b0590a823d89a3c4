"""Updates of committed records, as a mixin of the Vault facade: what a write may change, and on which version.

An update (supersede, status, expire) is a compare-and-swap on the record's
blob: its base is the blob id of exactly the bytes it parsed, checked against
HEAD's version, so a record another writer changed after it was read is never
overwritten with an update of the old version; the loser is run again on the
new version (issue 14). A write is refused to a vault whose format is newer
than this am, and a record larger than a read accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import (
    ConflictError,
    DirtyFileError,
    InvalidRecordError,
    PathTakenError,
    SecretError,
    UsageError,
)
from am.git import Change, LazyStore, hash_blob
from am.records.codec import MAX_RECORD_BYTES, decode_record_bytes, parse_record
from am.records.model import Record
from am.records.writes import WriteResult

__all__ = ["FORMAT_VERSION", "VAULT_FILE", "Updating", "check_format", "check_formats_at"]

VAULT_FILE = PurePosixPath(".am/vault.yml")
FORMAT_VERSION = 1


def check_format(settings: dict[str, Any]) -> None:
    """Refuse to write to a vault whose ``.am/vault.yml`` says a format newer than this am's (or not a number)."""
    fmt = settings.get("format", FORMAT_VERSION)
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt > FORMAT_VERSION:
        raise UsageError(f"{VAULT_FILE}: format {fmt!r} is not one this am writes (it writes {FORMAT_VERSION})",
                         hint="upgrade am to write to this vault; nothing was changed")



def check_formats_at(store: Any, *commits: str) -> None:
    """Refuse a merge when either side's vault is of a format newer than this am writes (a fast-forward
    writes nothing of am's): merging records of a format it does not know is a write like any other.

    ``store``: anything with ``read_blob(path, commit=...)`` (a GitStore, or the git CLI's CliStore in a driver).
    """
    from am.records.frontmatter import load_settings

    for commit in commits:
        data = store.read_blob(VAULT_FILE, commit=commit)
        if data is not None:
            check_format(load_settings(data.decode("utf-8", "replace"), path=f"{VAULT_FILE} at {commit[:10]}"))

class Updating:
    """A mixin of ``Vault``: the checks and the base of a write that changes committed records."""

    root: Path
    store: LazyStore
    settings: dict[str, Any]

    if TYPE_CHECKING:  # the facade's own
        def get_typed(self, record_id: str, kind: type[Record], noun: str) -> tuple[PurePosixPath, Any]: ...

        def _base_of(self, path: PurePosixPath) -> str | None: ...

    def _check_writable(self, changes: Sequence[Change]) -> None:
        """Refuse a write to a vault of a newer format, and a record file larger than a read accepts."""
        check_format(self.settings)
        for c in changes:
            if len(c.data) > MAX_RECORD_BYTES:
                raise InvalidRecordError(f"the record is {len(c.data) // 1024} KiB; a record may be at most "
                                         f"{MAX_RECORD_BYTES // 1024} KiB (reads refuse larger files)",
                                         path=str(c.path), hint="split it into several facts, or link to a file")

    def _check_secrets(self, records: Sequence[Record], allow_secrets: bool) -> None:
        """Refuse records that hold a credential, unless allowed (history is forever)."""
        if allow_secrets:
            return
        from am.records.writes import scan_record

        for record in records:
            findings = scan_record(record)
            if findings:
                first = findings[0]
                raise SecretError(
                    f"{record.id}: {first.describe()}",
                    hint="remove it (history is forever); if it is not a credential, a person can write it with "
                         "--allow-secret (an agent's tools cannot)",
                )

    @cached_property
    def _known(self) -> dict[str, tuple[bytes, Record]]:
        """What this vault's writes in flight rendered: by path, the bytes and the record (read by the cache)."""
        return {}

    @contextmanager
    def _handing_over(self, changes: Sequence[Change], records: Sequence[tuple[Record, str | None]]) -> Iterator[None]:
        """Offer the cache, during a write, the records of its new files with the bytes they were rendered to.

        A new file rendered plainly parses back to its record (the codec's round trip, proved by every test
        through AM_CHECK_KNOWN): the cache takes it from here instead of parsing the file again (a tenth of a
        bulk import). Not with ``property_links``, whose ``"[[Name]]"`` values the cache resolves itself.
        """
        plain = self.settings.get("property_links") is not True
        ours = {str(c.path): (c.data, r) for c, (r, base) in zip(changes, records) if base is None and plain}
        self._known.update(ours)
        try:
            yield
        finally:
            for key, entry in ours.items():
                if self._known.get(key) is entry:
                    del self._known[key]

    def _existing_for_update(self, record_id: str, kind: type[Record], noun: str) -> tuple[PurePosixPath, Any, str]:
        """Return a committed record to update, with the blob id of exactly the bytes it was parsed from.

        That blob is the write's compare-and-swap base: if another writer
        changed the record after it was read here, the commit is refused
        (``ConflictError``) instead of overwriting their change with an update
        of the old version.
        """
        for _ in range(5):
            path, _record = self.get_typed(record_id, kind, noun)
            try:
                data = (self.root / path).read_bytes()
            except FileNotFoundError:
                continue  # moved or replaced while being read: look it up again
            record = parse_record(decode_record_bytes(data, path=str(path)), str(path))
            if not isinstance(record, kind) or record.id != record_id:
                continue
            base = self._base_of(path)
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

    def _retrying(self, write: Callable[[], WriteResult]) -> WriteResult:
        """Run an update; if another writer changed its record first, run it again on the new version."""
        for tries_left in range(2, -1, -1):
            try:
                return write()
            except ConflictError as err:
                if isinstance(err, PathTakenError) or tries_left == 0:
                    raise
        raise AssertionError("unreachable")

