"""Three papercuts (../shared/PAPERCUTS.md): supersede's output in the order it happened; am undo of an undone
commit is done (exit 0), not a failure; am init inside a vault's folder is refused unless --nested."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_git, subprocess_env

PYTHON = sys.executable


def _am(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "am.cli.main", *args], capture_output=True, text=True, check=False,
                          cwd=cwd, env=subprocess_env(AM_HOME=str(home)))


def test_supersede_says_old_with_new_and_undo_twice_is_done(tmp_path: Path, am_home: Path) -> None:
    vault = tmp_path / "v"
    assert _am(am_home, "init", str(vault)).returncode == 0
    v = ("--vault", str(vault))
    old = json.loads(_am(am_home, *v, "fact", "add", "Old text.", "--topic", "ops", "--create-topic",
                         "--format", "json").stdout)["records"][0]["id"]
    out = _am(am_home, *v, "fact", "supersede", old, "New text.", "--reason", "changed").stdout
    assert out.startswith(f"superseded fact {old} with fact f-") and "also wrote" not in out
    commit = run_git(vault, "rev-parse", "HEAD").strip()
    assert _am(am_home, *v, "undo", commit).returncode == 0
    again = _am(am_home, *v, "undo", commit)
    assert again.returncode == 0 and "already undone" in again.stdout and "nothing to do" in again.stdout
    data = json.loads(_am(am_home, *v, "undo", commit, "--format", "json").stdout)
    assert data["undone"] is False and data["already"] is True


def test_init_inside_a_vault_is_refused_unless_nested(tmp_path: Path, am_home: Path) -> None:
    outer = tmp_path / "outer"
    assert _am(am_home, "init", str(outer)).returncode == 0
    (outer / "notes").mkdir()
    refused = _am(am_home, "init", "inner", cwd=outer / "notes")
    assert refused.returncode == 2 and "inside the vault at" in refused.stderr and "--nested" in refused.stderr
    assert not (outer / "notes" / "inner").exists()
    assert _am(am_home, "init", "inner", "--nested", cwd=outer / "notes").returncode == 0
    # Adopting the vault itself again (a re-run of am init in it) is not nesting.
    assert _am(am_home, "init", str(outer), "--replace").returncode == 0
