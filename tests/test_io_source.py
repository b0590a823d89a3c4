"""The pure pieces of import: kinds, relation types, times, keys, stable ids, redaction."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from am.io.source import (
    Builder,
    confidence_of,
    extra_key,
    guess_kind,
    map_relation,
    to_timestamp,
)
from am.records.model import Fact
from am.records.redact import MASK, redact_text, redact_value
from am.records.secrets import scan_fields, scan_text


@pytest.mark.parametrize("source,kind", [("person", "person"), ("People", "person"), ("organization", "org"),
                                         ("Company", "org"), ("software", "tool"), ("Framework", "tool"),
                                         ("ADR", "decision"), ("meeting", "event"), ("widget", "concept"),
                                         (None, "concept"), ("projects", "project")])
def test_guess_kind(source: str | None, kind: str) -> None:
    assert guess_kind(source) == kind


@pytest.mark.parametrize("source,rel", [("depends_on", "depends-on"), ("Depends On", "depends-on"),
                                        ("works_at", "belongs-to"), ("part_of", "part-of"),
                                        ("created_by", "authored-by"), ("contradicts", "conflicts-with"),
                                        ("replaces", "supersedes"), ("links_to", "references"),
                                        ("somewhat_related_to", "references")])
def test_map_relation(source: str, rel: str) -> None:
    assert map_relation(source) == rel


def test_times() -> None:
    assert to_timestamp(1786064968082) == "2026-08-07T01:09:28Z"  # epoch milliseconds
    assert to_timestamp(1786064968) == "2026-08-07T01:09:28Z"  # epoch seconds
    assert to_timestamp("2026-04-20T09:15") == "2026-04-20T09:15"  # kept as written
    assert to_timestamp("2025-01-10T09:00:00.000Z") == "2025-01-10T09:00:00.000Z"
    assert to_timestamp("2025-01-10T09:00:00.5+0100") == "2025-01-10T09:00:00+01:00"
    assert to_timestamp("yesterday") is None and to_timestamp(True) is None and to_timestamp(None) is None


def test_keys_and_confidence() -> None:
    assert extra_key("moodScore") == "moodScore"
    assert extra_key("version") == "source_version" and extra_key("pinned") == "source_pinned"
    assert extra_key("source_id") == "source_source_id"
    assert extra_key("a b/c") == "a_b_c" and extra_key("1st") == "f_1st"
    assert (confidence_of(0.9), confidence_of(0.5), confidence_of(0.1)) == ("high", "medium", "low")
    assert confidence_of(3) is None and confidence_of(True) is None


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=80))
def test_fact_ids_are_stable_and_valid(name: str, text: str) -> None:
    from am.records.ids import is_valid_id

    one, two = Builder("mcp-memory", "2026-01-01"), Builder("mcp-memory", "2026-01-01")
    assert one.fact_id(name, text) == two.fact_id(name, text)
    assert is_valid_id(one.fact_id(name, text))
    assert one.fact_id(name, text) != Builder("lossless", "2026-01-01").fact_id(name, text)
    if text.strip():
        tid = one.topic(name, origin="x")
        assert is_valid_id(tid)
        assert one.fact(text, key=(name, text), topics=[tid], origin="x") is not None


def test_half_stated_supersession_is_completed() -> None:
    b = Builder("openclaw", "2026-01-01")
    tid = b.topic("T", origin="x")
    old = b.fact("old", key=("1",), topics=[tid], origin="x", source_id="1")
    new = b.fact("new", key=("2",), topics=[tid], origin="x", source_id="2")
    assert old and new
    b.supersede(old, new)
    facts = {i.record.id: i.record for i in b.finish().items if isinstance(i.record, Fact)}
    assert facts[old].superseded_by == new and facts[old].status == "superseded"
    assert facts[new].supersedes == (old,)


def test_redaction_masks_what_the_scan_finds() -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    text = f"deploy with {token} and AKIA" + "IOSFODNN7EXAMPL3 today"
    assert len(scan_text(text)) == 2
    cleaned = redact_text(text)
    assert cleaned.count(MASK) == 2 and scan_text(cleaned) == []
    assert redact_value("api_token", "8f2Kq9Zx7Lw3Rt6Yp1Vb4Nm0") == MASK
    assert scan_fields({"api_token": redact_value("api_token", "8f2Kq9Zx7Lw3Rt6Yp1Vb4Nm0")}) == []
    assert redact_value("notes", ["ok", {"k": token}]) == ["ok", {"k": MASK}]
