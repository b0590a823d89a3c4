"""Resolving a link the way Obsidian does: file name first, then id, title and aliases. Pure, no I/O.

Obsidian finds ``[[Li Wei]]`` by file name (case-insensitively, ``.md`` left
out). am adds its own names after that: a record's id, then a topic's title,
then its aliases — so ``[[person-li-wei]]``, ``[[Li Wei]]`` and ``[[李伟]]``
all reach ``topics/people/Li Wei.md`` (id ``person-li-wei``). A note (a
Markdown file without am frontmatter) is a link target by its file name.

A name that two files claim at the same rank resolves to the first by path, as
Obsidian picks one file for an ambiguous link.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from am.records.properties import split_link

__all__ = ["NOTE_PREFIX", "Names", "file_stem", "name_key"]

NOTE_PREFIX = "note:"
"""What ``Names.resolve`` returns for a note: ``note:`` and the note's path."""

_RANKS = ("file", "id", "title", "alias")


def name_key(name: str) -> str:
    """Return the key a name is compared by (Obsidian compares file names case-insensitively)."""
    import unicodedata

    text = name.strip()
    if text.lower().endswith(".md"):
        text = text[:-3]
    if text.isascii():  # most names: NFC leaves ASCII as it is, and casefold is lower
        return text.lower()
    return unicodedata.normalize("NFC", text).casefold()


def file_stem(path: str) -> str:
    """Return ``PurePosixPath(path).stem`` (a file name without its last suffix), without pathlib's cost.

    A record file's name without ``.md``: what Obsidian links it by, and its id when am named it (a check or
    a merge asks it of thousands of files)."""
    if "//" in path or path.endswith(("/", "/.")) or "/./" in path or path.startswith("./") or path == ".":
        return PurePosixPath(path).stem
    name = path[path.rfind("/") + 1:]
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


@dataclass
class Names:
    """A table of names -> record ids (or ``note:<path>``), ranked file name, id, title, alias."""

    _by_rank: tuple[dict[str, str], ...] = field(default_factory=lambda: tuple({} for _ in _RANKS))
    _paths: tuple[dict[str, str], ...] = field(default_factory=lambda: tuple({} for _ in _RANKS))
    _ids: Mapping[str, str] = field(default_factory=dict)  # id -> path of records named after their id
    fallback: Callable[[str], str | None] | None = None  # asked last, with a name key (e.g. the cache)

    def add_ids(self, ids: Mapping[str, str]) -> None:
        """Add records known only by id, each in a file named after it (id -> path); kept by reference, not copied."""
        self._ids = ids if not self._ids else {**self._ids, **ids}

    def add_record(self, path: str, record_id: str, *, title: str | None = None,
                   aliases: Iterable[str] = ()) -> None:
        """Add a record's names: its file name, id, title and aliases."""
        self._put(0, file_stem(path), record_id, path)
        self._put(1, record_id, record_id, path)
        if title:
            self._put(2, title, record_id, path)
        for alias in aliases:
            self._put(3, alias, record_id, path)

    def add_note(self, path: str) -> None:
        """Add a note (a Markdown file that is not a record) by its file name."""
        self._put(0, file_stem(path), NOTE_PREFIX + path, path)

    def _put(self, rank: int, name: str, value: str, path: str) -> None:
        key = name_key(name)
        if not key:
            return
        paths = self._paths[rank]
        old = paths.get(key)
        if old is None or path < old:
            paths[key] = path
            self._by_rank[rank][key] = value

    def resolve(self, ref: str) -> str | None:
        """Return the id (or ``note:<path>``) a reference names: an id, a name, or a ``[[link]]``; else None."""
        text = ref
        if text.startswith("[["):
            parts = split_link(text)
            if parts is None or parts[1] is not None:
                return None
            text = parts[0]
        key = name_key(text)
        for rank, table in enumerate(self._by_rank):
            found = table.get(key)
            if found is not None:
                return found
            if rank == 1 and key in self._ids:
                return key  # a file named after its id: its file name and its id, both
        return self.fallback(key) if self.fallback is not None else None

    def __contains__(self, ref: object) -> bool:
        return isinstance(ref, str) and self.resolve(ref) is not None

