"""Strict YAML frontmatter: load what people write, emit am's canonical form.

PyYAML is used with a loader of our own (RELIABILITY.md): no aliases, no
duplicate keys, no tags beyond the plain JSON types, YAML 1.2 core scalars
(``no`` stays a string, ``1.10`` in a string field stays ``"1.10"``), no
implicit timestamps, size caps. Fields that the format declares as strings are
taken as the raw scalar text, so ``commit: 0123456`` is the string it looks like.

am writes frontmatter in a canonical restricted form (``key: scalar`` and flow
lists of scalars, one key a line). ``fast_load`` reads exactly that form about
3x faster than libyaml and returns None for anything else, so the caller falls
back to ``strict_load``; both give the same mapping (a Hypothesis test holds
them to it). ``load_settings`` does the same for am's own small YAML files.

PyYAML is imported only when the strict loader or a nested dump needs it: a
read command on canonical files never pays its ~20 ms import (PERF.md). Plain
scalars are resolved by one table of YAML 1.2 core rules that both the fast
path and the strict loader use.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

import json
import re
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from am.errors import InvalidRecordError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_FRONTMATTER_BYTES",
    "STRING_FIELDS",
    "LIST_FIELDS",
    "strict_load",
    "fast_load",
    "fast_load_tables",
    "load_settings",
    "dump",
    "format_scalar",
    "format_key",
]

MAX_FRONTMATTER_BYTES = 64 * 1024
_MAX_DEPTH = 8

# Known fields whose scalars are always strings, whatever they look like.
STRING_FIELDS = frozenset(
    {
        "type", "id", "kind", "title", "status", "created", "confidence", "provenance",
        "repo", "version", "commit", "axis", "valid_from", "valid_until", "until_commit",
        "superseded_by", "reason", "rel", "from", "to", "updated",
    }
)
LIST_FIELDS = frozenset({"topics", "aliases", "tags", "supersedes", "paths"})

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_ALLOWED_TAGS = frozenset({_STR, _INT, _FLOAT, _BOOL, _NULL, _SEQ, _MAP})

# YAML 1.2 core schema: no yes/no/on/off booleans, no sexagesimals, no timestamps.
# (tag, pattern, first characters) in PyYAML's add_implicit_resolver order; "" is the empty scalar.
_CORE_IMPLICIT: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    (_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), tuple("tTfF")),
    (_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), tuple("-+0123456789")),
    (_FLOAT, re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ), tuple("-+0123456789.")),
    (_NULL, re.compile(r"^(?:~|null|Null|NULL|)$"), ("~", "n", "N", "")),
)
_BY_FIRST: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
for _tag, _pattern, _firsts in _CORE_IMPLICIT:
    for _first in _firsts:
        _BY_FIRST.setdefault(_first, []).append((_tag, _pattern))


def _resolve_plain(text: str) -> str:
    # What PyYAML's BaseResolver.resolve does with the table above (a test compares them).
    for tag, pattern in _BY_FIRST.get(text[:1], ()):
        if pattern.match(text):
            return tag
    return _STR


def safe_dump(value: Any, **options: Any) -> str:
    """Return ``yaml.safe_dump(value, **options)``, with every string quoted that either YAML reads otherwise.

    PyYAML quotes a string that YAML 1.1 would read as something else
    (``no``); am's strict loader reads YAML 1.2 core, where ``0E0`` and
    ``1e5`` are numbers though 1.1 reads them as text: those are quoted too.
    """
    import yaml

    return yaml.dump(value, Dumper=_text_dumper(), **options)  # type: ignore[no-any-return]


@cache
def _text_dumper() -> Any:
    """PyYAML's safe dumper, with strings quoted as ``safe_dump`` says (built once, on first use)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text_scalar(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
        # A line break of any kind (U+2028 too) or a control character: double-quoted, so that it is
        # escaped on the one line (PyYAML would fold it over lines in single quotes).
        style = None if _resolve_plain(data) == _STR and not _LINE_BREAKING.search(data) else '"'
        return dumper.represent_scalar(_STR, data, style=style)

    Dumper.add_representer(str, text_scalar)
    return Dumper


def _scalar_value(tag: str, text: str) -> Any:
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return text.lower() == "true"
    if tag == _INT:
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text, 10)
    if tag == _FLOAT:
        lowered = text.lower()
        if lowered.endswith(".inf"):
            return float("-inf") if lowered.startswith("-") else float("inf")
        if lowered == ".nan":
            return float("nan")
        return float(text)
    return text


@cache
def _loader_class() -> type:
    """Build the strict loader on first use: libyaml's parser with the core resolver above."""
    import yaml

    class _CoreResolver(yaml.resolver.BaseResolver):
        """YAML 1.2 core schema (the table above)."""

    for tag, pattern, firsts in _CORE_IMPLICIT:
        _CoreResolver.add_implicit_resolver(tag, pattern, list(firsts))

    try:  # libyaml's parser; the pure-Python one is ~5x slower (PERF.md)
        from yaml.cyaml import CParser as _Parser  # type: ignore[attr-defined]  # not re-exported by the yaml package
    except ImportError:  # pragma: no cover - only on a PyYAML built without libyaml
        from yaml.composer import Composer as _Composer
        from yaml.reader import Reader as _Reader
        from yaml.scanner import Scanner as _Scanner

        class _Parser(_Reader, _Scanner, yaml.parser.Parser, _Composer):  # type: ignore[no-redef]
            def __init__(self, stream: str) -> None:
                _Reader.__init__(self, stream)
                _Scanner.__init__(self)
                yaml.parser.Parser.__init__(self)
                _Composer.__init__(self)

    class _Loader(_Parser, _CoreResolver):
        def __init__(self, stream: str) -> None:
            _Parser.__init__(self, stream)
            _CoreResolver.__init__(self)

    return _Loader


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _construct(node: yaml.Node, *, raw: bool, depth: int, seen: set[int], path: str | None) -> Any:
    from yaml import MappingNode, ScalarNode, SequenceNode

    if id(node) in seen:
        raise InvalidRecordError(
            "YAML anchors and aliases are not allowed",
            path=path,
            line=_line(node),
            hint="write the value out in full",
        )
    seen.add(id(node))
    if depth > _MAX_DEPTH:
        raise InvalidRecordError(
            f"frontmatter is nested deeper than {_MAX_DEPTH} levels", path=path, line=_line(node)
        )
    if node.tag not in _ALLOWED_TAGS:
        raise InvalidRecordError(
            f"YAML tag {node.tag!r} is not allowed",
            path=path,
            line=_line(node),
            hint="use plain strings, numbers, true/false, lists and mappings",
        )
    if isinstance(node, ScalarNode):
        if raw and node.tag != _NULL:
            return node.value
        if node.style is not None and node.tag == _STR:
            return node.value
        try:
            return _scalar_value(node.tag, node.value)
        except ValueError:
            raise InvalidRecordError(
                f"{node.value!r} is not a valid {node.tag.rsplit(':', 1)[-1]}",
                path=path,
                line=_line(node),
            ) from None
    if isinstance(node, SequenceNode):
        return [_construct(item, raw=raw, depth=depth + 1, seen=seen, path=path) for item in node.value]
    assert isinstance(node, MappingNode)
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, ScalarNode):
            raise InvalidRecordError("mapping keys must be plain strings", path=path, line=_line(key_node))
        key = key_node.value
        if key in result:
            raise InvalidRecordError(
                f"duplicate key {key!r}",
                path=path,
                line=_line(key_node),
                hint="keep one of the two lines",
            )
        is_raw = depth == 0 and (key in STRING_FIELDS or key in LIST_FIELDS)
        result[key] = _construct(value_node, raw=is_raw, depth=depth + 1, seen=seen, path=path)
    return result


def strict_load(text: str, *, path: str | None = None, line_offset: int = 0) -> dict[str, Any]:
    """Load a frontmatter block with the strict rules; raise InvalidRecordError naming the line."""
    if len(text.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
        raise InvalidRecordError(
            f"frontmatter is larger than {MAX_FRONTMATTER_BYTES // 1024} KiB",
            path=path,
            hint="move long text into the body",
        )
    loader_class = _loader_class()
    import yaml

    loader = None
    try:
        loader = loader_class(text)
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = None if mark is None else mark.line + 1 + line_offset
        problem = err.problem or err.context or "invalid YAML"
        raise InvalidRecordError(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as err:
        raise InvalidRecordError(f"invalid YAML: {err}", path=path) from None
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        return {}
    if not isinstance(node, yaml.MappingNode):
        raise InvalidRecordError("frontmatter must be a mapping of keys to values", path=path, line=1 + line_offset)
    try:
        value = _construct(node, raw=False, depth=0, seen=set(), path=path)
    except InvalidRecordError as err:
        if line_offset and err.line is not None:
            raise InvalidRecordError(err.message.split(": ", 1)[-1] if err.path else err.message,
                                     path=path, line=err.line + line_offset, hint=err.hint) from None
        raise
    assert isinstance(value, dict)
    return value


_TABLE_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):( \{\})?\Z")
_ENTRY_LINE = re.compile(r"  ([A-Za-z0-9][A-Za-z0-9._-]*): (.+)\Z")


def fast_load_tables(text: str) -> dict[str, dict[str, str] | None] | None:
    """Load mappings of plain names to plain strings (``repos:`` / ``  name: /path``), or None for the strict loader."""
    result: dict[str, dict[str, str] | None] = {}
    table: str | None = None  # the table whose entries may follow
    for line in text.split("\n"):
        if not line:
            continue
        head = _TABLE_LINE.match(line)
        if head is not None:
            name = head.group(1)
            if name in result or _resolve_plain(name) != _STR:
                return None
            # "name:" with nothing under it is null, as in YAML; "name: {}" is empty.
            result[name] = {} if head.group(2) else None
            table = None if head.group(2) else name
            continue
        entry = _ENTRY_LINE.match(line)
        if entry is None or table is None:
            return None
        key, value = entry.groups()
        entries = result[table]
        if entries is None:
            entries = result[table] = {}
        if key in entries or _resolve_plain(key) != _STR or not _is_plain_str(value):
            return None
        entries[key] = value
    return result


def load_settings(text: str, *, path: str | None = None) -> dict[str, Any]:
    """Load a small YAML file of am's own (``.am/vault.yml``): the fast path, else the strict loader."""
    if len(text) <= MAX_FRONTMATTER_BYTES // 4:  # the strict loader's size cap holds for the fast path too
        meta = fast_load(text)
        if meta is not None:
            return meta
        meta = _fast_settings(text)
        if meta is not None:
            return meta
    return strict_load(text, path=path)


def _fast_settings(text: str) -> dict[str, Any] | None:
    """Load flat keys plus tables of plain names to plain strings (a vault file with ``repos:``), or None."""
    flat: list[str] = []
    tables: list[str] = []
    current = flat
    for line in text.split("\n"):
        if not line:
            continue
        if line.startswith(" "):
            if current is flat:
                return None
            current.append(line)
            continue
        head = _TABLE_LINE.match(line)
        if head is not None and not head.group(2):
            current = tables
        else:
            current = flat
        current.append(line)
    if not tables:
        return None
    meta = fast_load("\n".join(flat) + "\n") if flat else {}
    found = fast_load_tables("\n".join(tables) + "\n")
    if meta is None or found is None or set(meta) & set(found):
        return None
    return {**meta, **found}


# ---------------------------------------------------------------- canonical form

_PLAIN_OK = re.compile(r"^[^\s\-?:,\[\]{}#&*!|>'\"%@`][^\x00-\x1f\x7f\x85\u2028\u2029\ufeff]*$")
_PLAIN_BAD = re.compile(
    r": |:$| #|\s$|[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]|[\u200b-\u200f\u202a-\u202e\u2066-\u2069]"
)
_FLOW_BAD = re.compile(r"[,\[\]{}]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_LINE_BREAKING = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]")
# Only writes use these two: left to re's cache, so a read command does not compile them.
_TIMESTAMP = r"^\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?\Z"
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_NEEDS_ESCAPE = r'[\\"\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\u200b-\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]'
# A key on one line: YAML reads an implicit key of at most 1,024 characters (libyaml and PyYAML alike).
MAX_KEY_CHARS = 1024
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if "\ud800" <= char <= "\udfff":  # from JSON's "\ud800": not text, and no YAML reader takes its escape
        raise InvalidRecordError(f"holds a lone surrogate (U+{ord(char):04X}), which is not text",
                                 hint="remove it or write the character it was half of")
    return _ESCAPES.get(char, f"\\u{ord(char):04x}")


def _quote(text: str) -> str:
    return '"' + re.sub(_NEEDS_ESCAPE, _escape, text) + '"'


@lru_cache(maxsize=4096)
def format_key(key: str) -> str:
    """Render a mapping key so that every YAML reader reads it back as this very string, on one line.

    A name (am's own keys, most people's) is written as it is; any other key as
    a plain scalar when that reads back as the key (``due date``), else double-quoted
    with escapes (``"!x"``, ``"[k]"``, ``" lead"``, ``""``, ``"a\u2028b"``). A key no
    one-line YAML key can hold raises InvalidRecordError: longer than
    ``MAX_KEY_CHARS`` as written, or not text (a lone surrogate).
    """
    if len(key) <= MAX_KEY_CHARS and _NAME.match(key):
        return key
    text = format_scalar(key)
    if len(text) > MAX_KEY_CHARS:
        raise InvalidRecordError(
            f"the key is {len(key):,} characters long; a YAML key holds at most {MAX_KEY_CHARS:,} as written",
            hint="give it a shorter name",
        )
    return text


def _check_nested(value: Any, depth: int) -> None:
    # What the strict loader reads back: containers at most _MAX_DEPTH deep below the top mapping, text only.
    if isinstance(value, str):
        if _SURROGATE.search(value):
            _quote(value)  # raises naming the character
        return
    if not isinstance(value, (dict, list, tuple)):
        return
    if depth >= _MAX_DEPTH:
        raise InvalidRecordError(f"the value is nested deeper than {_MAX_DEPTH - 1} levels, which am cannot read back",
                                 hint="flatten it, or keep it as text")
    for item in value.items() if isinstance(value, dict) else value:
        if isinstance(item, tuple):
            _check_nested(item[0], depth + 1)
            _check_nested(item[1], depth + 1)
        else:
            _check_nested(item, depth + 1)


# PyYAML picks the YAML 1.1 implicit resolvers to try by a scalar's first
# character; apart from these whole words, only a scalar starting with one of
# _YAML11_OTHER_FIRST can resolve to anything but a string (tests/test_yaml11.py).
_YAML11_WORDS = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF "
                          "null Null NULL ~".split())
_YAML11_OTHER_FIRST = frozenset("-+.0123456789<=!&*")


def _yaml11_plain_is_str(text: str) -> bool:
    # Other readers (Obsidian, PyYAML's default) use YAML 1.1 rules: never write
    # a plain scalar that they would turn into a bool, number or null. Only writes get here.
    # PyYAML's resolvers end in '$', which also matches before one final newline ('~\n' is null to it).
    if not text or text in _YAML11_WORDS or (text.endswith("\n") and text[:-1] in _YAML11_WORDS):
        return False
    if text[0] not in _YAML11_OTHER_FIRST:
        return True  # no resolver but the words above starts here: a write need not import PyYAML
    import yaml

    tag = yaml.resolver.Resolver().resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return bool(tag == _STR)


def format_scalar(value: Any, *, in_flow: bool = False, allow_timestamp: bool = False) -> str:
    """Render one scalar in canonical form."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value) if value == value and value not in (float("inf"), float("-inf")) else (
            ".nan" if value != value else (".inf" if value > 0 else "-.inf")
        )
    text = str(value)
    if allow_timestamp and re.match(_TIMESTAMP, text):
        return text
    if (
        _PLAIN_OK.match(text)
        and not _PLAIN_BAD.search(text)
        and not (in_flow and _FLOW_BAD.search(text))
        and _resolve_plain(text) == _STR
        and _yaml11_plain_is_str(text)
    ):
        return text
    return _quote(text)


def dump(mapping: dict[str, Any], *, timestamp_fields: frozenset[str] = frozenset()) -> str:
    """Render a mapping in canonical form, one key a line, keys in the given order."""
    lines: list[str] = []
    key = ""
    try:
        for key, value in mapping.items():
            name = format_key(key)
            if (key in STRING_FIELDS or key in LIST_FIELDS) and not _all_text(value):
                # Such a key's values are read back as text (a branch "1.10" stays "1.10"): a record type that
                # has no such field (a fact's "aliases: false") would come back changed.
                raise InvalidRecordError(f"{key!r} is a key am reads as text: {value!r} would read back as text",
                                         hint=f"give {key} a text value, or name the key otherwise")
            if isinstance(value, (list, tuple)) and all(
                v is None or isinstance(v, (str, int, float, bool)) for v in value
            ):
                items = ", ".join(format_scalar(v, in_flow=True) for v in value)
                lines.append(f"{name}: [{items}]")
            elif isinstance(value, (dict, list, tuple)):
                # Nested values only come from hand-written files and imports; keep them in
                # flow style so the line-per-key shape still holds.
                _check_nested(value, 1)
                flow = safe_dump(value, default_flow_style=True, allow_unicode=True, width=1 << 30, sort_keys=False)
                lines.append(f"{name}: {flow.strip()}")
            else:
                lines.append(f"{name}: {format_scalar(value, allow_timestamp=key in timestamp_fields)}")
    except InvalidRecordError as err:  # name the key, which the value's own check does not know
        raise InvalidRecordError(err.detail, field=key, hint=err.hint) from None
    return "".join(line + "\n" for line in lines)


def _all_text(value: Any) -> bool:
    """Whether every leaf of a value is a string (what a key read as text gives back unchanged)."""
    if isinstance(value, str):
        return True
    if isinstance(value, (list, tuple)):
        return all(_all_text(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _all_text(v) for k, v in value.items())
    return False


# ---------------------------------------------------------------- fast path

# "key: value" or "key:" — never "key:value", which YAML reads as one plain string.
_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?\Z")
_DQ = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\ntr]|\\u[0-9a-fA-F]{4})*"')
_FLOW_ITEM = re.compile(r'\s*(?:("(?:[^"\\\x00-\x1f]|\\["\\ntr]|\\u[0-9a-fA-F]{4})*")|([^,\[\]{}"\'\s][^,\[\]{}]*?))\s*(,|\]$)')


def _is_plain_str(text: str) -> bool:
    # A plain scalar that every YAML reader takes as this very string.
    return bool(_PLAIN_OK.match(text)) and not _PLAIN_BAD.search(text) and text[0] not in "'{[" \
        and _resolve_plain(text) == _STR


def _fast_scalar(text: str, *, raw: bool) -> tuple[bool, Any]:
    if not text:
        return True, None
    if text[0] == '"':
        if _DQ.fullmatch(text) is None:
            return False, None
        return True, json.loads(text)
    if not _PLAIN_OK.match(text) or _PLAIN_BAD.search(text) or text[0] in "'{[":
        return False, None
    tag = _resolve_plain(text)
    if raw:
        return True, None if tag == _NULL else text
    try:
        return True, _scalar_value(tag, text)
    except ValueError:  # an int past Python's digit limit: the strict loader names the line
        return False, None


def fast_load(text: str) -> dict[str, Any] | None:
    """Load canonical frontmatter quickly, or return None to ask for ``strict_load``."""
    result: dict[str, Any] = {}
    for line in text.split("\n"):
        if not line:
            continue
        match = _KEY_LINE.match(line)
        if match is None:
            return None
        key, value = match.group(1), match.group(2) or ""
        if key in result:
            return None
        raw = key in STRING_FIELDS or key in LIST_FIELDS
        if value.startswith("["):
            if not value.endswith("]"):
                return None
            inner = value[1:]
            items: list[Any] = []
            if inner.strip() != "]":
                pos = 0
                while pos < len(inner):
                    item = _FLOW_ITEM.match(inner, pos)
                    if item is None:
                        return None
                    token = item.group(1) if item.group(1) is not None else item.group(2).rstrip()
                    ok, parsed = _fast_scalar(token, raw=raw)
                    if not ok or (token[0] != '"' and _FLOW_BAD.search(token)):
                        return None
                    items.append(parsed)
                    pos = item.end()
                    if item.group(3) == "]":
                        break
                if pos != len(inner):
                    return None
            result[key] = items
            continue
        if value.startswith(("{", "'", "&", "*", "!", "|", ">", "- ")) or value == "-":
            return None
        ok, parsed = _fast_scalar(value, raw=raw)
        if not ok:
            return None
        result[key] = parsed
    return result
