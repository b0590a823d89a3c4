"""Shared fixtures: an isolated $AM_HOME, a git identity, fresh vaults, and the git CLI as oracle.

Git state is always checked with the git CLI (``git`` / ``run_git``), never only
with am's own code.
"""

from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests check what the code does, never how fast: a per-example deadline is a timed
# assertion, and on a shared machine it failed a test whose code had not changed.
settings.register_profile("am", deadline=None)
settings.load_profile("am")

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def _temp_in_memory(folder: str = "/dev/shm", room: int = 2 << 30) -> None:
    """Put the tests' temporary folders (tmp_path, and what the processes they start make) in memory.

    am makes every write durable: a pack and a work tree are flushed with syncfs, which waits for
    every dirty page of the whole file system, other processes' too. On a disk that wait was most
    of the suite's time (tests/test_trees.py: 41 s on disk, 4 s in memory) and grew with whatever
    else the machine wrote. A kill -9 loses nothing of the page cache, so what the tests check is
    the same; the flushes are still made, they just return at once. Where $TMPDIR is set, or there
    is no such folder with room, the temporary folders stay where they were.
    """
    if os.environ.get("TMPDIR") or not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        return
    stat = os.statvfs(folder)
    if stat.f_bavail * stat.f_frsize < room:
        return
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = None  # computed again from $TMPDIR on next use


_temp_in_memory()


def _compiled_once() -> None:
    """Write am's bytecode before the tests start the hundreds of `python -m am...` processes they start.

    Under $PYTHONDONTWRITEBYTECODE (.ci/run sets it) no process wrote any: each one compiled every am
    module it imported from source again (a third of a short command's CPU), and pytest rewrote and
    compiled every test module again in each worker. The files go where Python keeps them anyway
    (__pycache__/, ignored by git); a process that finds one fresh reads it whatever that variable says.
    """
    import compileall

    compileall.compile_dir(REPO_ROOT / "am", quiet=1)
    sys.dont_write_bytecode = False  # this run's own imports (the test modules, as pytest rewrites them)


_compiled_once()

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Person",
    "GIT_AUTHOR_EMAIL": "person@example.com",
    "GIT_COMMITTER_NAME": "Test Person",
    "GIT_COMMITTER_EMAIL": "person@example.com",
}

# Variables that would make a test depend on the machine it runs on.
_AM_VARS = ("AM_VAULT", "AM_ACTOR", "AM_NOW", "AM_FAILPOINT")


def run_git(root: Path, *args: str, check: bool = True, input: str | None = None) -> str:
    """Run the git CLI in ``root`` and return its standard output."""
    proc = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, input=input,
        env={**os.environ, **GIT_IDENTITY},
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout


def commit_file(root: Path, name: str, message: str | None = None) -> str:
    """Write a file (its text is the message), commit it with the git CLI, return the commit id."""
    message = message or name
    (root / name).write_text(message + "\n")
    run_git(root, "add", name)
    run_git(root, "commit", "-q", "-m", message)
    return run_git(root, "rev-parse", "HEAD").strip()


def subprocess_env(**extra: str) -> dict[str, str]:
    """Return an environment for child processes that import am from this checkout."""
    env = {**os.environ, **GIT_IDENTITY, "PYTHONPATH": str(REPO_ROOT)}
    env.update(extra)
    return env


@pytest.fixture(autouse=True)
def am_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point $AM_HOME at a temporary folder so the registry never touches ~/.am."""
    home = tmp_path_factory.mktemp("am-home")
    monkeypatch.setenv("AM_HOME", str(home))
    for name in _AM_VARS:
        monkeypatch.delenv(name, raising=False)
    # The vector level is off unless a test turns it on (tests/test_semantic*.py): the suite
    # gives the same answers whether or not the am[semantic] extra is installed.
    monkeypatch.setenv("AM_EMBEDDINGS", "off")
    # The cache takes a record am just wrote from the write, not by parsing the file again;
    # here every such record is also parsed back and must equal it (am/cache/index.py).
    monkeypatch.setenv("AM_CHECK_KNOWN", "1")
    for name, value in GIT_IDENTITY.items():
        monkeypatch.setenv(name, value)
    return home


@pytest.fixture(autouse=True)
def am_logger() -> Iterator[None]:
    """Put the "am" logger back after each test: a command run in-process through
    ``am.cli.main.main`` installs its stderr handler, which would otherwise write
    warnings into a later test's CliRunner output (and break its JSON)."""
    logger = logging.getLogger("am")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


@pytest.fixture(autouse=True)
def few_open_files() -> Iterator[None]:
    """Collect the garbage after a test that leaves many files open.

    A Vault or store left in a reference cycle keeps libgit2's pack files open until the garbage
    collector runs; a worker that ran a few hundred tests held over 1,000, and select.select refuses
    a descriptor numbered past 1023 (tests/test_mcp_malformed.py, tests/test_review_keys.py). One
    collection frees them all; counting them costs a folder read per test.
    """
    yield
    if os.path.isdir("/proc/self/fd") and len(os.listdir("/proc/self/fd")) > 256:
        gc.collect()


@pytest.fixture
def vault_path(tmp_path: Path) -> Path:
    """Return where the test's vault lives (not yet created)."""
    return tmp_path / "vault"


@pytest.fixture
def vault(vault_path: Path) -> Iterator[object]:
    """Return a fresh, empty vault written by the actor ``tester``."""
    from am.vault import Vault

    run_git(vault_path.parent, "init", "-q", "-b", "main", str(vault_path))
    run_git(vault_path, "config", "user.name", GIT_IDENTITY["GIT_AUTHOR_NAME"])
    run_git(vault_path, "config", "user.email", GIT_IDENTITY["GIT_AUTHOR_EMAIL"])
    v = Vault.init(vault_path, name="test", actor="tester")
    yield v
    v.close()


@pytest.fixture
def alpha(vault: object) -> object:
    """Return the fresh vault with one topic, ``project-alpha``."""
    vault.add_topic(title="Alpha service", kind="project", id="project-alpha")  # type: ignore[attr-defined]
    return vault


@pytest.fixture
def git(vault_path: Path) -> Callable[..., str]:
    """Return ``git(*args)``: the git CLI run in the test's vault."""

    def _git(*args: str, check: bool = True, input: str | None = None) -> str:
        return run_git(vault_path, *args, check=check, input=input)

    return _git


def fsck_clean(root: Path) -> None:
    """Assert that `git fsck --strict` finds nothing wrong."""
    proc = subprocess.run(["git", "-C", str(root), "fsck", "--strict", "--no-progress"],
                          capture_output=True, text=True)
    problems = [line for line in (proc.stdout + proc.stderr).splitlines()
                if line and not line.startswith(("dangling", "Checking"))]
    assert proc.returncode == 0 and not problems, proc.stdout + proc.stderr
