"""`am assert`, `am due`, `am coverage` on a code repository built here (issue 37.2-37.4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import commit_file, run_git, subprocess_env

PYTHON = sys.executable


class Env:
    def __init__(self, tmp: Path, home: Path) -> None:
        self.vault, self.code, self.home = tmp / "vault", tmp / "code", home

    def run(self, *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(self.vault), *args], capture_output=True,
                              text=True, check=False, cwd=cwd, env=subprocess_env(AM_HOME=str(self.home), **env))

    def am(self, *args: str, code: int = 0, **env: str) -> str:
        proc = self.run(*args, **env)
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        return proc.stdout

    def fact(self, text: str, *world: str) -> str:
        out = json.loads(self.am("fact", "add", text, "--topic", "svc", "--create-topic", *world, "--format", "json"))
        return str(out["records"][0]["id"])


@pytest.fixture
def env(tmp_path: Path, am_home: Path) -> Env:
    e = Env(tmp_path, am_home)
    e.code.mkdir()
    run_git(e.code, "init", "-q", "-b", "main")
    (e.code / "src").mkdir()
    (e.code / "docs").mkdir()
    commit_file(e.code, "src/a.py")
    commit_file(e.code, "src/b.py")
    commit_file(e.code, "docs/guide.md")
    commit_file(e.code, "README")
    subprocess.run([PYTHON, "-m", "am.cli.main", "init", str(e.vault)], check=True, capture_output=True,
                   env=subprocess_env(AM_HOME=str(am_home)))
    e.am("repo", "add", "code", str(e.code))
    return e


def _head(root: Path) -> str:
    return run_git(root, "rev-parse", "HEAD").strip()


def test_assert_fails_on_a_contested_fact_and_passes_once_it_is_resolved(env: Env) -> None:
    e = env
    world = ("--repo", "code", "--branch", "main", "--commit", _head(e.code))
    fid = e.fact("Deploys happen on Tuesdays.", *world)
    e.am("assert", "--repo", "code", "--branch", "main", "--no-contested")
    e.am("fact", "status", fid, "contested", "--reason", "ops says Wednesdays")
    out = json.loads(e.am("assert", "--repo", "code", "--branch", "main", "--no-contested", "--format", "json",
                          code=1))
    assert out["ok"] is False and [f["fact"] for f in out["checks"][0]["failures"]] == [fid]
    text = e.am("assert", "--repo", "code", "--branch", "main", "--no-contested", code=1)
    assert f"FAIL no-contested: {fid}" in text
    e.am("review", "accept", fid, "--reason", "checked: Tuesdays")
    e.am("assert", "--repo", "code", "--branch", "main", "--no-contested", "--holds", fid)
    # A usage error is 2, never 1: no rule, or rules without a world.
    assert e.run("assert", "--repo", "code").returncode == 2
    assert e.run("assert", "--no-contested").returncode == 2


def test_assert_reads_checks_yml_and_names_its_mistakes(env: Env) -> None:
    e = env
    fid = e.fact("The guide lives in docs/guide.md.", "--repo", "code", "--branch", "main", "--commit",
                 _head(e.code), "--path", "docs/gone.md")
    (e.vault / ".am" / "checks.yml").write_text(
        "checks:\n  - repo: code\n    branch: main\n    no_orphan_paths: true\n    holds: [nope-id]\n")
    out = json.loads(e.am("assert", "--format", "json", code=1))
    assert {(f["rule"], f["fact"]) for f in out["checks"][0]["failures"]} == {
        ("no-orphan-paths", fid), ("holds", "nope-id")}
    (e.vault / ".am" / "checks.yml").write_text("checks:\n  - repo: code\n    max_stale_days: soon\n")
    bad = e.run("assert")
    assert bad.returncode != 1 and "max_stale_days" in bad.stderr and "Traceback" not in bad.stderr


def test_assert_max_stale_days_counts_from_the_commit_that_made_it_stale(env: Env) -> None:
    e = env
    fid = e.fact("a.py holds the handler.", "--repo", "code", "--branch", "main", "--commit", _head(e.code),
                 "--path", "src/a.py")
    (e.code / "src" / "a.py").write_text("rewritten\n")
    run_git(e.code, "commit", "-qam", "rewrite a.py")
    e.am("assert", "--repo", "code", "--branch", "main", "--max-stale-days", "3")
    later = "2099-01-01T00:00:00+00:00"
    out = json.loads(e.am("assert", "--repo", "code", "--branch", "main", "--max-stale-days", "3", "--format",
                          "json", code=1, AM_NOW=later))
    assert [f["fact"] for f in out["checks"][0]["failures"]] == [fid]


def test_due_lists_a_fact_whose_watched_file_was_deleted_until_confirmed_here(env: Env) -> None:
    e = env
    fid = e.fact("b.py parses the config.", "--repo", "code", "--branch", "main", "--commit", _head(e.code),
                 "--path", "src/b.py")
    assert json.loads(e.am("due", "--format", "json"))["due"] == []
    run_git(e.code, "rm", "-q", "src/b.py")
    run_git(e.code, "commit", "-qm", "drop b.py")
    due = json.loads(e.am("due", "--repo", "code", "--branch", "main", "--format", "json"))["due"]
    # Deleting it is a change to the watched path, named for what it is: gone.
    assert [(d["kind"], d["fact"]) for d in due] == [("gone", fid)] and "src/b.py" in due[0]["why"]
    assert f"am fact confirm {fid} --here" in due[0]["settle"]
    queue = json.loads(e.am("review", "list", "--repo", "code", "--branch", "main", "--kind", "due", "--format",
                            "json"))
    assert [(i["kind"], i["id"]) for i in queue["items"]] == [("due", fid)] and "gone" in queue["items"][0]["note"]
    before = int(run_git(e.vault, "rev-list", "--count", "HEAD"))
    proc = e.run("fact", "confirm", fid, "--here", cwd=e.code)
    assert proc.returncode == 0, proc.stderr
    assert int(run_git(e.vault, "rev-list", "--count", "HEAD")) == before + 1
    assert json.loads(e.am("due", "--format", "json"))["due"] == []


def test_due_lists_a_changed_watched_file_as_stale(env: Env) -> None:
    e = env
    fid = e.fact("a.py holds the handler.", "--repo", "code", "--branch", "main", "--commit", _head(e.code),
                 "--path", "src/a.py")
    (e.code / "src" / "a.py").write_text("rewritten\n")
    run_git(e.code, "commit", "-qam", "rewrite a.py")
    due = json.loads(e.am("due", "--repo", "code", "--branch", "main", "--format", "json"))["due"]
    assert [(d["kind"], d["fact"]) for d in due] == [("stale", fid)] and "src/a.py changed in" in due[0]["why"]


def test_coverage_counts_match_a_walk_of_the_tree(env: Env) -> None:
    e = env
    head = _head(e.code)
    e.fact("src is Python.", "--repo", "code", "--branch", "main", "--commit", head, "--path", "src/")
    e.fact("README says hi.", "--repo", "code", "--branch", "main", "--commit", head, "--path", "README",
           "--path", "docs/*.rst")
    out = json.loads(e.am("coverage", "--repo", "code", "--branch", "main", "--format", "json"))
    files = run_git(e.code, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert out["files"] == len(files)
    watched = [f for f in files if f.startswith("src/") or f == "README"]
    assert sorted(out["covered_files"]) == sorted(watched) and out["covered"] == len(watched)
    per = {f["folder"]: (f["files"], f["covered"]) for f in out["folders"]}
    assert per == {".": (1, 1), "docs/": (1, 0), "src/": (2, 2)}
    assert [o["paths"] for o in out["orphans"]] == [["docs/*.rst"]]
    text = e.am("coverage", "--repo", "code", "--branch", "main")
    assert f"3 of {len(files)} files watched" in text and "docs/" in text and "not watched" in text
