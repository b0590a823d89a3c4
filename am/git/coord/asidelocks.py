"""Git lock files am moved aside (`.git/am/stale-locks/`): moving one there, and pruning what is kept.

A lock file a killed git or am process left blocks every later writer; am
moves a stale one aside (never deletes it: a person may want to see what it
held) and logs where. What is kept is pruned each time a lock is moved aside:
at most ``KEEP`` files, none older than ``KEEP_DAYS`` days (``AM_STALE_LOCKS_KEEP``
and ``AM_STALE_LOCKS_DAYS`` change them).

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import time
from pathlib import Path

__all__ = ["KEEP", "KEEP_DAYS", "move_aside", "prune"]

KEEP = int(os.environ.get("AM_STALE_LOCKS_KEEP", "50"))
KEEP_DAYS = float(os.environ.get("AM_STALE_LOCKS_DAYS", "30"))


def move_aside(am_dir: Path, lock: Path, *, label: str = "") -> Path | None:
    """Move ``lock`` into ``.git/am/stale-locks/`` (prefixed with ``label``), prune the folder; None if it was gone."""
    aside = am_dir / "stale-locks"
    aside.mkdir(parents=True, exist_ok=True)
    target = aside / f"{label}{lock.name}.{int(time.time())}.{os.getpid()}"
    try:
        os.replace(lock, target)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno != errno.EXDEV:
            raise
        try:  # another file system (a remote's lock): copied, then removed
            shutil.copyfile(lock, target)
        except FileNotFoundError:
            return None
        lock.unlink(missing_ok=True)
    prune(aside)
    return target


def prune(aside: Path, *, keep: int | None = None, days: float | None = None) -> list[Path]:
    """Remove the moved-aside locks beyond the ``keep`` newest and those older than ``days``; return what went."""
    keep = KEEP if keep is None else keep
    limit = time.time() - (KEEP_DAYS if days is None else days) * 86400
    found: list[tuple[float, Path]] = []
    try:
        entries = list(os.scandir(aside))
    except FileNotFoundError:
        return []
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False):
                found.append((entry.stat(follow_symlinks=False).st_mtime, Path(entry.path)))
    found.sort(reverse=True)
    gone = [path for n, (mtime, path) in enumerate(found) if n >= keep or mtime < limit]
    for path in gone:
        path.unlink(missing_ok=True)
    return gone
