"""The record-aware three-way merge (am/records/merge.py): key by key, lists as sets, the lifecycle, splits, kept texts."""

from __future__ import annotations

from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from am.errors import InvalidRecordError
from am.records.codec import parse_record
from am.records.merge import LIFECYCLE, has_merged_text, merge_changes, merge_record
from am.records.model import Fact, Relation, Topic
from am.upkeep.check import check_texts

PATH = "facts/2026/09/23/fact-x.md"
BASE = """---
type: fact
id: fact-x
topics: [project-alpha]
status: active
confidence: medium
provenance: human
tags: [a, b]
created: 2026-09-23T16:30:00+08:00
---
Alpha offers getUser(id).
"""
TOPIC = """---
type: topic
id: project-alpha
kind: project
title: Alpha
created: 2026-09-23T12:00:00+08:00
---
Alpha is the user service.
"""


def fact(text: str) -> Fact:
    record = parse_record(text, PATH)
    assert isinstance(record, Fact)
    return record


def test_keys_changed_on_one_side_each_take_that_side() -> None:
    ours = BASE.replace("confidence: medium", "confidence: high")
    theirs = BASE.replace("Alpha offers getUser(id).", "Alpha offers getUser(id) only.")
    merged = fact(merge_record(PATH, BASE, ours, theirs).text)
    assert merged.confidence == "high" and merged.body == "Alpha offers getUser(id) only.\n"
    assert merged.status == "active"


def test_list_keys_merge_as_sets_three_way() -> None:
    ours = BASE.replace("tags: [a, b]", "tags: [a, b, c]")
    theirs = BASE.replace("tags: [a, b]", "tags: [b, d]")
    merged = fact(merge_record(PATH, BASE, ours, theirs).text)
    assert merged.tags == ("b", "c", "d")  # a removed on one side; c and d added


@pytest.mark.parametrize(("one", "other", "wins"), [
    ("expired", "superseded", "superseded"),
    ("contested", "expired", "expired"),
    ("pending-review", "contested", "contested"),
    ("active", "pending-review", "pending-review"),
    ("superseded", "contested", "superseded"),
])
def test_status_changed_on_both_sides_takes_the_later_lifecycle_state(one: str, other: str, wins: str) -> None:
    third = next(s for s in LIFECYCLE if s not in (one, other))  # both sides changed it from a third state
    base = BASE.replace("status: active", f"status: {third}")
    for a, b in permutations((one, other)):
        ours = base.replace(f"status: {third}", f"status: {a}")
        theirs = base.replace(f"status: {third}", f"status: {b}")
        assert fact(merge_record(PATH, base, ours, theirs).text).status == wins
    assert LIFECYCLE.index(wins) >= max(LIFECYCLE.index(one), LIFECYCLE.index(other))


def test_the_same_facts_text_changed_twice_splits_into_two_contested_facts() -> None:
    ours = BASE.replace("getUser(id).", "getUser(id) and getUsers(ids).")
    theirs = BASE.replace("getUser(id).", "getUser(id), rate limited.")
    result = merge_record(PATH, BASE, ours, theirs)
    assert result.contested[0] == "fact-x" and len(result.contested) == 2
    kept = fact(result.text)
    (copy_path, copy_text), (rel_path, rel_text) = result.extra
    copy = fact(copy_text)
    relation = parse_record(rel_text, rel_path)
    assert kept.status == copy.status == "contested"
    assert {kept.body, copy.body} == {"Alpha offers getUser(id) and getUsers(ids).\n",
                                      "Alpha offers getUser(id), rate limited.\n"}
    assert isinstance(relation, Relation) and relation.rel == "conflicts-with"
    assert {relation.from_, relation.to} == {"fact-x", copy.id}
    assert copy_path.endswith(f"/{copy.id}.md") and rel_path.startswith("relations/2026/09/")
    # The merge is symmetric: either direction gives the same files.
    other_way = merge_record(PATH, BASE, theirs, ours)
    assert (other_way.text, other_way.extra) == (result.text, result.extra)
    report = check_texts([(PATH, result.text.encode()), (copy_path, copy_text.encode()),
                          (rel_path, rel_text.encode())], other_ids={"project-alpha": "topics/project-alpha.md"})
    assert report.errors == []


def test_a_topic_body_changed_on_both_sides_keeps_both_texts_and_check_lists_it() -> None:
    path = "topics/project-alpha.md"
    ours = TOPIC.replace("the user service.", "the user service, in Go.").replace("title: Alpha", "title: Alpha API")
    theirs = TOPIC.replace("the user service.", "the user service behind the app.").replace("title: Alpha",
                                                                                           "title: Alpha svc")
    result = merge_record(path, TOPIC, ours, theirs)
    topic = parse_record(result.text, path)
    assert isinstance(topic, Topic) and has_merged_text(topic.body)
    assert "in Go." in topic.body and "behind the app." in topic.body
    assert {topic.title, *topic.aliases} == {"Alpha API", "Alpha svc"}
    assert "---" not in topic.body and "<<<<<<<" not in result.text
    issues = check_texts([(path, result.text.encode())]).issues
    assert [i.code for i in issues if i.severity == "warning"] == ["merged-text"]
    assert merge_record(path, TOPIC, theirs, ours).text == result.text


def test_a_record_added_on_both_sides_merges_with_no_base() -> None:
    path = "topics/project-alpha.md"
    later = TOPIC.replace("12:00:00", "13:00:00").replace("kind: project", "kind: project\ntags: [x]")
    merged = parse_record(merge_record(path, None, TOPIC, later).text, path)
    assert isinstance(merged, Topic) and merged.created == "2026-09-23T12:00:00+08:00" and merged.tags == ("x",)


def test_a_side_that_is_not_a_record_is_refused() -> None:
    with pytest.raises(InvalidRecordError):
        merge_record(PATH, BASE, BASE.replace("getUser", "getUsers"), "<<<<<<< not a record\n")


def test_changes_deleted_on_one_side_and_edited_on_the_other_keep_the_edit() -> None:
    blobs = {"b1": BASE.encode(), "b2": BASE.replace("getUser", "getUsers").encode()}
    merged = merge_changes({PATH: None}, {PATH: "b2"}, base={PATH: "b1"}, read=blobs.__getitem__,
                           exists=lambda p: None)
    assert merged.files == {PATH: "b2"}
    merged = merge_changes({PATH: "b2"}, {PATH: None}, base={PATH: "b1"}, read=blobs.__getitem__,
                           exists=lambda p: None)
    assert merged.files == {}  # ours keeps its edit
    other = merge_changes({}, {".am/vault.yml": "b1"}, base={}, read=blobs.__getitem__, exists=lambda p: None)
    assert other.files == {".am/vault.yml": "b1"} and other.conflicts == ()
    both = merge_changes({".am/vault.yml": "b2"}, {".am/vault.yml": "b1"}, base={}, read=blobs.__getitem__,
                         exists=lambda p: None)
    assert both.conflicts == (".am/vault.yml",)


words = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=4, unique=True)


def test_a_decision_names_a_readable_file_by_its_records_id() -> None:
    """A record added on one side under Obsidian's readable name was named by its file name in the trailers."""
    readable = "facts/Alpha offers getUser.md"
    blobs = {"b1": BASE.encode(), "b2": BASE.replace("getUser", "getUsers").encode()}
    merged = merge_changes({}, {readable: "b1", PATH: "b2"}, base={}, read=blobs.__getitem__, exists=lambda p: None)
    assert sorted((d.id, d.path, d.how) for d in merged.decisions) == [("fact-x", PATH, "union"),
                                                                       ("fact-x", readable, "union")]
    gone = merge_changes({readable: None}, {readable: "b2"}, base={readable: "b1"}, read=blobs.__getitem__,
                         exists=lambda p: None)
    assert [(d.id, d.how) for d in gone.decisions] == [("fact-x", "kept")]


@given(base=words, ours=words, theirs=words)
@settings(deadline=None)  # a property of the merge, not of its speed: a loaded machine must not fail it on time
def test_list_merge_is_symmetric_and_keeps_every_addition(base: list[str], ours: list[str], theirs: list[str]) -> None:
    def text(tags: list[str]) -> str:
        return BASE.replace("tags: [a, b]", f"tags: [{', '.join(tags)}]" if tags else "tags: []")

    one = fact(merge_record(PATH, text(base), text(ours), text(theirs)).text).tags
    two = fact(merge_record(PATH, text(base), text(theirs), text(ours)).text).tags
    assert one == two
    added = (set(ours) - set(base)) | (set(theirs) - set(base))
    assert added <= set(one)
    assert not ((set(base) - set(ours)) | (set(base) - set(theirs))) & set(one) or not ours or not theirs
