"""Ref files and failpoints for the leanest processes: no pygit2, no typing, no dataclasses.

A no-op ``am sync`` is a Python start-up and one ``git fetch``; every module it
imports is paid on each run (PERF.md: start-up). This module holds what such a
process needs from a Git directory, reading HEAD and branch tips from the files,
and the crash tests' failpoints; ``am.git.light`` re-exports them for the rest.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import _thread
import os
import re
from pathlib import Path

__all__ = ["UNKNOWN", "failpoint", "read_ref", "reset_last"]

_OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
# read_ref's answer when the files do not settle it (ask pygit2).
UNKNOWN = "unknown"


def failpoint(name: str) -> None:
    """Kill this process at the named step when AM_FAILPOINT asks for it (crash tests)."""
    wanted = os.environ.get("AM_FAILPOINT")
    if wanted and wanted == name:
        # AM_FAILPOINT_SKIP=n lets the first n passes through (kill a process mid-run).
        global _failpoint_passes
        with _FAILPOINT_LOCK:
            _failpoint_passes += 1
            if _failpoint_passes <= int(os.environ.get("AM_FAILPOINT_SKIP", "0")):
                return
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


_failpoint_passes = 0
_FAILPOINT_LOCK = _thread.allocate_lock()  # threading's Lock itself, without importing threading


def read_ref(gitdir: Path, name: str = "HEAD") -> str:
    """Return the commit id a ref (HEAD, or refs/heads/B) names, read from the files, or UNKNOWN.

    HEAD may be detached (a raw id) or name a branch whose loose ref file or
    packed-refs line holds the id; anything else (reftable, a symbolic chain,
    a missing or odd file) is UNKNOWN, and the caller asks pygit2.
    """
    if os.path.exists(gitdir / "reftable") or ".." in name or name.startswith("/"):
        return UNKNOWN
    try:
        text = (gitdir / name).read_text("ascii").strip()
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeError):
        return UNKNOWN
    if text.startswith("ref: ") and name == "HEAD":
        target = text[5:].strip()
        if not target.startswith("refs/heads/") or ".." in target:
            return UNKNOWN
        return read_ref(gitdir, target)
    if _OID.fullmatch(text):
        return text
    if text or not name.startswith("refs/heads/"):
        return UNKNOWN
    # No loose file: the ref may be packed.
    try:
        with open(gitdir / "packed-refs", encoding="ascii") as packed:
            for line in packed:
                oid, _, ref = line.rstrip("\n").partition(" ")
                if ref == name and _OID.fullmatch(oid):
                    return oid
    except (OSError, UnicodeError):
        pass
    return UNKNOWN  # an unborn branch, most likely: pygit2 says so for certain


def reset_last(gitdir: Path, branch: str) -> bool:
    """Whether the last move of a branch, by its reflog, was a ``git reset`` to another commit.

    Read from the log file's tail (no git process): a reset is how commits are
    lost from a branch, and a sync after one has nothing to say about them
    unless it looks (``am recover`` lists them).
    """
    try:
        with open(gitdir / "logs" / "refs" / "heads" / branch, "rb") as log:
            size = log.seek(0, os.SEEK_END)
            log.seek(max(0, size - 4096))
            last = log.read().rstrip(b"\n").rpartition(b"\n")[2]
    except OSError:
        return False
    head, _, message = last.partition(b"\t")
    old, _, rest = head.partition(b" ")
    new = rest.partition(b" ")[0]
    return message.startswith(b"reset: moving to") and old != new
