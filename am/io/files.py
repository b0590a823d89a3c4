"""Reading source files for an import: text, JSON lines, and the time a source was written.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from am.errors import NotFoundError, UsageError
from am.records.ids import format_timestamp

__all__ = ["MAX_JSON_DEPTH", "MAX_SOURCE_BYTES", "UnreadableJSON", "json_lines", "load_json", "parse_json", "read_text", "source_time",
           "walk_files"]

# A source bigger than this is refused, not read into memory (100k observations are ~20 MB).
MAX_SOURCE_BYTES = 2 * 1024 * 1024 * 1024
# No format nests this deep (am's frontmatter holds 7 levels); Python's reader gives up near 1,000.
MAX_JSON_DEPTH = 100
_CHUNK = 1 << 20
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def read_text(path: Path) -> str:
    """Return a source file's text (UTF-8, a BOM dropped; bad bytes named by the error).

    Reading is bounded: a file larger than ``MAX_SOURCE_BYTES`` is refused (a
    device or a pipe that never ends, when it passes it), and so is one that
    holds a NUL byte, which no text export has (``/dev/zero`` is refused at once).
    """
    try:
        source = path.open("rb")
    except FileNotFoundError:
        raise NotFoundError(f"{path} does not exist", hint="give the path of the file or folder to import") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder; this system imports a file",
                         hint="give the file's path (see: am import --help)") from None
    too_big = UsageError(f"{path} is larger than {MAX_SOURCE_BYTES // (1 << 30)} GiB, more than am reads into memory",
                         hint="split it into smaller files and import each")
    with source:
        info = os.fstat(source.fileno())
        if stat.S_ISREG(info.st_mode):
            if info.st_size > MAX_SOURCE_BYTES:
                raise too_big
            data = source.read(MAX_SOURCE_BYTES + 1)
        else:  # a device or a pipe: in chunks, stopping at the first NUL byte or past the cap
            chunks: list[bytes] = []
            size = 0
            while (chunk := source.read(_CHUNK)) and b"\0" not in chunk and size <= MAX_SOURCE_BYTES:
                chunks.append(chunk)
                size += len(chunk)
            data = b"".join([*chunks, chunk])
    if len(data) > MAX_SOURCE_BYTES:
        raise too_big
    nul = data.find(b"\0")
    if nul != -1:
        line = data.count(b"\n", 0, nul) + 1
        raise UsageError(f"{path}: a NUL byte at line {line}: not a text file",
                         hint="give the text file (JSON, Markdown) the system exported")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise UsageError(f"{path}: invalid UTF-8 at line {line}", hint="save the file as UTF-8") from None
    return text.removeprefix("\ufeff")


class UnreadableJSON(ValueError):
    """JSON that parses but that am cannot hold: nested too deep, or a lone surrogate (not text)."""


def _deeper_than(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                if depth >= limit:
                    return True
                stack.append((child, depth + 1))
    return False


def parse_json(text: str) -> Any:
    """Return ``json.loads(text)``; raise ValueError (with why) for what is not JSON or what am cannot hold.

    Besides JSON's own errors: nesting deeper than ``MAX_JSON_DEPTH`` (Python's
    reader raises RecursionError near 1,000 levels, and am's own walks would
    below that) and a lone surrogate escape (``"\\ud800"``: not text, and no
    file can hold it). A value that reads costs one walk of its containers.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise UnreadableJSON(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    # No deeper than its count of brackets: most lines need no walk at all.
    if isinstance(value, (dict, list)) and text.count("[") + text.count("{") > MAX_JSON_DEPTH \
            and _deeper_than(value, MAX_JSON_DEPTH):
        raise UnreadableJSON(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if _SURROGATE_ESCAPE.search(text):  # a pair is one character once read; a lone half stays
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as err:
            found = err.object[err.start:err.end]
            raise UnreadableJSON(f"a lone surrogate escape (\\u{ord(found[0]):04x}), which is not text") from None
    return value


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
            yield number, parse_json(line), None
        except UnreadableJSON as err:
            yield number, None, str(err)
        except ValueError as err:
            yield number, None, f"not JSON ({err})"


def load_json(path: Path, text: str | None = None) -> Any:
    """Return a JSON file's value (its ``text`` when read already), or raise naming the file and line."""
    text = read_text(path) if text is None else text
    try:
        return parse_json(text)
    except UnreadableJSON as err:
        raise UsageError(f"{path}: {err}", hint="give the JSON file the system exported") from None
    except ValueError as err:
        line = getattr(err, "lineno", None)
        where = f"{path}:{line}" if line else str(path)
        raise UsageError(f"{where}: not JSON ({err})", hint="give the JSON file the system exported") from None


def walk_files(root: Path, *, suffix: str) -> list[Path]:
    """Return the files under a folder (or the file itself) ending in ``suffix``, sorted, hidden ones skipped."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        if root.exists():  # a pipe or a device: read_text reads it, bounded
            return [root]
        raise NotFoundError(f"{root} does not exist", hint="give the path of the file or folder to import")
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found += [Path(dirpath) / n for n in sorted(filenames) if n.endswith(suffix) and not n.startswith(".")]
    return found
