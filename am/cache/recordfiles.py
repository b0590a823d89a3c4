"""A vault's files as its reads and writes see them: records in the work tree, found through the cache.

``RecordFiles`` is the vault's folder, its Git store, its settings (``.am/vault.yml``) and its cache
(opened when first asked for, refreshed at most once a second: ``open_cache``). The facade reads
through it, and hands it to the write floor (am/writes/), which reads what a write needs (the record
an update replaces, the names a new record must not take) without calling back into the facade.
Reads come from the work tree, so a person's uncommitted edit in Obsidian counts.

Decisions: docs/decisions/cache.md.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import InvalidRecordError, NotFoundError
from am.records.codec import decode_record_bytes, parse_record
from am.records.ids import RECORD_DIRS, VAULT_FILE, check_id
from am.records.model import Record

if TYPE_CHECKING:
    from am.cache.index import Index
    from am.git import LazyStore

__all__ = ["RecordFiles", "is_note_file"]

log = logging.getLogger("am")


class RecordFiles:
    """A vault's folder, Git store, settings and cache, and the reads of its record files."""

    def __init__(self, root: Path, store: LazyStore) -> None:
        self.root = root
        self.store = store
        self.settings = self.read_settings()

    def read_settings(self) -> dict[str, Any]:
        """Return the vault's settings, read from ``.am/vault.yml`` in the work tree ({} when there is none)."""
        from am.git.workfiles import read_capped
        from am.records.frontmatter import MAX_FRONTMATTER_BYTES, load_settings

        data = read_capped(str(self.root), str(VAULT_FILE), cap=MAX_FRONTMATTER_BYTES, hint="make it a small file")
        if data is None:
            return {}
        try:
            return load_settings(data.decode("utf-8"), path=str(VAULT_FILE))
        except UnicodeDecodeError:
            raise InvalidRecordError("not UTF-8", path=str(VAULT_FILE),
                                     hint=f"save it as UTF-8; {self._settings_origin(data)}") from None
        except InvalidRecordError as err:
            raise InvalidRecordError(err.detail, path=str(VAULT_FILE), field=err.field, line=err.line,
                                     hint=self._settings_origin(data)) from None

    def _settings_origin(self, data: bytes) -> str:
        """Say where ``.am/vault.yml`` as it is came from (a commit, or an uncommitted edit) and how to undo it.

        A bad file that `am sync` or `git pull` brought stops every command; naming the commit
        (``git log -1 -- .am/vault.yml``) is the way back to whoever made it (issue 36.14).
        """
        from am.git.values import hash_blob

        path = str(VAULT_FILE)
        try:
            store = self.store.opened()
            head = store.head()
            stored = store.blob_as_git_stores(path, data) or hash_blob(data)  # None: no filter, the bytes as they are
            if head is not None and stored != store.blob_id(path, commit=head):
                return (f"it is edited in the work tree, not committed: fix it, or put back the committed one "
                        f"with: git checkout -- {path}")
            commit = store.last_change(path)
            if commit is None:
                return f"fix it and commit it: git commit {path}"
            info = store.commit_info(commit)
        except Exception:  # noqa: BLE001 - only a hint: the error it belongs to is what the user must see
            return f"fix it and commit it; see: git log -1 -- {path}"
        revert = f"git revert -m 1 {commit[:10]}" if len(info.parents) > 1 else f"git revert {commit[:10]}"
        return (f"commit {commit[:10]} (\"{info.subject}\", by {info.author}) last changed it: fix the file and "
                f"commit it, or undo that commit with: {revert}")

    def cache(self) -> Index | None:
        """Return the vault's cache (am/cache/index.py), brought up to date; None when it cannot be used."""
        from am.cache.index import open_cache

        return open_cache(self)

    def held_cache(self) -> Index | None:
        """Return the cache if it is open already, without opening it."""
        return self.__dict__.get("_cache")

    def close(self) -> None:
        """Close the cache if it is open."""
        if (held := self.__dict__.pop("_cache", None)) is not None:
            held.close()

    def record_pairs(self, rtype: str, topic: str | None = None, status: str | None = None,
                     rel: str | None = None) -> Iterable[tuple[PurePosixPath, Record]]:
        """Return (path, record) of a type, narrowed by the cache where it can (callers check each record again)."""
        cache = self.cache()  # it narrows by topic, status, rel in SQL (not 20k facts decoded for 200); callers recheck
        if cache is None:
            return self.iter_records()
        return cache.relations_of(rel, status) if rel else cache.records(type=rtype, topic=topic, status=status)

    def iter_record_paths(self) -> Iterator[PurePosixPath]:
        """Yield the vault-relative path of every .md file under topics/, facts/, relations/."""
        yield from map(PurePosixPath, self.record_file_names())

    def record_file_names(self) -> Iterator[str]:
        """Yield ``iter_record_paths`` as strings (no path object per file: a check of 20k files lists them all)."""
        from am.git.workfiles import markdown_files

        return markdown_files(str(self.root), RECORD_DIRS.values())

    def read_path(self, path: PurePosixPath) -> Record:
        """Parse the record file at a vault-relative path: a regular file, no link followed, size capped."""
        from am.git.workfiles import read_capped
        from am.records.codec import MAX_RECORD_BYTES

        data = read_capped(str(self.root), str(path), cap=MAX_RECORD_BYTES, hint="a record is a small regular file")
        if data is None:
            raise NotFoundError(f"{path} does not exist")
        return parse_record(decode_record_bytes(data, path=str(path)), str(path))

    def iter_records(self, *, strict: bool = False) -> Iterator[tuple[PurePosixPath, Record]]:
        """Yield every record in the work tree; unreadable files are logged (or raised if strict)."""
        for path in self.iter_record_paths():
            try:
                yield path, self.read_path(path)
            except InvalidRecordError as err:
                if strict:
                    raise
                if not is_note_file(self.root, path):  # a note (Obsidian's Untitled.md) is no record, nor broken
                    log.warning("skipping %s", err)

    def locate(self, record_id: str) -> PurePosixPath | None:
        """Return the path of the record with this id, or None."""
        check_id(record_id)
        # A file named after the id that does not parse is raised, not skipped:
        # "unknown topic" would send the user to create a twin of a broken file.
        cache = self.cache()
        if cache is not None:
            found = cache.lookup(record_id)
            if found is not None and not (self.root / found).is_file():
                cache.refresh()  # moved since its last refresh (a second ago at most): a hand git mv, Obsidian
                found = cache.lookup(record_id)
            for broken in cache.invalid_paths(record_id) if found is None else ():
                self.read_path(broken)
            return found
        for guess in _guess_paths(record_id):
            if (self.root / guess).is_file() and self.read_path(guess).id == record_id:
                return guess
        for path in self.iter_record_paths():
            if path.stem == record_id and self.read_path(path).id == record_id:
                return path
        for path, record in self.iter_records():
            if record.id == record_id:
                return path
        return None


def _guess_paths(record_id: str) -> list[PurePosixPath]:
    guesses = [PurePosixPath("topics", f"{record_id}.md")]
    match = re.match(r"^f-(\d{4})(\d{2})(\d{2})-", record_id)
    if match:
        guesses.insert(0, PurePosixPath("facts", *match.groups(), f"{record_id}.md"))
    return guesses


def is_note_file(root: Path, path: PurePosixPath) -> bool:
    """Return whether the work tree's file at ``path`` is a note (no am frontmatter), not a broken record."""
    from am.git.workfiles import read_work_file
    from am.records.codec import MAX_RECORD_BYTES
    from am.records.notes import note_text

    found = read_work_file(str(root), str(path), cap=MAX_RECORD_BYTES)
    return found is not None and found.data is not None and note_text(str(path), found.data) is not None
