"""The JSON Schemas and the fast write-time check give the same verdict on every record."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from am.errors import InvalidRecordError
from am.records.model import AXES, CONFIDENCES, RELATION_TYPES, STATUSES, TOPIC_KINDS, Fact, Relation, Topic
from am.records.codec import parse_meta, parse_record, record_from_meta, record_to_meta, render_record, split_frontmatter
from am.records.schemas import check_record, load_schema, passes_as_written, schema_problems

from test_records import DEMO, _ID, facts, relations, topics

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def _check_ok(record: Topic | Fact | Relation) -> bool:
    try:
        check_record(record, path="x.md")
    except InvalidRecordError:
        return False
    return True


def _schema_ok(record: Topic | Fact | Relation) -> bool:
    return not schema_problems(record_to_meta(record))


def test_schemas_are_valid_json_schema_and_ship_the_vocabularies() -> None:
    import jsonschema

    for kind in ("topic", "fact", "relation"):
        schema = json.loads((SCHEMAS / f"{kind}.json").read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        assert load_schema(kind) == schema
        assert schema["properties"]["status"]["enum"] == list(STATUSES)
    assert load_schema("relation")["properties"]["rel"]["enum"] == list(RELATION_TYPES)
    assert load_schema("topic")["properties"]["kind"]["enum"] == list(TOPIC_KINDS)
    assert load_schema("fact")["properties"]["confidence"]["enum"] == list(CONFIDENCES)
    assert load_schema("fact")["properties"]["axis"]["enum"] == list(AXES)


def test_demo_records_pass_both() -> None:
    for path in DEMO.rglob("*.md"):
        record = parse_record(path.read_text(encoding="utf-8"), str(path))
        assert _check_ok(record) and _schema_ok(record), path


def test_relation_type_outside_the_seven_lists_them() -> None:
    rel = Relation(id="a--related-to--b", rel="related-to", from_="a", to="b")
    with pytest.raises(InvalidRecordError) as err:
        check_record(rel, path="relations/x.md")
    message = str(err.value)
    assert "relations/x.md" in message and "'related-to' is not allowed" in message
    assert all(r in message for r in RELATION_TYPES)
    assert [f for f, _ in schema_problems(record_to_meta(rel))] == ["rel"]


@pytest.mark.parametrize("meta,field", [
    ({"type": "fact", "id": "f-1", "topics": [], "status": "active", "created": "2026-09-23"}, "topics"),
    ({"type": "fact", "id": "f-1", "topics": ["a"], "status": "gone", "created": "2026-09-23"}, "status"),
    ({"type": "fact", "id": "f-1", "topics": ["a"], "status": "active"}, "created"),
    ({"type": "fact", "id": "f-1\n", "topics": ["a"], "status": "active", "created": "2026-09-23"}, "id"),
    ({"type": "topic", "id": "x", "kind": "thing", "title": "X"}, "kind"),
    ({"type": "note", "id": "x"}, "type"),
])
def test_schema_problems_name_the_field(meta: dict[str, object], field: str) -> None:
    assert field in [f for f, _ in schema_problems(meta)]


_BAD_TEXT = st.sampled_from(["", "x\n", "2026-09-23\n", "abc", "zz", "1a2b3c4\n", " 2026-09-23", "g123"])
_MAYBE_TS = st.one_of(st.none(), st.sampled_from(["2026-09-23", "2026-09-23T12:00:00+08:00", "2026-09-23 12:00"]),
                      _BAD_TEXT)
_MAYBE_HEX = st.one_of(st.none(), st.sampled_from(["1a2b3c4", "ABCDEF0123", "a" * 64]), _BAD_TEXT)
_MAYBE_ID = st.one_of(_ID, st.sampled_from(["", "Bad", "a\n", "../x", "a" * 121]))
_MAYBE_LIST = st.lists(st.one_of(st.text(min_size=1, max_size=5), st.just("")), max_size=3).map(tuple)


@st.composite
def mutated(draw: st.DrawFn) -> Topic | Fact | Relation:
    base = draw(st.one_of(topics(), facts(), relations()))
    # The body is not frontmatter, so no schema sees it: its control characters are tested on their own below.
    base = replace(base, body=re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "", base.body))
    changes: dict[str, object] = {"id": draw(_MAYBE_ID), "tags": draw(_MAYBE_LIST),
                                  "status": draw(st.sampled_from(STATUSES + ("gone", "")))}
    if isinstance(base, Topic):
        changes.update(kind=draw(st.sampled_from(TOPIC_KINDS + ("thing",))),
                       title=draw(st.sampled_from(["", "x", "t" * 300, "t" * 301, "服务"])),
                       created=draw(_MAYBE_TS), aliases=draw(_MAYBE_LIST))
    else:
        changes.update(repo=draw(st.one_of(st.none(), st.sampled_from(["", "alpha"]))),
                       version=draw(st.one_of(st.none(), st.sampled_from(["", "main", "1.10"]))),
                       commit=draw(_MAYBE_HEX), until_commit=draw(_MAYBE_HEX),
                       axis=draw(st.one_of(st.none(), st.sampled_from(AXES + ("space",)))),
                       valid_from=draw(_MAYBE_TS), valid_until=draw(_MAYBE_TS), created=draw(_MAYBE_TS))
    if isinstance(base, Fact):
        changes.update(topics=tuple(draw(st.lists(_MAYBE_ID, max_size=3))),
                       confidence=draw(st.sampled_from(CONFIDENCES + ("certain",))),
                       provenance=draw(st.sampled_from(["human", "", "session:x"])),
                       supersedes=tuple(draw(st.lists(_MAYBE_ID, max_size=2))),
                       superseded_by=draw(st.one_of(st.none(), _MAYBE_ID)), paths=draw(_MAYBE_LIST))
    if isinstance(base, Relation):
        changes.update(rel=draw(st.sampled_from(RELATION_TYPES + ("related-to",))),
                       from_=draw(_MAYBE_ID), to=draw(_MAYBE_ID))
    fields = draw(st.lists(st.sampled_from(sorted(changes)), unique=True, max_size=4))
    record = replace(base, **{k: changes[k] for k in fields})
    if not isinstance(record, Topic) and _holds_nowhere(record):
        record = replace(record, valid_until=None)  # no schema compares two keys: tested on its own below
    return record


def _holds_nowhere(record: Fact | Relation) -> bool:
    from am.worlds.rules import to_moment

    if record.valid_from is None or record.valid_until is None:
        return False
    start, end = to_moment(record.valid_from), to_moment(record.valid_until)
    return start is not None and end is not None and end <= start


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=mutated())
def test_check_record_and_schema_agree(record: Topic | Fact | Relation) -> None:
    assert _check_ok(record) == _schema_ok(record), (record, schema_problems(record_to_meta(record)))


@pytest.mark.stress
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=mutated())
def test_check_record_and_schema_agree_at_length(record: Topic | Fact | Relation) -> None:
    """The same property at the count it ran at before the default suite took 200 (-m stress)."""
    test_check_record_and_schema_agree.hypothesis.inner_test(record=record)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=mutated(), links=st.booleans(), drop=st.sampled_from([None, "status", "kind", "confidence", "created"]))
def test_a_file_that_passes_as_written_has_no_schema_problem(record: Topic | Fact | Relation, links: bool,
                                                            drop: str | None) -> None:
    # am check skips jsonschema for such a file (it is most of a 20k-fact check): the verdict must not change.
    text = render_record(record, links=links)
    if drop:
        text = "\n".join(line for line in text.split("\n") if not line.startswith(f"{drop}: "))
    front, body, eol = split_frontmatter(text)
    meta = parse_meta(front, eol)
    try:
        back = record_from_meta(meta, body, eol=eol)
    except InvalidRecordError:
        return
    if passes_as_written(meta, back):
        assert schema_problems(meta) == [], (meta, back)
    else:
        assert not _check_ok(back) or drop or meta != record_to_meta(back)


@pytest.mark.stress
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=mutated(), links=st.booleans(), drop=st.sampled_from([None, "status", "kind", "confidence", "created"]))
def test_a_file_that_passes_as_written_has_no_schema_problem_at_length(record: Topic | Fact | Relation, links: bool,
                                                                      drop: str | None) -> None:
    """The same property at the count it ran at before the default suite took 200 (-m stress)."""
    test_a_file_that_passes_as_written_has_no_schema_problem.hypothesis.inner_test(record=record, links=links, drop=drop)


def test_what_am_writes_passes_as_written_in_both_forms() -> None:
    for path in DEMO.rglob("*.md"):
        record = parse_record(path.read_text(encoding="utf-8"), str(path))
        for links in (False, True):
            front, body, eol = split_frontmatter(render_record(record, links=links))
            meta = parse_meta(front, eol)
            assert passes_as_written(meta, record_from_meta(meta, body, eol=eol)), (path, links)


DOCS = SCHEMAS.parent / "docs" / "format"


@pytest.mark.parametrize("kind", ["topic", "fact", "relation"])
def test_format_docs_match_the_schema(kind: str) -> None:
    schema = load_schema(kind)
    rows = [line.split("|")[1:-1] for line in (DOCS / f"{kind}.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| `")]
    table = {cells[0].strip().strip("`"): [c.strip() for c in cells[1:]] for cells in rows}
    assert list(table) == list(schema["properties"]), "the key table must list the schema's keys, in order"
    for key, (value, required, _meaning) in table.items():
        assert (required == "yes") == (key in schema["required"]), key
        prop = schema["properties"][key]
        for choice in prop.get("enum", []):
            assert f"`{choice}`" in value, (key, choice)


@pytest.mark.parametrize("value", ["2026-13-01", "2026-02-30", "2026-09-23T25:00", "2026-09-23T12:00+99:00"])
def test_a_date_the_calendar_lacks_is_refused(value: str) -> None:
    # It matched the pattern and was written; the world rules then ignored the bound (the fact held always).
    fact = Fact(id="f-1", topics=("project-alpha",), body="x\n", created="2026-09-23", valid_from=value)
    with pytest.raises(InvalidRecordError) as err:
        check_record(fact, path="facts/f-1.md")
    assert err.value.field == "valid_from" and "facts/f-1.md" in str(err.value) and "2026-09-23T12:00" in str(err.value)
    topic = Topic(id="project-alpha", title="Alpha", kind="project", created=value)
    with pytest.raises(InvalidRecordError):
        check_record(topic)
    check_record(Fact(id="f-1", topics=("project-alpha",), body="x\n", created="2026-09-23", valid_from="2026-02-28"))


@pytest.mark.parametrize("char", ["\x1b", "\x07", "\x00", "\x0b", "\x1f", "\x7f"])
def test_a_control_character_in_text_is_refused(char: str) -> None:
    # NUL made Git treat the file as binary; ESC put terminal escapes into `am fact list` and commit subjects.
    code = f"U+{ord(char):04X}"
    cases = [
        (Fact(id="f-1", topics=("project-alpha",), body=f"red{char}[31m\n", created="2026-09-23"), "body"),
        (Topic(id="project-alpha", title=f"Alpha{char}", kind="project"), "title"),
        (Topic(id="project-alpha", title="Alpha", kind="project", body=f"x{char}\n"), "body"),
        (Relation(id="a--references--b", rel="references", from_="a", to="b", body=f"note {char}\n"), "body"),
    ]
    for record, field in cases:
        with pytest.raises(InvalidRecordError) as err:
            check_record(record, path="x.md")
        assert err.value.field == field and code in str(err.value) and "remove it" in str(err.value)
    assert [f for f, _ in schema_problems(record_to_meta(cases[1][0]))] == ["title"]
    check_record(Fact(id="f-1", topics=("project-alpha",), body="tab\there\r\nnext\n", created="2026-09-23"))
    check_record(Topic(id="project-alpha", title="Alpha 服务 \u200b", kind="project"))


@pytest.mark.parametrize("start,end", [
    ("2026-09-23", "2026-09-23"), ("2026-09-24", "2026-09-23"), ("2026-09-23T12:00:00+08:00", "2026-09-23T04:00:00Z"),
    ("2026-09-23T12:00:00+00:00", "2026-09-23T11:00:00Z"), ("2026-09-23T12:00", "2026-09-23 11:59"),
])
def test_valid_until_at_or_before_valid_from_is_refused(start: str, end: str) -> None:
    # It was written, and the fact held in no world at all.
    for record in (Fact(id="f-1", topics=("project-alpha",), body="x\n", created="2026-09-23"),
                   Relation(id="a--references--b", rel="references", from_="a", to="b")):
        with pytest.raises(InvalidRecordError) as err:
            check_record(replace(record, valid_from=start, valid_until=end), path="x.md")
        assert err.value.field == "valid_until" and "valid_from" in str(err.value) and start in str(err.value)
    fact = Fact(id="f-1", topics=("project-alpha",), body="x\n", created="2026-09-23")
    check_record(replace(fact, valid_from="2026-09-23", valid_until="2026-09-23T00:00:01"))
    check_record(replace(fact, valid_from="2026-09-23T04:00:00Z", valid_until="2026-09-23T12:00:01+08:00"))
    check_record(replace(fact, valid_until="2026-01-01"))
