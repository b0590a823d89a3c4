"""`am clean` (issue 41: OpenChronicle's clean memory): every holding fact expired in one commit, undone by git revert."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_git, subprocess_env

PYTHON = sys.executable


def am(vault: Path, home: Path, *args: str, code: int = 0) -> str:
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault), *args], capture_output=True, text=True,
                          check=False, stdin=subprocess.DEVNULL, env=subprocess_env(AM_HOME=str(home)))
    assert proc.returncode == code, (args, proc.stdout, proc.stderr)
    return proc.stdout + proc.stderr


def _statuses(vault: Path, home: Path) -> dict[str, str]:
    return {f["id"]: f["status"] for f in json.loads(am(vault, home, "fact", "list", "--format", "json"))}


def test_clean_expires_every_holding_fact_in_one_commit_and_revert_brings_them_back(tmp_path: Path,
                                                                                   am_home: Path) -> None:
    vault = tmp_path / "v"
    subprocess.run([PYTHON, "-m", "am.cli.main", "init", str(vault)], check=True, capture_output=True,
                   env=subprocess_env(AM_HOME=str(am_home)))
    ids = []
    for text, topic in (("Deploys on Tuesdays.", "ops"), ("The API is REST.", "api"), ("Ops pages at night.", "ops")):
        out = am(vault, am_home, "fact", "add", text, "--topic", topic, "--create-topic", "--format", "json")
        ids.append(json.loads(out[out.index("{"):])["records"][0]["id"])
    old = ids[0]  # an ops fact, expired before the clean: a clean leaves it as it is
    am(vault, am_home, "fact", "expire", old, "--reason", "done")
    before = _statuses(vault, am_home)
    files = set(run_git(vault, "ls-files").split())
    out = am(vault, am_home, "clean", "--reason", "start over", code=2)  # no terminal to ask on: refused
    assert "--yes" in out and _statuses(vault, am_home) == before
    head = run_git(vault, "rev-parse", "HEAD").strip()
    am(vault, am_home, "clean", "--topic", "ops", "--reason", "ops rewritten", "--yes")
    after_topic = _statuses(vault, am_home)
    assert int(run_git(vault, "rev-list", "--count", f"{head}..HEAD")) == 1
    assert [s for fid, s in after_topic.items() if s == "active"] == ["active"]  # the api fact is left
    am(vault, am_home, "clean", "--reason", "start over", "--yes")
    assert set(_statuses(vault, am_home).values()) == {"expired"}
    assert set(run_git(vault, "ls-files").split()) == files  # nothing deleted
    run_git(vault, "revert", "--no-edit", "HEAD")
    assert _statuses(vault, am_home) == after_topic
    am(vault, am_home, "clean", "--topic", "nope", "--reason", "x", "--yes", code=4)
