"""`am fact show` shows the world, valid time, reason and watched paths, and where the fact holds (issue 37.5)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import subprocess_env
from tests.demo_cli import build_demo, run_am

PYTHON = sys.executable


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    yield from build_demo(tmp_path_factory)


def am(demo: tuple[Path, Path], *args: str, code: int = 0, **env: str) -> str:
    return run_am(*demo, *args, code=code, **env).stdout


def _why_holds(demo: tuple[Path, Path], fact_id: str, branch: str) -> bool:
    return bool(json.loads(am(demo, "why", fact_id, "--repo", "project-alpha", "--branch", branch,
                              "--format", "json"))["holds"])


def test_a_branch_fact_holds_on_its_branch_and_not_on_main_as_why_says(demo: tuple[Path, Path]) -> None:
    shown = json.loads(am(demo, "fact", "show", "f-20261005-1630-e5d2aa", "--format", "json"))
    where = {item["world"]["branch"]: item for item in shown["holds_in"]}
    assert where["feat-rate-limit"]["holds"] is True
    assert where["main"]["holds"] is False and "not an ancestor of main" in where["main"]["why"]
    # The same verdicts as am why, the one judge of a world.
    for branch, item in where.items():
        assert item["holds"] == _why_holds(demo, "f-20261005-1630-e5d2aa", branch)
    text = am(demo, "fact", "show", "f-20261005-1630-e5d2aa")
    assert "watches: src/api/limits.py" in text and "project-alpha@main: does not hold" in text


def test_a_fact_superseded_on_main_says_so_with_its_reason(demo: tuple[Path, Path]) -> None:
    text = am(demo, "fact", "show", "fact-alpha-getuser-main")
    assert "reason: batch getUsers(ids) added on feat-batch" in text
    assert "project-alpha@main: does not hold (superseded here by f-20261002-0915-c4f1a5" in text


def test_a_fact_past_its_valid_until_does_not_read_as_plainly_active(tmp_path: Path, demo: tuple[Path, Path]) -> None:
    _, home = demo
    vault = (tmp_path / "v", home)
    subprocess.run([PYTHON, "-m", "am.cli.main", "init", str(vault[0])], check=True, capture_output=True,
                   env=subprocess_env(AM_HOME=str(home)))
    out = json.loads(am(vault, "fact", "add", "The freeze lasts until the release.", "--topic", "ops",
                        "--create-topic", "--valid-until", "2026-11-01", "--format", "json"))
    fact_id = out["records"][0]["id"]
    shown = json.loads(am(vault, "fact", "show", fact_id, "--format", "json", AM_NOW="2026-12-01T00:00:00+00:00"))
    assert shown["status"] == "active" and shown["valid_now"] is False
    assert shown["holds_in"] == [{"world": {"repo": None, "branch": None}, "holds": False, "section": None,
                                  "why": shown["holds_in"][0]["why"]}]
    text = am(vault, "fact", "show", fact_id, AM_NOW="2026-12-01T00:00:00+00:00")
    assert "note: status active as written, but its valid time ended 2026-11-01" in text
    assert "valid: from always until 2026-11-01" in text
    before = json.loads(am(vault, "fact", "show", fact_id, "--format", "json", AM_NOW="2026-10-01T00:00:00+00:00"))
    assert before["valid_now"] is True and before["holds_in"][0]["holds"] is True
