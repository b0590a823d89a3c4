"""The filters people reach for (issue 35.5): --tag, --confidence, --pinned, --provenance, --session, --actor on
am fact list and am search; am topic show and am slice --topic by a title or an alias."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.demo_cli import build_demo, run_am

PYTHON = sys.executable


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    yield from build_demo(tmp_path_factory)


def am(demo: tuple[Path, Path], *args: str, code: int = 0) -> str:
    proc = run_am(*demo, *args, code=code)
    return proc.stdout + proc.stderr


def _ids(demo: tuple[Path, Path], *args: str) -> set[str]:
    return {f["id"] for f in json.loads(am(demo, "fact", "list", "--format", "json", *args))}


def test_fact_list_filters_match_the_fields(demo: tuple[Path, Path]) -> None:
    every = json.loads(am(demo, "fact", "list", "--format", "json"))
    assert _ids(demo, "--confidence", "high") == {f["id"] for f in every if f["confidence"] == "high"}
    assert _ids(demo, "--confidence", "high", "--confidence", "low") == {
        f["id"] for f in every if f["confidence"] in ("high", "low")}
    assert _ids(demo, "--pinned") == {f["id"] for f in every if f.get("pinned")} != set()
    assert _ids(demo, "--not-pinned") == {f["id"] for f in every if not f.get("pinned")}
    assert _ids(demo, "--provenance", "session:") == {f["id"] for f in every
                                                      if f["provenance"].startswith("session:")}
    assert _ids(demo, "--session", "claude-code-1005") == {"f-20261005-1630-e5d2aa"}
    log = json.loads(am(demo, "log", "--format", "json"))
    first = {}
    for entry in log:
        for rid in entry["records"]:
            first[rid] = entry["actor"]
    assert _ids(demo, "--actor", "codex") == {f["id"] for f in every if first.get(f["id"]) == "codex"} != set()
    assert "no facts match --tag nope" in am(demo, "fact", "list", "--tag", "nope")


def test_search_filters_keep_only_facts_that_pass(demo: tuple[Path, Path]) -> None:
    hits = json.loads(am(demo, "search", "redis", "--format", "json"))["hits"]
    assert any(h["type"] == "topic" for h in hits)
    high = json.loads(am(demo, "search", "redis", "--confidence", "high", "--format", "json"))["hits"]
    assert high and all(h["type"] == "fact" for h in high)
    for hit in high:
        assert json.loads(am(demo, "fact", "show", hit["id"], "--format", "json"))["confidence"] == "high"
    by_codex = json.loads(am(demo, "search", "redis", "--actor", "codex", "--format", "json"))["hits"]
    assert [h["id"] for h in by_codex] == ["f-20261012-1100-07bb3e"]


def test_a_topic_by_its_title_or_alias(demo: tuple[Path, Path]) -> None:
    assert am(demo, "topic", "show", "Redis").startswith("tool-redis")
    assert am(demo, "topic", "show", "Alpha 服务").startswith("project-alpha")
    by_title = json.loads(am(demo, "slice", "--topic", "Alpha service", "--max-tokens", "0", "--format", "json"))
    by_id = json.loads(am(demo, "slice", "--topic", "project-alpha", "--max-tokens", "0", "--format", "json"))
    assert by_title["scope"] == by_id["scope"] and by_title["topics"] == by_id["topics"]
    assert "no record with id 'nope-x'" in am(demo, "topic", "show", "nope-x", code=4)
