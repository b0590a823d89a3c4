"""A real Git server on loopback for sync tests: `git daemon` serving bare repositories, started and stopped by the test."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

from conftest import run_git

if TYPE_CHECKING:
    from am.vault import Vault


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_bare(base: Path, name: str = "vault.git") -> Path:
    """Create a bare repository that refuses non-fast-forwards and logs every ref update."""
    bare = base / name
    run_git(base, "init", "-q", "--bare", "-b", "main", str(bare))
    run_git(bare, "config", "receive.denyNonFastForwards", "true")
    run_git(bare, "config", "receive.denyDeletes", "true")
    run_git(bare, "config", "core.logAllRefUpdates", "always")
    return bare


def synced_with_bare(vault: Vault, tmp_path: Path) -> Path:
    """Make a bare repository on a local path under ``tmp_path``, sync ``vault`` into it as its upstream; return it."""
    from am.sync import sync

    base = tmp_path / "server"
    base.mkdir()
    bare = make_bare(base)
    sync(vault, set_upstream=str(bare))
    return bare


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """Serve the bare repositories under ``base`` with `git daemon` on 127.0.0.1; yield the URL prefix."""
    # The daemon says "Ready to rumble" once it listens. Only that line tells that the port is this
    # daemon's: another test's (another pytest-xdist worker's) may have taken the same free port
    # first, and then this one exits and the next attempt takes another port.
    with tempfile.TemporaryFile() as log:
        for _attempt in range(5):
            port, start = _free_port(), os.fstat(log.fileno()).st_size
            proc = subprocess.Popen(
                ["git", "daemon", "--verbose", "--reuseaddr", f"--base-path={base}", "--export-all",
                 "--enable=receive-pack", "--listen=127.0.0.1", f"--port={port}", "--informative-errors", str(base)],
                stdout=subprocess.DEVNULL, stderr=log)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and proc.poll() is None and not _ready(log, start):
                time.sleep(0.02)
            if proc.poll() is None and _ready(log, start):
                break
            proc.kill()
            proc.wait()
        else:
            raise AssertionError("git daemon did not start: " + os.pread(log.fileno(), 1 << 16, 0).decode(errors="replace"))
        try:
            yield f"git://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _ready(log: IO[bytes], start: int) -> bool:
    """Whether the daemon that writes to ``log`` from ``start`` on has said it listens."""
    return b"Ready to rumble" in os.pread(log.fileno(), 1 << 16, start)


def only_fast_forwards(bare: Path, branch: str = "main") -> list[tuple[str, str]]:
    """Return the server branch's reflog as (old, new) pairs, asserting each update was a fast-forward."""
    lines = run_git(bare, "reflog", "show", "--format=%H %gs", f"refs/heads/{branch}").splitlines()
    assert lines, "the server's branch has no reflog"
    log_file = (bare / "logs" / "refs" / "heads" / branch).read_text().splitlines()
    pairs = [(line.split()[0], line.split()[1]) for line in log_file]
    for old, new in pairs:
        if set(old) == {"0"}:
            continue
        proc = subprocess.run(["git", "-C", str(bare), "merge-base", "--is-ancestor", old, new], check=False)
        assert proc.returncode == 0, f"the server's {branch} moved from {old} to {new}, not a fast-forward"
    return pairs
