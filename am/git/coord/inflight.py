"""The note of a write in flight (`.git/am/inflight`): what lets the next write finish a killed one.

Written just before a batch moves the branch, removed once Git's index has the
batch's entries. A note found by the next writer (holding the write lock, so
no batch is under way) means a write moved the branch - or was about to - and
did not get its entries into Git's index: killed right after its commit, or
`.git/index.lock` held by a git command. The next write sets those entries
(where HEAD, the work-tree file and the note agree), so Git's index never
keeps saying "deleted" for an acknowledged fact; and a branch lock file left
by the noted process, if it is dead, is cleared at once (am knows its own
pids) instead of after the stale-age rule for locks of others.

Index lock files am takes carry ``am:<pid>:<host>`` so that one left by a
killed am process is known as such too. Nothing here imports pygit2.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["Note", "clear", "failed_moves", "lock_mark", "note_failed_move", "owned_by_dead_am", "pid_alive", "read",
           "write"]

_NAME = "inflight"
_FAILED = "failed-moves"
_HOST = socket.gethostname()


@dataclass(frozen=True)
class Note:
    """A batch's branch move and index entries, as noted before the move."""

    pid: int
    host: str
    ref: str
    tip: str
    since: float
    entries: tuple[tuple[PurePosixPath, str], ...]

    def dead(self) -> bool:
        """Return whether the process that wrote the note is gone (never for another host's)."""
        return self.host == _HOST and not pid_alive(self.pid)


def pid_alive(pid: int) -> bool:
    """Return whether a process with this id runs on this machine."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write(am_dir: Path, ref: str, tip: str, entries: list[tuple[PurePosixPath, str]]) -> None:
    """Note a batch about to move ``ref`` to ``tip`` with these index entries (not flushed: doctor covers a power cut)."""
    body = json.dumps({"pid": os.getpid(), "host": _HOST, "ref": ref, "tip": tip, "since": time.time(),
                       "entries": [[str(p), oid] for p, oid in entries]})
    # Written in place: a note torn by a crash reads as none (read() drops it), and doctor finds the drift.
    fd = os.open(am_dir / _NAME, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, body.encode())
    finally:
        os.close(fd)


def read(am_dir: Path) -> Note | None:
    """Return the note left by a write that did not finish, or None."""
    try:
        raw = json.loads((am_dir / _NAME).read_text())
        return Note(int(raw["pid"]), str(raw["host"]), str(raw["ref"]), str(raw["tip"]), float(raw["since"]),
                    tuple((PurePosixPath(str(p)), str(o)) for p, o in raw["entries"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        clear(am_dir)  # a torn note (a crash while writing it): doctor finds what it would have said
        return None


def clear(am_dir: Path) -> None:
    """Remove the note: its write is complete."""
    try:
        os.unlink(am_dir / _NAME)
    except FileNotFoundError:
        pass


def note_failed_move(am_dir: Path, new: str, tip: str | None) -> None:
    """Note a branch move from ``tip`` to ``new`` that failed, its writer told so (``.git/am/failed-moves``).

    The commits from ``tip`` (exclusive) to ``new`` are in the object database but were never on the
    branch: ``am recover``'s object scan leaves them out, so a write reported as failed is not replayed.
    Best effort: without the note, recover lists them as before (``unreachable``).
    """
    try:
        with open(am_dir / _FAILED, "a", encoding="ascii") as f:
            f.write(f"{new} {tip or '-'}\n")
    except OSError:
        pass


def failed_moves(am_dir: Path) -> list[tuple[str, str | None]]:
    """Return the (new, tip) of every noted failed branch move."""
    try:
        lines = (am_dir / _FAILED).read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return []
    return [(parts[0], None if parts[1] == "-" else parts[1]) for parts in (ln.split() for ln in lines)
            if len(parts) == 2]


def lock_mark() -> bytes:
    """The content am puts in a Git lock file it creates itself (git never reads a lock file's content)."""
    return f"am:{os.getpid()}:{_HOST}\n".encode()


def owned_by_dead_am(lock: Path, note: Note | None) -> bool:
    """Return whether a Git lock file was left by an am process that is gone.

    Either am made it (``lock_mark``), or it is the branch lock of the noted
    move: libgit2 creates it empty and writes the new tip into it, right after
    the note was written.
    """
    try:
        st = lock.stat()
        data = lock.read_bytes()[:200]
    except OSError:
        return False
    if data.startswith(b"am:"):
        try:
            _, pid, host = data.decode().strip().split(":", 2)
            return host == _HOST and not pid_alive(int(pid))
        except ValueError:
            return False
    if note is None or not note.dead() or not lock.as_posix().endswith(f"/{note.ref}.lock"):
        return False  # an index lock without am's mark is a git command's (git writes the index into it)
    if data.strip() not in (b"", note.tip.encode()):
        return False
    return note.since - 1 <= st.st_mtime <= note.since + 5
