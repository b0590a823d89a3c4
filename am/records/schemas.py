"""Validation of records: the JSON Schemas in ``schemas/``, and a fast check for writes.

``schema_problems`` runs jsonschema (75 ms to import, so only ``am check`` and
the hooks use it). ``check_record`` enforces the same rules in plain Python on
every write; a test holds the two to the same verdicts. Only ``check_record``
refuses a date the calendar lacks (2026-13-01), which a schema pattern cannot
tell; the world rules would otherwise ignore such a bound without a word. Nor
can a schema compare two keys: only ``check_record`` refuses a ``valid_until``
at or before ``valid_from``, a record that would hold at no time. It also
refuses control characters in a body (not part of the frontmatter the schemas
see): NUL makes Git call the file binary, ESC puts terminal escapes into
listings and commit subjects. The schema refuses them in a title. Nor may a
body hide a message in invisible characters (tag characters outside an emoji
flag, a run of variation selectors): a model reads it, a person does not.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from am.errors import InvalidRecordError
from am.records.ids import is_valid_id, parse_timestamp
from am.records.properties import split_link
from am.records.model import AXES, CONFIDENCES, RELATION_TYPES, STATUSES, TOPIC_KINDS, Fact, Record, Relation, Topic

__all__ = ["is_reference", "load_schema", "schema_problems", "check_record", "passes_as_written",
           "relation_type_error"]

_TS = re.compile(r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?\Z")
_HEX = re.compile(r"^[0-9a-fA-F]{4,64}\Z")
# C0 controls but tab, newline and carriage return, and DEL; the same class as title's pattern in schemas/topic.json.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@lru_cache(maxsize=None)
def load_schema(record_type: str) -> dict[str, Any]:
    """Return the JSON Schema of a record type, from the installed package or the source tree."""
    from importlib import resources  # ~5 ms (tempfile, shutil...): only when a schema is read

    name = f"{record_type}.json"
    try:
        text = (resources.files("am._schemas") / name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        text = (Path(__file__).resolve().parents[2] / "schemas" / name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@lru_cache(maxsize=None)
@lru_cache(maxsize=None)
def _validator(record_type: str) -> Any:
    # Built once per type: extending the validator class and checking the
    # schema are most of the cost of a one-record check.
    return _validator_class()(load_schema(record_type))


def _validator_class() -> Any:
    import jsonschema

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Any:
        # JSON Schema regexes are ECMA-262, where "$" is the end of input; in
        # Python "$" also matches before a final newline, so "id\n" would pass.
        if validator.is_type(instance, "string"):
            anchored = patrn[:-1] + r"\Z" if patrn.endswith("$") and not patrn.endswith("\\$") else patrn
            if re.search(anchored, instance) is None:
                yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")

    base = jsonschema.Draft202012Validator
    return jsonschema.validators.extend(base, {"pattern": pattern})  # type: ignore[no-untyped-call]


def schema_problems(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """Validate a frontmatter mapping against its schema; return (field, message) pairs."""
    rtype = meta.get("type")
    if rtype not in ("topic", "fact", "relation"):
        return [("type", f"unknown record type {rtype!r}; use one of: topic, fact, relation")]
    validator = _validator(str(rtype))
    problems = []
    for error in sorted(validator.iter_errors(meta), key=lambda e: list(e.absolute_path)):
        field = ".".join(str(p) for p in error.absolute_path) or (
            error.message.split("'")[1] if error.validator == "required" else "(record)"
        )
        problems.append((field, error.message))
    return problems


def passes_as_written(meta: dict[str, Any], record: Record) -> bool:
    """Return whether ``schema_problems(meta)`` is sure to be empty, without running jsonschema (~0.6 ms a record).

    So it is when the frontmatter holds exactly the record's values (no key
    defaulted, dropped or converted: what am writes, in its plain or its link
    form) and ``check_record`` passes the record: tests/test_schemas.py holds
    the two to the same verdict on such a mapping. Any other file is left to
    the schema, which names every problem.
    """
    from am.records.codec import record_to_meta
    from am.records.properties import LINK_KEYS, link_value

    plain = record_to_meta(record)
    if meta != plain and meta != {k: _linked(v, link_value) if k in LINK_KEYS else v for k, v in plain.items()}:
        return False
    try:
        check_record(record)
    except InvalidRecordError:
        return False
    return True


def _linked(value: Any, link: Any) -> Any:
    return [link(v) for v in value] if isinstance(value, list) else link(value)


def relation_type_error(rel: str, *, path: str | None = None) -> InvalidRecordError:
    """Return the error for a relation type outside the seven."""
    return InvalidRecordError(
        f"relation type {rel!r} is not allowed; use one of: {', '.join(RELATION_TYPES)}",
        path=path,
        field="rel",
    )


def is_reference(value: object) -> bool:
    """Return whether a link-valued key's value names a record: an id, or an unresolved ``[[Name]]`` link."""
    if is_valid_id(value):
        return True
    return isinstance(value, str) and value.startswith("[[") and split_link(value) is not None


def _is_moment(value: str | None) -> bool:
    """Return whether a value is an ISO 8601 date or date-time that exists (not 2026-13-01 or 2026-02-30)."""
    if value is None:
        return True
    if _TS.match(value) is None:
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _need(ok: bool, field: str, message: str, path: str | None) -> None:
    if not ok:
        raise InvalidRecordError(message, path=path, field=field)


def _moment(value: str) -> datetime:
    """Read a checked date or date-time as the world rules do (no offset: UTC)."""
    return parse_timestamp(value)


def _plain(text: str, field: str, path: str | None) -> None:
    found = _CONTROL.search(text)
    if found is not None:
        raise InvalidRecordError(
            f"contains the control character U+{ord(found.group()):04X} at offset {found.start()}",
            path=path, field=field, hint="remove it; only tab, newline and carriage return are allowed",
        )


# Two channels for text a model reads and a person does not see, with no use in ordinary text: the tag
# block (U+E0000-U+E007F: ASCII, invisible) outside an emoji flag (U+1F3F4, tags, U+E007F), and variation
# selectors one after another (one follows an emoji or an ideograph; 256 of them encode any bytes).
_TAG_RUN = re.compile(r"[\U000e0000-\U000e007f]+")
_FLAG_TAGS = re.compile(r"[\U000e0020-\U000e007e]+\U000e007f\Z")
_SELECTOR_RUN = re.compile(r"[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}")


def _no_hidden_message(text: str, field: str, path: str | None) -> None:
    if text.isascii():
        return
    for run in _TAG_RUN.finditer(text):
        if run.start() > 0 and text[run.start() - 1] == "\U0001f3f4" and _FLAG_TAGS.match(run.group()):
            continue  # a flag such as England's
        spelled = "".join(chr(ord(c) - 0xE0000) for c in run.group() if 0xE0020 <= ord(c) <= 0xE007E)
        raise InvalidRecordError(
            f"hides text in Unicode tag characters (U+{ord(run.group()[0]):04X} at offset {run.start()}), "
            f"which a model reads and a person does not see: {spelled[:60]!r}",
            path=path, field=field, hint="remove them; a record says what a person reading it sees",
        )
    found = _SELECTOR_RUN.search(text)
    if found is not None:
        raise InvalidRecordError(
            f"holds {len(found.group())} variation selectors in a row at offset {found.start()} "
            f"(U+{ord(found.group()[0]):04X} ...): invisible, they can carry a hidden message",
            path=path, field=field, hint="remove them; one after an emoji or an ideograph is all text needs",
        )


def _world(record: Fact | Relation, path: str | None) -> None:
    for key in ("repo", "version"):
        value = getattr(record, key)
        _need(value is None or value != "", key, "must not be empty", path)
    for key in ("commit", "until_commit"):
        value = getattr(record, key)
        _need(value is None or _HEX.match(value) is not None, key,
              "must be a commit id (4 to 64 hex digits)", path)
    _need(record.axis is None or record.axis in AXES, "axis", f"must be one of: {', '.join(AXES)}", path)
    for key in ("valid_from", "valid_until", "created"):
        value = getattr(record, key)
        _need(_is_moment(value), key,
              "must be a real ISO 8601 date or date-time, e.g. 2026-09-23T12:00:00+08:00", path)
    if record.valid_from is not None and record.valid_until is not None:
        if _moment(record.valid_until) <= _moment(record.valid_from):
            raise InvalidRecordError(
                f"{record.valid_until} is not after valid_from {record.valid_from}, so it would hold at no time",
                path=path, field="valid_until",
                hint="give a valid_until later than valid_from, or leave one of them out",
            )


def check_record(record: Record, *, path: str | None = None) -> None:
    """Raise InvalidRecordError if a record breaks a rule of its schema."""
    _need(is_valid_id(record.id), "id", "is not a valid id", path)
    _need(record.status in STATUSES, "status", f"must be one of: {', '.join(STATUSES)}", path)
    _plain(record.body, "body", path)
    _no_hidden_message(record.body, "body", path)
    if isinstance(record, Topic):
        _plain(record.title, "title", path)
        _need(record.kind in TOPIC_KINDS, "kind", f"must be one of: {', '.join(TOPIC_KINDS)}", path)
        _need(0 < len(record.title) <= 300, "title", "must be 1 to 300 characters", path)
        _need(_is_moment(record.created), "created", "must be a real ISO 8601 date or date-time", path)
        _need(all(record.aliases), "aliases", "must not contain empty strings", path)
        _need(all(record.tags), "tags", "must not contain empty strings", path)
        return
    if isinstance(record, Fact):
        _need(len(record.topics) > 0, "topics", "must name at least one topic", path)
        _need(all(is_reference(t) for t in record.topics), "topics",
              'must be topic ids or links such as "[[project-alpha]]"', path)
        _need(record.confidence in CONFIDENCES, "confidence", f"must be one of: {', '.join(CONFIDENCES)}", path)
        _need(record.provenance != "", "provenance", "must not be empty", path)
        _need(record.created is not None, "created", "is required", path)
        _need(all(is_reference(s) for s in record.supersedes), "supersedes", "must be fact ids", path)
        _need(record.superseded_by is None or is_reference(record.superseded_by), "superseded_by",
              "must be a fact id", path)
        _need(all(record.paths), "paths", "must not contain empty strings", path)
        _need(all(record.tags), "tags", "must not contain empty strings", path)
        _world(record, path)
        return
    assert isinstance(record, Relation)
    if record.rel not in RELATION_TYPES:
        raise relation_type_error(record.rel, path=path)
    _need(is_reference(record.from_), "from", "must be a topic or fact id", path)
    _need(is_reference(record.to), "to", "must be a topic or fact id", path)
    _need(all(record.tags), "tags", "must not contain empty strings", path)
    _world(record, path)
