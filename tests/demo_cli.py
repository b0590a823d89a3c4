"""The demo vault built once for a test module, and `am` run on it as a subprocess: shared by the tests of
commands that only read it (stats, fact show, filters)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import subprocess_env

PYTHON = sys.executable


def build_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """Yield (the demo vault, its AM_HOME): made by `am demo` in a registry of its own."""
    home = tmp_path_factory.mktemp("demo-home")
    root = tmp_path_factory.mktemp("demo") / "demo"
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "demo", str(root)], capture_output=True, text=True,
                          check=False, env=subprocess_env(AM_HOME=str(home)))
    assert proc.returncode == 0, proc.stderr
    yield root, home


def run_am(root: Path, home: Path, *args: str, code: int = 0, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `am --vault ROOT ARGS` with ``home`` as AM_HOME; assert its exit code."""
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), *args], capture_output=True,
                          text=True, check=False, env=subprocess_env(AM_HOME=str(home), **env))
    assert proc.returncode == code, (args, proc.stdout, proc.stderr)
    return proc
