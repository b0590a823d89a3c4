"""Records: parse and render round-trip, hand-written files are read strictly, errors name file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from am.errors import InvalidRecordError
from am.records.ids import is_valid_id
from am.records.model import CONFIDENCES, RELATION_TYPES, STATUSES, TOPIC_KINDS, Fact, Relation, Topic
from am.records.codec import decode_record_bytes, parse_record, record_to_meta, render_record

from test_frontmatter import ODD_STRINGS

DEMO = Path(__file__).resolve().parent.parent / "vaults" / "demo"

TOPIC_TEXT = """---
type: topic
id: project-alpha
kind: project
title: Alpha service
aliases: [Alpha, Alpha 服务]
tags: [backend]
status: active
created: 2026-09-23T12:00:00+08:00
---
Alpha is the user service behind the mobile app. See [[tool-slice-query]].
"""


def test_design_example_topic_round_trips() -> None:
    topic = parse_record(TOPIC_TEXT, "topics/project-alpha.md")
    assert isinstance(topic, Topic)
    assert topic.aliases == ("Alpha", "Alpha 服务") and topic.created == "2026-09-23T12:00:00+08:00"
    assert render_record(topic) == TOPIC_TEXT


def test_design_example_fact_with_comments_is_read() -> None:
    text = """---
type: fact
id: fact-alpha-getuser-main
topics: [project-alpha]
status: active              # active | expired
confidence: high
provenance: human
repo: project-alpha
version: main
commit: 1a2b3c4
axis: subject
created: 2026-09-23T12:00:00+08:00
---
Alpha on main only offers getUser(id).
"""
    fact = parse_record(text, "facts/x.md")
    assert isinstance(fact, Fact)
    assert fact.status == "active" and fact.commit == "1a2b3c4" and fact.version == "main"
    # Re-rendered canonically (the comment goes), and stable from then on.
    again = render_record(fact)
    assert parse_record(again) == fact and render_record(parse_record(again)) == again


def test_unknown_keys_are_kept_in_order() -> None:
    text = TOPIC_TEXT.replace("status: active\n", "status: active\nzeta: 1\nalpha: [x, y]\ncssclass: wide\n")
    topic = parse_record(text)
    assert list(topic.extra) == ["zeta", "alpha", "cssclass"]
    assert topic.extra == {"zeta": 1, "alpha": ["x", "y"], "cssclass": "wide"}
    rendered = render_record(topic)
    assert parse_record(rendered) == topic
    assert "zeta: 1\nalpha: [x, y]\ncssclass: wide\n" in rendered


def test_crlf_file_keeps_its_line_endings() -> None:
    text = TOPIC_TEXT.replace("\n", "\r\n")
    topic = parse_record(text)
    assert topic.eol == "\r\n"
    assert render_record(topic) == text


def test_bom_is_dropped() -> None:
    topic = parse_record("\ufeff" + TOPIC_TEXT)
    assert topic.id == "project-alpha"
    assert render_record(topic) == TOPIC_TEXT


def test_bad_utf8_names_file_and_line() -> None:
    data = TOPIC_TEXT.encode().replace(b"Alpha is", b"Alpha \xff is")
    with pytest.raises(InvalidRecordError) as err:
        decode_record_bytes(data, path="topics/project-alpha.md")
    assert err.value.line == 11 and "topics/project-alpha.md:11" in str(err.value) and "UTF-8" in str(err.value)


@pytest.mark.parametrize("text,needle,line", [
    ("type: topic\nid: x\n", "does not start with", 1),
    ("---\ntype: topic\nid: x\n", "not closed", None),
    ("---\ntype: topic\nid: x\nid: y\n---\n", "duplicate key 'id'", 4),
    ("---\ntype: topic\nid: x\ntitle: !!python/object:os.system x\n---\n", "tag", 4),
    ("---\ntype: topic\nid: x\ntitle: [unclosed\n---\n", "invalid YAML", None),
    ("---\ntype: note\nid: x\n---\n", "unknown record type", None),
    ("---\ntype: topic\nid: ../x\n---\n", "not a valid id", None),
    ("---\ntype: topic\n---\n", "field 'id': is required", None),
    ("---\ntype: fact\nid: f-1\ntopics: project-alpha\n---\n", "list of strings", None),
    ("---\ntype: fact\nid: f-1\ntopics: [a]\npinned: maybe\n---\n", "true or false", None),
    ("---\ntype: topic\nid: x\ntitle: [a, b]\n---\n", "must be a string", None),
])
def test_invalid_files_name_file_and_line(text: str, needle: str, line: int | None) -> None:
    with pytest.raises(InvalidRecordError) as err:
        parse_record(text, "topics/x.md")
    assert needle in str(err.value)
    assert "topics/x.md" in str(err.value)
    if line is not None:
        assert err.value.line == line, str(err.value)


def test_obsidian_link_values_in_frontmatter() -> None:
    text = "---\ntype: relation\nid: a--part-of--b\nrel: part-of\nfrom: \"[[a]]\"\nto: \"[[b|B]]\"\nstatus: active\n---\n"
    rel = parse_record(text)
    assert isinstance(rel, Relation) and rel.from_ == "a" and rel.to == "b"


def test_every_demo_file_round_trips_byte_for_byte() -> None:
    files = sorted(DEMO.rglob("*.md"))
    assert len(files) >= 10
    kinds = set()
    for path in files:
        data = path.read_bytes()
        record = parse_record(decode_record_bytes(data, path=str(path)), str(path))
        kinds.add(record.type)
        assert render_record(record).encode("utf-8") == data, path
    assert kinds == {"topic", "fact", "relation"}


# ---------------------------------------------------------------- Hypothesis round trips

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
_ID = st.builds(
    lambda first, rest: first + "".join(sep + w for sep, w in rest),
    _WORD, st.lists(st.tuples(st.sampled_from(["-", "--"]), _WORD), max_size=4),
).filter(lambda s: s not in {"con", "nul", "aux", "prn"})
_TEXT = st.one_of(st.text(min_size=1, max_size=40), st.sampled_from([s for s in ODD_STRINGS if s]))
_OPT = st.one_of(st.none(), _TEXT)
_BODY = st.one_of(
    st.text(max_size=200),
    st.sampled_from(["", "Alpha 服务は高速です。\n", "line\n---\nafter\n", "# h\n\n```\n[[x]]\n```\n", "中文正文。\n"]),
)
_TS = st.one_of(st.none(), st.sampled_from(["2026-09-23T12:00:00+08:00", "2026-09-23", "2026-09-23T04:00:00Z"]), _TEXT)
_EXTRA_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _TEXT, st.lists(_TEXT, max_size=3),
)
_EXTRA = st.dictionaries(_WORD.map(lambda w: "x_" + w), _EXTRA_VALUE, max_size=3)
_EOL = st.sampled_from(["\n", "\r\n"])


@st.composite
def topics(draw: st.DrawFn) -> Topic:
    return Topic(
        id=draw(_ID), kind=draw(st.sampled_from(TOPIC_KINDS)), title=draw(_TEXT), body=draw(_BODY),
        aliases=tuple(draw(st.lists(_TEXT, max_size=3))), tags=tuple(draw(st.lists(_TEXT, max_size=3))),
        status=draw(st.sampled_from(STATUSES)), created=draw(_TS), extra=draw(_EXTRA), eol=draw(_EOL),
    )


@st.composite
def facts(draw: st.DrawFn) -> Fact:
    return Fact(
        id=draw(_ID), topics=tuple(draw(st.lists(_ID, min_size=1, max_size=3))), body=draw(_BODY),
        status=draw(st.sampled_from(STATUSES)), confidence=draw(st.sampled_from(CONFIDENCES)),
        provenance=draw(_TEXT), repo=draw(_OPT), version=draw(_OPT), commit=draw(_OPT), axis=draw(_OPT),
        created=draw(_TS), valid_from=draw(_TS), valid_until=draw(_TS), until_commit=draw(_OPT),
        supersedes=tuple(draw(st.lists(_ID, max_size=2))), superseded_by=draw(st.one_of(st.none(), _ID)),
        reason=draw(_OPT), paths=tuple(draw(st.lists(_TEXT, max_size=3))),
        tags=tuple(draw(st.lists(_TEXT, max_size=3))), pinned=draw(st.booleans()), extra=draw(_EXTRA),
        eol=draw(_EOL),
    )


@st.composite
def relations(draw: st.DrawFn) -> Relation:
    return Relation(
        id=draw(_ID), rel=draw(st.sampled_from(RELATION_TYPES)), from_=draw(_ID), to=draw(_ID), body=draw(_BODY),
        status=draw(st.sampled_from(STATUSES)), created=draw(_TS), repo=draw(_OPT), version=draw(_OPT),
        commit=draw(_OPT), until_commit=draw(_OPT), axis=draw(_OPT), valid_from=draw(_TS),
        valid_until=draw(_TS), reason=draw(_OPT), tags=tuple(draw(st.lists(_TEXT, max_size=3))),
        extra=draw(_EXTRA), eol=draw(_EOL),
    )


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=st.one_of(topics(), facts(), relations()))
def test_render_parse_round_trip(record: Topic | Fact | Relation) -> None:
    text = render_record(record)
    parsed = parse_record(text, "x.md")
    assert parsed == record
    assert render_record(parsed) == text
    # A file that went through bytes (as on disk) reads back the same.
    assert parse_record(decode_record_bytes(text.encode("utf-8"))) == record


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=st.one_of(topics(), facts(), relations()))
def test_meta_is_what_the_file_says(record: Topic | Fact | Relation) -> None:
    meta = record_to_meta(record)
    assert list(meta)[:2] == ["type", "id"]
    assert meta["type"] == record.type and is_valid_id(meta["id"])
    assert all(meta[k] == v for k, v in record.extra.items())
