"""Reading source files for an import: text, JSON lines, and the time a source was written."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from am.errors import NotFoundError, UsageError
from am.records.ids import format_timestamp

__all__ = ["json_lines", "load_json", "read_text", "source_time", "walk_files"]

# A source bigger than this is refused, not read into memory (100k observations are ~20 MB).
MAX_SOURCE_BYTES = 2 * 1024 * 1024 * 1024


def read_text(path: Path) -> str:
    """Return a source file's text (UTF-8, a BOM dropped; bad bytes named by the error)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"{path} does not exist", hint="give the path of the file or folder to import") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder; this system imports a file",
                         hint="give the file's path (see: am import --help)") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise UsageError(f"{path}: invalid UTF-8 at line {line}", hint="save the file as UTF-8") from None
    return text.removeprefix("\ufeff")


def source_time(path: Path) -> str:
    """Return when the source was last written (the time of entries that carry none)."""
    try:
        seconds = os.stat(path).st_mtime
    except OSError:
        raise NotFoundError(f"{path} does not exist", hint="give the path of the file or folder to import") from None
    return format_timestamp(datetime.fromtimestamp(int(seconds)).astimezone())


def json_lines(text: str) -> Iterator[tuple[int, Any, str | None]]:
    """Yield (line number, value, error) for each non-blank line of JSON Lines text."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line), None
        except ValueError as err:
            yield number, None, f"not JSON ({err})"


def load_json(path: Path) -> Any:
    """Return a JSON file's value, or raise naming the file and line."""
    text = read_text(path)
    try:
        return json.loads(text)
    except ValueError as err:
        line = getattr(err, "lineno", None)
        where = f"{path}:{line}" if line else str(path)
        raise UsageError(f"{where}: not JSON ({err})", hint="give the JSON file the system exported") from None


def walk_files(root: Path, *, suffix: str) -> list[Path]:
    """Return the files under a folder (or the file itself) ending in ``suffix``, sorted, hidden ones skipped."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise NotFoundError(f"{root} does not exist", hint="give the path of the file or folder to import")
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found += [Path(dirpath) / n for n in sorted(filenames) if n.endswith(suffix) and not n.startswith(".")]
    return found
