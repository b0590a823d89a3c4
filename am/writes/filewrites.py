"""Writing a vault's files that are not records (session logs, settings) as they are, in one commit.

An import of am's own export restores the session logs, the settings and the
purge log it carries (am/io/vaultfiles.py decides which); this is the write:
the bytes as given, each over the blob it was computed from, one commit
(``Am-Op: import.files``), then the cache and the settings brought up to date.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from am.records.ids import VAULT_FILE

if TYPE_CHECKING:
    from am.writes.writer import RecordWriter

__all__ = ["write_files"]


def write_files(writer: RecordWriter, files: Sequence[tuple[PurePosixPath, bytes, str | None]], *,
                subject: str) -> str:
    """Commit (path, bytes, base blob or None) as they are; return the commit."""
    from am.git import Change

    changes = [Change(path, data, base=base) for path, data, base in files]
    writer.check_writable(())  # the vault's format (a log is no record: a record's size limit is not its)
    message = writer.authorship.message("import", "files", [], subject=subject)
    store = writer.store
    with store.write_lock(op="import.files"):
        commit: str = store.commit(changes, message=message, author=writer.authorship.author(),
                                   committer=writer.authorship.committer())
    writer.after_write(commit, [c.path for c in changes])
    if any(c.path == VAULT_FILE for c in changes):
        writer.files.settings = writer.files.read_settings()  # as the other writes of .am/vault.yml do
    return commit
