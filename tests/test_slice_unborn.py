"""A registered clone with no commit yet (a brand-new project): `am slice` there answers, so the SessionStart
hook `am setup` installs does not fail in it (found by the real Claude Code, issue 40)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import run_git, subprocess_env

PYTHON = sys.executable


def test_slice_in_a_clone_with_no_commit_answers_with_the_repos_facts(tmp_path: Path, am_home: Path) -> None:
    env = subprocess_env(AM_HOME=str(am_home))
    vault, code = tmp_path / "vault", tmp_path / "code"
    code.mkdir()
    run_git(code, "init", "-q", "-b", "trunk")
    subprocess.run([PYTHON, "-m", "am.cli.main", "init", str(vault)], check=True, capture_output=True, env=env)

    def am(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PYTHON, "-m", "am.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                              env=env, check=False)

    assert am("--vault", str(vault), "repo", "add", "newproj", str(code), cwd=tmp_path).returncode == 0
    assert am("--vault", str(vault), "fact", "add", "The project starts with a CLI.", "--topic", "newproj",
              "--create-topic", "--repo", "newproj", "--unverified", cwd=tmp_path).returncode == 0
    proc = am("slice", cwd=code)
    assert proc.returncode == 0, proc.stderr
    assert "The project starts with a CLI." in proc.stdout
