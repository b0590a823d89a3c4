"""Reversible edits of a JSON configuration file: put one entry in, take exactly that text out again.

`am setup` must leave a user's file as it found it after `--remove`, byte for
byte, and must not reformat it meanwhile (a client's own tools and people
edit these files too). So the file is not parsed and dumped again: the entry
is inserted as one line, as the first member of its object (or first element
of its array), after the container's opening bracket; a container that does
not exist yet is inserted the same way one level up, holding the entry. Taking
it out removes exactly that text. A file whose entry was since changed by
hand is left alone with a message.

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from am.errors import UsageError

__all__ = ["entry_value", "has_entry", "insert_entry", "remove_entry"]

Key = str | None  # a member name, or None for "an element of this array"
_WS = " \t\r\n"


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _end_of_string(text: str, i: int) -> int:
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        i += 1
    raise ValueError("unterminated string")


def _end_of_value(text: str, i: int) -> int:
    """Return the index just after the JSON value that starts at ``i``."""
    c = text[i]
    if c == '"':
        return _end_of_string(text, i)
    if c in "{[":
        depth = 0
        while i < len(text):
            c = text[i]
            if c == '"':
                i = _end_of_string(text, i)
                continue
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise ValueError("unterminated container")
    j = i
    while j < len(text) and text[j] not in ",}] \t\r\n":
        j += 1
    return j


def _children(text: str, open_at: int) -> list[tuple[str | None, int, int, int]]:
    """Return (key, start, value start, value end) of each member or element of the container at ``open_at``."""
    is_object = text[open_at] == "{"
    out: list[tuple[str | None, int, int, int]] = []
    i = _skip(text, open_at + 1)
    while text[i] not in "}]":
        start = i
        key: str | None = None
        if is_object:
            end = _end_of_string(text, i)
            key = json.loads(text[i:end])
            i = _skip(text, end)
            i = _skip(text, i + 1)  # the colon
        value_end = _end_of_value(text, i)
        out.append((key, start, i, value_end))
        i = _skip(text, value_end)
        if text[i] == ",":
            i = _skip(text, i + 1)
    return out


def _container(text: str, path: Sequence[str]) -> tuple[int, int] | None:
    """Return (opening bracket index, depth reached): the deepest existing container along ``path``."""
    at = _skip(text, 0)
    if at >= len(text) or text[at] != "{":
        raise ValueError("the file is not a JSON object")
    for depth, key in enumerate(path):
        found = next((v for k, _, v, _ in _children(text, at) if k == key), None)
        if found is None:
            return at, depth
        if text[found] not in "{[":
            raise ValueError(f"'{key}' is not an object or an array")
        at = found
    return at, len(path)


def _line_indent(text: str, i: int) -> str:
    start = text.rfind("\n", 0, i) + 1
    line = text[start:]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _member(key: Key, value: Any) -> str:
    dumped = json.dumps(value, ensure_ascii=False)
    return dumped if key is None else f"{json.dumps(key, ensure_ascii=False)}: {dumped}"


def _nest(path: Sequence[str], last: Key, value: Any, kinds: Sequence[str]) -> Any:
    """Wrap ``value`` in the containers of ``path`` (kinds: 'object' or 'array' for each level)."""
    inner = value
    for depth in range(len(path) - 1, -1, -1):
        child_key: Key = path[depth + 1] if depth + 1 < len(path) else last
        inner = {child_key: inner} if kinds[depth] == "object" and child_key is not None else [inner]
    return inner


def check_json(text: str, where: str) -> None:
    try:
        json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{where} is not plain JSON ({err.msg} at line {err.lineno})",
                         hint="fix it, or add the entry by hand (see: am setup CLIENT --print)") from None


def entry_value(text: str, path: Sequence[str], key: Key, match: Any = None) -> Any:
    """Return the entry at ``path`` + ``key`` (for an array: the first element equal to ``match``), or None."""
    node: Any = json.loads(text) if text.strip() else {}
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    if key is None:
        return match if isinstance(node, list) and match in node else None
    return node.get(key) if isinstance(node, dict) else None


def has_entry(text: str, path: Sequence[str], key: Key, value: Any) -> bool:
    """Return whether the file already holds exactly this entry."""
    return bool(entry_value(text, path, key, value) == value)


def insert_entry(text: str, path: Sequence[str], key: Key, value: Any, *, kinds: Sequence[str],
                 where: str) -> str:
    """Return ``text`` with the entry inserted as the first member (or element) of its container.

    ``kinds`` says for each level of ``path`` whether it is an object or an array
    (used when a container must be created); ``key`` None appends to an array.
    """
    text = text if text.strip() else "{}\n"
    check_json(text, where)
    try:
        found = _container(text, path)
    except ValueError as err:
        raise UsageError(f"{where}: {err}", hint="fix the file, or add the entry by hand") from None
    if found is None:
        raise UsageError(f"{where}: the file is not a JSON object", hint="fix it, or add the entry by hand")
    at, depth = found
    if depth < len(path):
        member = _member(path[depth], _nest(path[depth:], key, value, kinds[depth:]))
    else:
        member = _member(key, value)
    outer = _line_indent(text, at)
    lead = text[at + 1: _skip(text, at + 1)]
    if _children(text, at):
        inserted = f"{lead}{member},"  # then the original whitespace and first member: `{W m, W first`
    else:
        inserted = f"\n{outer}  {member}\n{outer}"
    result = text[: at + 1] + inserted + text[at + 1:]
    json.loads(result)  # an insertion that breaks the file is a bug here, not the user's problem
    return result


def remove_entry(text: str, path: Sequence[str], key: Key, value: Any, *, kinds: Sequence[str]) -> str | None:
    """Return ``text`` without the entry ``insert_entry`` put there, byte for byte; None when it is not found as written."""
    for depth in range(len(path) + 1):
        try:
            found = _container(text, path[:depth])
        except ValueError:
            return None
        if found is None or found[1] < depth:
            return None
        at = found[0]
        member = (_member(path[depth], _nest(path[depth:], key, value, kinds[depth:])) if depth < len(path)
                  else _member(key, value))
        outer = _line_indent(text, at)
        rest = text[at + 1:]
        full = re.match(r"(\s*)" + re.escape(member) + r",\1(?=\S)", rest)
        if full is not None:
            return text[: at + 1] + rest[len(full.group(1)) + len(member) + 1:]
        alone = f"\n{outer}  {member}\n{outer}"
        after = _skip(rest, len(alone))
        if rest.startswith(alone) and after < len(rest) and rest[after] in "}]":
            return text[: at + 1] + rest[len(alone):]
    return None
