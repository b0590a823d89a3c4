"""Ids, slugs and record paths: nothing a user or agent types can name a file outside the vault."""

from __future__ import annotations

import os
import unicodedata
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from am.errors import InvalidIdError, InvalidRecordError
from am.records.ids import (
    check_id,
    check_record_path,
    format_timestamp,
    is_valid_id,
    new_fact_id,
    parse_timestamp,
    record_path,
    relation_id,
    slugify,
    topic_id,
)

HOSTILE = [
    "../x", "../../etc/passwd", "/etc/passwd", "C:\\x", "c:x", "CON", "con", "nul", "com1", "lpt9",
    ".git", ".", "..", "", " ", "a/b", "a\\b", "a..b", "-x", "x-", "a---b", "A", "Project-Alpha",
    "\u200c.git", "a\u200bb", "caf\u00e9", "cafe\u0301", "x" * 256, "é" * 128, "a\x00b", "a\nb",
    "topics/x", "x.md", "x y", "ｘ", "İ",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_ids_are_refused(value: str) -> None:
    assert not is_valid_id(value)
    with pytest.raises(InvalidIdError) as err:
        check_id(value)
    assert "not a valid id" in str(err.value)
    assert "lowercase ASCII" in str(err.value)


@pytest.mark.parametrize("value", ["project-alpha", "f-20260923-1630-3f0e99", "a--depends-on--b", "x", "0123"])
def test_good_ids_pass(value: str) -> None:
    assert check_id(value) == value


def test_max_id_length() -> None:
    assert is_valid_id("a" * 120)
    assert not is_valid_id("a" * 121)


@pytest.mark.parametrize("title", ["CON", "con", "Nul", "COM1", "...", "../..", "/", "\u200c", "日本語", "", "  "])
def test_slugify_never_gives_reserved_or_empty(title: str) -> None:
    slug = slugify(title)
    assert is_valid_id(slug), slug
    assert slug.lower() not in {"con", "nul", "prn", "aux", "com1"}


def test_slug_of_non_ascii_title_is_stable_and_nfc_insensitive() -> None:
    nfc = unicodedata.normalize("NFC", "Ærø 服务")
    nfd = unicodedata.normalize("NFD", "Ærø 服务")
    assert slugify("服务") == slugify("服务") == "t" + slugify("服务")[1:]
    assert slugify("服务").startswith("t") and len(slugify("服务")) == 9
    assert slugify(nfc) == slugify(nfd)


def test_case_twins_give_one_id() -> None:
    assert topic_id("tool", "Redis") == topic_id("tool", "REDIS") == topic_id("tool", "redis") == "tool-redis"


def test_long_title_is_cut() -> None:
    tid = topic_id("concept", "word " * 100)
    assert is_valid_id(tid) and len(tid) <= 70


def test_new_fact_ids_sort_by_time_and_differ() -> None:
    t1 = datetime(2026, 9, 23, 16, 30, tzinfo=timezone.utc)
    t2 = datetime(2026, 9, 23, 16, 31, tzinfo=timezone.utc)
    ids = {new_fact_id(t1) for _ in range(200)}
    assert len(ids) == 200
    assert all(i.startswith("f-20260923-1630-") and is_valid_id(i) for i in ids)
    assert max(ids) < new_fact_id(t2)


def test_relation_id() -> None:
    assert relation_id("project-alpha", "depends-on", "tool-redis") == "project-alpha--depends-on--tool-redis"
    with pytest.raises(InvalidIdError):
        relation_id("../x", "depends-on", "tool-redis")


def test_record_paths_are_sharded() -> None:
    created = "2026-09-23T12:00:00+08:00"
    assert record_path("topic", "project-alpha", None) == PurePosixPath("topics/project-alpha.md")
    assert record_path("fact", "f-1", created) == PurePosixPath("facts/2026/09/23/f-1.md")
    assert record_path("relation", "a--part-of--b", created) == PurePosixPath("relations/2026/09/a--part-of--b.md")
    with pytest.raises(InvalidRecordError):
        record_path("fact", "f-1", None)
    with pytest.raises(InvalidRecordError):
        record_path("note", "f-1", created)
    with pytest.raises(InvalidIdError):
        record_path("topic", "../x", None)


@pytest.mark.parametrize("path", [
    "../topics/x.md", "/etc/passwd", "topics/../../x.md", "topics/.git/x.md", "topics/x.txt", "notes/x.md",
    "topics/CON.md", "topics/con.md", "topics/a\\b.md", "topics/C:x.md", "facts/2026/\x00/x.md", ".git/config",
    "topics/.x.md", "", "topics",
])
def test_check_record_path_rejects_escapes(path: str) -> None:
    with pytest.raises(InvalidRecordError) as err:
        check_record_path(path)
    assert "not a safe record path" in str(err.value)


def test_check_record_path_accepts_hand_placed_files() -> None:
    assert check_record_path("topics/people/Li Wei 李伟.md") == PurePosixPath("topics/people/Li Wei 李伟.md")
    assert check_record_path("facts/2026/09/23/f-1.md").name == "f-1.md"


def test_timestamps_round_trip() -> None:
    moment = parse_timestamp("2026-09-23T12:00:00+08:00")
    assert format_timestamp(moment) == "2026-09-23T12:00:00+08:00"
    assert parse_timestamp("2026-09-23T04:00:00Z").utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    with pytest.raises(InvalidRecordError) as err:
        parse_timestamp("yesterday", field="valid_from", path="facts/x.md")
    assert "facts/x.md" in str(err.value) and "valid_from" in str(err.value)


def _inside(vault: Path, rel: PurePosixPath) -> bool:
    full = os.path.normpath(vault / rel)
    return full.startswith(str(vault) + os.sep)


@settings(max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(title=st.text(max_size=300), kind=st.sampled_from(["project", "tool", "concept"]))
def test_fuzzed_titles_never_escape(title: str, kind: str) -> None:
    vault = Path("/vault")
    tid = topic_id(kind, title)
    assert is_valid_id(tid)
    for rtype, created in (("topic", None), ("fact", "2026-09-23"), ("relation", "2026-09-23")):
        rel = record_path(rtype, tid, created)
        assert _inside(vault, rel)
        assert check_record_path(rel) == rel
        assert rel.name == f"{tid}.md" and len(rel.name.encode()) < 255


@pytest.mark.stress
@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(title=st.text(max_size=300), kind=st.sampled_from(["project", "tool", "concept"]))
def test_fuzzed_titles_never_escape_at_the_bar(title: str, kind: str) -> None:
    """RELIABILITY.md's bar, 10k fuzzed titles and 0 escapes (the default suite runs 2,000 of them)."""
    test_fuzzed_titles_never_escape.hypothesis.inner_test(title=title, kind=kind)


@settings(max_examples=2_000, deadline=None)
@given(raw=st.text(max_size=200))
def test_fuzzed_ids_are_either_refused_or_safe(raw: str) -> None:
    if not is_valid_id(raw):
        with pytest.raises(InvalidIdError):
            record_path("topic", raw, None)
        return
    rel = record_path("topic", raw, None)
    assert _inside(Path("/vault"), rel) and raw.isascii() and raw == raw.lower()


@settings(max_examples=2_000, deadline=None)
@given(parts=st.lists(st.sampled_from(["..", ".", "", "topics", "facts", "x.md", ".git", "/", "a", "CON.md"]),
                      min_size=1, max_size=6))
def test_fuzzed_paths_accepted_only_inside(parts: list[str]) -> None:
    text = "/".join(parts)
    try:
        rel = check_record_path(text)
    except InvalidRecordError:
        return
    assert _inside(Path("/vault"), rel)
    assert ".." not in rel.parts and not rel.is_absolute()
