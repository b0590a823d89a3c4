"""Helpers shared by the adversarial Git tests: am as a real process, Git's state read with the git CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import PYTHON, run_git, subprocess_env


def am(vault_path: Path, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``am --vault PATH ARGS`` as its own process."""
    return subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault_path), *args], capture_output=True,
                          text=True, env=subprocess_env(**env), timeout=timeout, check=False)


def add_fact(vault_path: Path, text: str, **env: str) -> subprocess.CompletedProcess[str]:
    return am(vault_path, "fact", "add", text, "--topic", "project-alpha", "--format", "json", **env)


def fact_id(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return str(data["records"][0]["id"])


def head_files(root: Path, *tops: str) -> set[str]:
    return set(run_git(root, "ls-tree", "-r", "--name-only", "HEAD", *tops).split())


def staged_differences(root: Path) -> str:
    """What Git's index holds that HEAD does not (or lacks that HEAD has): empty when they agree."""
    return run_git(root, "diff", "--cached", "--name-status").strip()


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """Assert the process failed with one 'Error:' line and no traceback; return the line."""
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]
