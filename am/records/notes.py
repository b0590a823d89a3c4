"""Notes: Markdown files without am frontmatter, beside the records. Pure, no I/O.

Obsidian's "New note" makes an empty ``Untitled.md``; a person keeps pages of
their own, perhaps with frontmatter of their own (``type: book``). Such a file
is a *note*: never a record, a link target by its file name, and searchable
as a note (am/cache keeps its text apart from the records', so a note never
reaches a pack as a fact). A file with an am id and a misspelt type is a
broken record, not a note.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from am.errors import InvalidRecordError

__all__ = ["is_record_meta", "is_record_text", "note_text"]


def is_record_text(text: str) -> bool:
    """Return whether a file's text can be a record: it starts with a frontmatter block."""
    return text.removeprefix("\ufeff").startswith(("---\n", "---\r\n"))


def is_record_meta(meta: dict[str, Any]) -> bool:
    """Return whether loaded frontmatter is am's: a record type, or an id beside a type that is not one.

    A person's own ``type: book`` on a note does not make it a record; a file
    with an am id and a misspelt type is a broken record, reported as such.
    """
    from am.records.ids import is_valid_id
    from am.records.model import RECORD_TYPES

    rtype = meta.get("type")
    if rtype in RECORD_TYPES:
        return True
    return rtype is not None and is_valid_id(meta.get("id"))


def note_text(path: str, data: bytes) -> tuple[str, str] | None:
    """Return (title, text) of a file that is a note (its file name, its text without frontmatter), else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.removeprefix("\ufeff")
    title = PurePosixPath(path).stem
    if not is_record_text(text):
        return title, text
    from am.records.codec import parse_meta, split_frontmatter

    try:
        front, body, eol = split_frontmatter(text, path=path)
        meta = parse_meta(front, eol, path=path)
    except InvalidRecordError:
        return None
    if not isinstance(meta, dict) or is_record_meta(meta):
        return None
    return title, body
