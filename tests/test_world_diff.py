"""`am diff A B` and `--merge-preview` on a code repository built here (issue 37.1).

The oracle for the preview is the merge itself: made with the git CLI afterwards, `am slice`
on main must hold, mark stale and mark contested exactly what the preview said.
"""

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

    def am(self, *args: str, code: int = 0) -> str:
        proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(self.vault), *args], capture_output=True,
                              text=True, check=False, env=subprocess_env(AM_HOME=str(self.home)))
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        return proc.stdout if code == 0 else proc.stderr

    def fact(self, text: str, *world: str) -> str:
        out = json.loads(self.am("fact", "add", text, "--topic", "svc", "--create-topic", *world, "--format", "json"))
        return str(out["records"][0]["id"])

    def sha(self, rev: str) -> str:
        return run_git(self.code, "rev-parse", rev).strip()


@pytest.fixture
def env(tmp_path: Path, am_home: Path) -> Env:
    """main: a.py, b.py; feat: changes a.py, renames b.py to c.py, adds d.py. Facts on both, one contested."""
    e = Env(tmp_path, am_home)
    e.code.mkdir()
    run_git(e.code, "init", "-q", "-b", "main")
    commit_file(e.code, "a.py")
    commit_file(e.code, "b.py")
    subprocess.run([PYTHON, "-m", "am.cli.main", "init", str(e.vault)], check=True, capture_output=True,
                   env=subprocess_env(AM_HOME=str(am_home)))
    e.am("repo", "add", "code", str(e.code))
    run_git(e.code, "checkout", "-q", "-b", "feat")
    (e.code / "a.py").write_text("changed on feat\n")
    run_git(e.code, "commit", "-qam", "feat: a.py")
    run_git(e.code, "mv", "b.py", "c.py")
    run_git(e.code, "commit", "-qm", "feat: rename b.py")
    commit_file(e.code, "d.py")
    run_git(e.code, "checkout", "-q", "main")
    commit_file(e.code, "e.py")
    return e


def _state(e: Env, branch: str) -> dict[str, set[str]]:
    """What am slice holds and marks stale on a branch, from its whole pack."""
    pack = json.loads(e.am("slice", "--repo", "code", "--branch", branch, "--max-tokens", "0", "--format", "json"))
    held = [f for t in pack["topics"] for f in t["facts"]] + pack["pinned"] + pack["contested"] + pack["stale"]
    return {"holds": {f["id"] for f in held}, "stale": {f["id"] for f in pack["stale"]}}


def test_diff_lists_exactly_the_facts_whose_holding_differs_by_kind(env: Env) -> None:
    e = env
    base = e.sha("main~1")
    on_both = e.fact("The service reads config from a.py.", "--repo", "code", "--branch", "main", "--commit", base,
                     "--path", "a.py")
    on_feat = e.fact("feat renames b.py to c.py.", "--repo", "code", "--branch", "feat", "--commit", e.sha("feat"))
    on_main = e.fact("main has e.py.", "--repo", "code", "--branch", "main", "--commit", e.sha("main"))
    out = json.loads(e.am("diff", "--repo", "code", "main", "feat", "--format", "json"))
    changes = {(c["kind"], c["side"], c["id"]) for cs in out["topics"].values() for c in cs}
    # a.py changed on feat after the fact's commit: stale there only; each branch's own fact holds there only.
    assert changes == {("holds", "a", on_main), ("holds", "b", on_feat), ("stale", "b", on_both)}
    assert out["counts"]["holds"] == {"a": 1, "b": 1}
    text = e.am("diff", "--repo", "code", "main", "feat")
    assert text.startswith("## Memory: code@main → code@feat") and f"**stale only in code@feat** `{on_both}`" in text


@pytest.mark.parametrize("how", ["merge", "squash"])
def test_merge_preview_equals_the_slice_of_main_after_the_merge_is_made(env: Env, how: str) -> None:
    e = env
    base = e.sha("main~1")
    watching = e.fact("The service reads config from a.py.", "--repo", "code", "--branch", "main", "--commit", base,
                      "--path", "a.py")
    e.fact("feat renames b.py to c.py.", "--repo", "code", "--branch", "feat", "--commit", e.sha("feat"))
    e.fact("main has e.py.", "--repo", "code", "--branch", "main", "--commit", e.sha("main"), "--path", "e.py")
    preview = json.loads(e.am("diff", "--repo", "code", "main", "feat", "--merge-preview", "--format", "json"))
    before = {"holds": set(preview["a"]["holds"]), "stale": set(preview["a"]["stale"])}
    after = {"holds": set(preview["b"]["holds"]), "stale": set(preview["b"]["stale"])}
    assert before == _state(e, "main")
    assert watching in after["stale"] and watching not in before["stale"]
    # Nothing the user sees moved: main, its index and work tree are as they were.
    assert run_git(e.code, "status", "--porcelain") == "" and e.sha("main") == e.sha("HEAD")
    if how == "merge":
        run_git(e.code, "merge", "-q", "--no-edit", "feat")
        assert _state(e, "main") == after
    else:
        # A squash merge brings feat's changes as one commit: am sees feat's facts land by patch id
        # (am/worlds/landed.py), so main holds what the preview of a merge said.
        run_git(e.code, "merge", "-q", "--squash", "feat")
        run_git(e.code, "commit", "-qm", "squash feat")
        squashed = _state(e, "main")
        assert squashed == after, (squashed, after, before)
