"""What am says on a full disk, under ulimit -f and after a killed write is true and says what to do.

SQLite reports a full disk or a file size limit as "disk I/O error", so the
cache's warning hid the cause, and `am search` told the user to check that
.am/cache/ is writable. `am doctor` offered "am doctor --fix repairs it" for
every finding on a full disk, where --fix can only fail, and did not say that
for an orphan (a write killed before its commit, never acknowledged) --fix
commits it. `am doctor --fix` on a full disk warned it "could not put back" an
orphan whose file it had never changed. Now the cause is named where am knows
it (am.errors.storage_trouble: one statvfs, one getrlimit).
"""

from __future__ import annotations

import resource
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, run_git, subprocess_env

from am.vault import Vault


def am(root: Path, *args: str, limit: int | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    def set_limit() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), *args], capture_output=True, text=True,
                          env=subprocess_env(**env), timeout=120, preexec_fn=set_limit, check=False)


def _orphan(root: Path) -> str:
    """A fact add killed after writing its file, before its commit: the file is an orphan."""
    killed = am(root, "fact", "add", "Killed before its commit.", "--topic", "project-alpha", AM_FAILPOINT="after-file")
    assert killed.returncode == -signal.SIGKILL
    left = run_git(root, "status", "--porcelain", "--untracked-files=all").split()
    return next(p for p in left if p.startswith("facts/"))


def test_a_cache_that_ulimit_f_keeps_from_being_built_names_the_limit(alpha: Vault) -> None:
    root = alpha.root
    alpha.close()
    for path in (root / ".am" / "cache").glob("index.sqlite*"):
        path.unlink()
    found = am(root, "search", "redis", limit=4096)
    assert found.returncode == 1, found.stderr
    assert "ulimit -f" in found.stderr and "check that .am/cache/ is writable" not in found.stderr, found.stderr
    assert "Traceback" not in found.stderr


def test_doctor_says_what_fix_does_with_an_orphan(alpha: Vault) -> None:
    root = alpha.root
    path = _orphan(root)
    doctor = am(root, "doctor")
    assert doctor.returncode == 1
    line = next(line for line in doctor.stdout.splitlines() if line.startswith("orphan:"))
    assert path in line and "am doctor --fix commits it" in line and "delete the file" in line, line


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True,
                          check=False).returncode == 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    mnt = tmp_path / "disk"
    if not _mount_tmpfs(mnt, "4m"):
        pytest.skip("mounting a file system needs root (CI runs as root)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:  # unbuffered: no last chunk left to fail on close
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    return filler


def test_on_a_full_disk_every_hint_names_the_full_disk_and_nothing_is_lost(small_disk: Path) -> None:
    root = small_disk / "vault"
    run_git(small_disk, "init", "-q", "-b", "main", str(root))
    for key, value in (("user.name", "Test Person"), ("user.email", "person@example.com")):
        run_git(root, "config", key, value)
    v = Vault.init(root, name="disk", actor="tester", register=False)
    v.add_topic(title="Alpha", kind="project", id="project-alpha")
    v.close()
    path = _orphan(root)
    kept = (root / path).read_bytes()
    for name in (root / ".am" / "cache").glob("index.sqlite*"):
        name.unlink()  # the cache must be built again, on a full disk
    filler = _fill(small_disk)
    found = am(root, "search", "killed")
    assert found.returncode == 1 and "is full" in found.stderr, found.stderr
    assert "check that .am/cache/ is writable" not in found.stderr and "Traceback" not in found.stderr
    doctor = am(root, "doctor")
    assert doctor.returncode == 1
    for line in doctor.stdout.splitlines():
        if "am doctor --fix" in line:
            assert "is full" in line and "make room, then am doctor --fix" in line, line
    fixed = am(root, "doctor", "--fix")
    assert fixed.returncode == 12 and "No space left" in fixed.stderr, fixed.stderr
    assert "could not put back" not in fixed.stderr, fixed.stderr  # the orphan was never changed
    assert (root / path).read_bytes() == kept
    filler.unlink()
    fixed = am(root, "doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert path in run_git(root, "ls-files", "facts")
