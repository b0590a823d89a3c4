"""The real MCP clients for tests/test_real_*.py: where they are installed, and a person's machine to run them on.

The clients are the npm packages pinned in tests/clients/package.json (their
lock: tests/clients/package-lock.json), installed into tests/clients/node_modules
by .ci/run, or by the ``clients`` fixture (`npm ci`) when that folder lacks
them. The tests skip, with the reason printed, only where node or npm is
absent. Each test runs in its own temporary HOME and project, with no network
but loopback (docs/agents.md, "Proven with the real clients").
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import GIT_IDENTITY, REPO_ROOT

CLIENTS = REPO_ROOT / "tests" / "clients"
BIN = CLIENTS / "node_modules" / ".bin"
PINNED = ("@anthropic-ai/claude-code", "@openai/codex", "@modelcontextprotocol/inspector")
AM = Path(sys.executable).parent / "am"  # the venv's am, as the README installs it
# Claude Code: no update checks, telemetry or error reports from a test (the machine has no network).
# MCP_TIMEOUT: how long it waits for a server to start (30 s by default), for a machine as busy as CI's.
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_ERROR_REPORTING": "1", "MCP_TIMEOUT": "90000"}


def _installed() -> bool:
    lock = json.loads((CLIENTS / "package-lock.json").read_text(encoding="utf-8"))
    for name in PINNED:
        have = CLIENTS / "node_modules" / name / "package.json"
        if not have.is_file() or json.loads(have.read_text(encoding="utf-8"))["version"] != \
                lock["packages"][f"node_modules/{name}"]["version"]:
            return False
    return all((BIN / tool).exists() for tool in ("claude", "codex", "mcp-inspector"))


def install_clients() -> Path:
    """Return the folder of the clients' executables, installing the pinned versions (npm ci) if they are not."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not on PATH: the real clients come from npm (tests/clients/)")
    if not AM.exists():
        pytest.fail(f"{AM} is missing: install am into this Python's venv (pip install -e .)")
    with open(CLIENTS / ".install.lock", "w") as lock:  # parallel workers install once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed():
            proc = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=CLIENTS, capture_output=True,
                                  text=True, timeout=600, check=False)
            assert proc.returncode == 0 and _installed(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return BIN


class User:
    """A person's machine in a temporary folder: HOME, the PATH their shell has, and a non-default AM_HOME."""

    def __init__(self, root: Path, *, am_on_path: bool) -> None:
        self.home = root / "home"
        self.home.mkdir()
        (self.home / ".gitconfig").write_text(f"[user]\n\tname = {GIT_IDENTITY['GIT_AUTHOR_NAME']}\n"
                                              f"\temail = {GIT_IDENTITY['GIT_AUTHOR_EMAIL']}\n", encoding="utf-8")
        node = Path(shutil.which("node") or "/usr/bin/node").parent
        path = [str(node), "/usr/local/bin", "/usr/bin", "/bin"]
        if am_on_path:
            path.insert(0, str(AM.parent))
        self.path = os.pathsep.join(dict.fromkeys(path))
        found = shutil.which("am", path=self.path)
        assert am_on_path == (found is not None), f"am on this PATH: {found}"
        self.am_home = os.environ["AM_HOME"]  # the suite's own, never ~/.am: not the default
        self.env = {"HOME": str(self.home), "PATH": self.path, "AM_HOME": self.am_home, "LANG": "C.UTF-8",
                    "USER": "dev", "TERM": "dumb", **QUIET}

    def am(self, *args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the venv's am as this user types it (by its path when it is not on PATH)."""
        done = subprocess.run([str(AM), *args], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert not check or done.returncode == 0, done.stdout + done.stderr
        return done

    def run(self, *argv: str, cwd: Path, env: dict[str, str] | None = None,
            timeout: float = 90) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), cwd=cwd, env={**self.env, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout, check=False, stdin=subprocess.DEVNULL)


def demo(user: User, tmp_path: Path) -> tuple[Path, Path]:
    """Make the demo vault and its registered code clone (on main); return (vault, clone)."""
    user.am("demo", str(tmp_path / "demo"), cwd=tmp_path)
    return tmp_path / "demo", tmp_path / "demo-code"




def run_inspector(clients: Path, config: Path, cwd: Path, env: dict[str, str], method: str, *extra: str) -> Any:
    """Run the MCP Inspector's CLI on the server ``am`` of a client config file; return its JSON answer."""
    done = subprocess.run([str(clients / "mcp-inspector"), "--cli", "--config", str(config), "--server", "am",
                           "--method", method, *extra], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=90, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{method} {extra}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return json.loads(done.stdout)
