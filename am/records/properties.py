"""Properties the Obsidian way: link-valued keys, and changing a file's frontmatter in its own form.

Obsidian's Properties view counts a frontmatter string that is one whole
wikilink (``"[[id]]"``, ``"[[id|label]]"``, ``"[[Title]]"``; quoted, since
``[[x]]`` unquoted is a nested YAML list) as a link: it appears in the graph and
in backlinks (``CachedMetadata.frontmatterLinks``, one per value, keyed
``topics.0``). Such values may sit in a flow list (``topics: ["[[a]]"]``) or a
block list (``topics:`` then ``  - "[[a]]"``), or be a single scalar.

am's own link-valued keys are ``topics``, ``supersedes``, ``superseded_by``,
``from`` and ``to``. A value written as a link to an id is read as that id; a
link to anything else (a file name, a title, an alias) is kept as the link text
``[[Name]]`` and resolved later, the way Obsidian resolves it (am/records/names.py).

``update_frontmatter`` changes only the keys whose values changed, each in the
form the file already used (flow or block list, link or plain), so that a file
a person wrote keeps its shape when am changes it. Pure: no I/O.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from am.records.ids import is_valid_id

__all__ = [
    "LINK_KEYS",
    "WIKILINK_RE",
    "is_link",
    "link_target",
    "link_value",
    "property_links",
    "split_link",
    "update_frontmatter",
]

LINK_KEYS = ("topics", "supersedes", "superseded_by", "from", "to")
# One whole wikilink: what Obsidian reads as a link in a property value.
WIKILINK_RE = re.compile(r"^\[\[([^\[\]\n|#^]+)(#[^\[\]\n|]*)?(\|[^\[\]\n]*)?\]\]\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def split_link(value: str) -> tuple[str, str | None, str | None] | None:
    """Return (target, vault, label) of a value that is one whole wikilink, else None."""
    match = WIKILINK_RE.match(value.strip())
    if match is None:
        return None
    target = match.group(1).strip()
    label = match.group(3)[1:].strip() if match.group(3) else None
    vault: str | None = None
    if ":" in target:
        vault, _, target = (p.strip() for p in target.partition(":"))
        if not vault or not target or ":" in target:
            return None
    if target.lower().endswith(".md"):
        target = target[:-3].rstrip()
    if not target or _CONTROL.search(target):
        return None
    return target, vault, label or None


def is_link(value: object) -> bool:
    """Return whether a property value is one whole wikilink."""
    return isinstance(value, str) and split_link(value) is not None


def link_target(value: str) -> str:
    """Return the id a link-valued property names: ``[[id|x]]`` -> ``id``; ``[[Name]]`` stays ``[[Name]]``."""
    parts = split_link(value)
    if parts is None:
        return value.strip()
    target, vault, _ = parts
    if vault is None and is_valid_id(target):
        return target
    return f"[[{vault}:{target}]]" if vault else f"[[{target}]]"


def link_value(target: str, *, label: str | None = None) -> str:
    """Return the property value Obsidian reads as a link to ``target``."""
    if target.startswith("[[") and target.endswith("]]"):
        return target
    return f"[[{target}|{label}]]" if label else f"[[{target}]]"


def property_links(meta: Mapping[str, Any]) -> Iterator[tuple[str, str, str | None]]:
    """Yield (key, target, vault) for every property value that is a wikilink, as Obsidian counts them."""
    for key, value in meta.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str):
                parts = split_link(item)
                if parts is not None:
                    yield key, parts[0], parts[1]


# ---------------------------------------------------------------- changing a file in its own form

_KEY = re.compile(r"^([^\s#'\"\-?:,\[\]{}][^:]*?|\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'):(?:[ \t]|$)")


def _unquote(key: str) -> str:
    # A quoted key as YAML reads it: '' in single quotes is one quote; escapes in double quotes (rare: ask YAML).
    if key[:1] == "'":
        return key[1:-1].replace("''", "'")
    if "\\" not in key:
        return key[1:-1]
    from am.errors import InvalidRecordError
    from am.records.frontmatter import strict_load

    try:
        return next(iter(strict_load(f"{key}: 0")))
    except InvalidRecordError:  # not a key YAML reads: compare it as written
        return key[1:-1]


def _blocks(front: str) -> list[tuple[str | None, list[str]]]:
    """Split frontmatter lines into (top-level key, its lines); comments and blanks before a key ride along."""
    blocks: list[tuple[str | None, list[str]]] = []
    pending: list[str] = []
    for line in front.split("\n"):
        match = _KEY.match(line) if line[:1] not in (" ", "\t", "#", "") else None
        if match is not None:
            key = match.group(1).strip()
            if key[:1] in "\"'":
                key = _unquote(key)
            blocks.append((key, pending + [line]))
            pending = []
        elif blocks and line[:1] in (" ", "\t") and not pending:
            blocks[-1][1].append(line)
        else:
            pending.append(line)
    if pending:
        blocks.append((None, pending))
    return blocks


def _norm(key: str, value: Any) -> Any:
    if key in LINK_KEYS:
        if isinstance(value, list):
            return [link_target(v) if isinstance(v, str) else v for v in value]
        if isinstance(value, str):
            return link_target(value)
    return value


def _labels(old: Any) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for item in old if isinstance(old, list) else [old]:
        if isinstance(item, str):
            parts = split_link(item)
            if parts is not None:
                out[link_target(item)] = parts[2]
    return out


def _render_like(key: str, value: Any, old_lines: list[str], old_value: Any,
                 timestamp_fields: frozenset[str]) -> list[str]:
    """Render ``key: value`` the way the old lines wrote the key."""
    from am.records.frontmatter import dump, format_scalar

    head = old_lines[-1] if old_lines else ""
    lead = old_lines[:-1] if old_lines else []
    key_line_index = next((i for i, ln in enumerate(old_lines) if _KEY.match(ln) and ln[:1] not in " \t#"), None)
    if key_line_index is not None:
        lead = old_lines[:key_line_index]
        head = old_lines[key_line_index]
    was_links = bool(_labels(old_value))
    labels = _labels(old_value)

    def as_link(v: Any) -> Any:
        if was_links and isinstance(v, str) and not v.startswith("[["):
            return link_value(v, label=labels.get(v))
        return v

    if isinstance(value, list):
        items = [as_link(v) for v in value]
        if key_line_index is not None and head.rstrip().endswith(":") and len(old_lines) > key_line_index + 1:
            first = old_lines[key_line_index + 1]
            indent = first[: len(first) - len(first.lstrip())]
            return [*lead, head.rstrip()] + [f"{indent}- {format_scalar(v)}" for v in items]
        return [*lead, *dump({key: items}).rstrip("\n").split("\n")]
    return [*lead, *dump({key: as_link(value)}, timestamp_fields=timestamp_fields).rstrip("\n").split("\n")]


def update_frontmatter(front: str, old: Mapping[str, Any], new: Mapping[str, Any], *,
                       timestamp_fields: frozenset[str] = frozenset()) -> str:
    """Return frontmatter text (``\\n`` line ends) with ``new``'s values, keeping each unchanged key's text.

    ``front`` is the file's frontmatter, ``old`` what it loads to, ``new`` the
    mapping am wants. Keys whose value is the same (link forms compared by the
    id they name) keep their lines byte for byte; changed keys are written in
    the old key's form; keys gone are dropped; new keys go at the end.
    """
    from am.records.frontmatter import dump

    out: list[str] = []
    seen: set[str] = set()
    body = front.removesuffix("\n")
    for key, lines in _blocks(body) if body else []:
        if key is None:
            out += lines
            continue
        seen.add(key)
        if key not in new:
            out += [ln for ln in lines if not (_KEY.match(ln) or ln[:1] in " \t")]
            continue
        if key in old and _norm(key, old[key]) == _norm(key, new[key]):
            out += lines
            continue
        out += _render_like(key, new[key], lines, old.get(key), timestamp_fields)
    extra = {k: v for k, v in new.items() if k not in seen}
    if extra:
        out += dump(extra, timestamp_fields=timestamp_fields).rstrip("\n").split("\n")
    return "\n".join(out) + "\n" if out else ""
