"""A sparse checkout that leaves a record folder out of the work tree.

am reads records from the work tree, so a folder Git did not check out looks
empty: no facts listed, `am check` ok, every hidden fact "missing" to doctor.
Git marks what a sparse checkout leaves out with the skip-worktree bit of its
index entries; ``hidden_record_folders`` reads those bits, and only in a work
tree that has a sparse-checkout file and core.sparseCheckout on (one stat
otherwise: the normal path pays nothing more). Reads and writes refuse
(``refuse_hidden``); `am check` and `am doctor` report it. Nothing here
imports pygit2.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

from am.errors import GitError

__all__ = ["SPARSE_FIX", "hidden_message", "hidden_record_folders", "refuse_hidden"]

_TOPS = (b"facts", b"relations", b"topics")  # am/records/ids.py RECORD_DIRS
_SKIP_WORKTREE = 0x4000  # in an entry's second flags word (index version 3 and later)
_SECTION = re.compile(r"^\s*\[\s*([A-Za-z0-9.-]+)")
_SPARSE = re.compile(r"^\s*sparsecheckout\s*(?:=\s*(\S*))?\s*(?:[#;].*)?$", re.IGNORECASE)
SPARSE_FIX = "git sparse-checkout add {folders} (or turn it off: git sparse-checkout disable)"


def _own_gitdir(gitdir: Path) -> Path:
    if os.path.isfile(gitdir):  # a linked worktree's .git file names its own Git folder
        with open(gitdir, encoding="utf-8", errors="replace") as handle:
            named = handle.read().strip().removeprefix("gitdir:").strip()
        return Path(os.path.join(os.path.dirname(gitdir), named))
    return gitdir


def _sparse_on(gitdir: Path) -> bool:
    """Return core.sparseCheckout as the repository's config and the work tree's config.worktree set it (last wins)."""
    try:
        common = gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        common = gitdir
    value = False
    for path in (common / "config", gitdir / "config.worktree"):
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        section = ""
        for line in lines:
            if m := _SECTION.match(line):
                section = m[1].lower()
            elif section == "core" and (m := _SPARSE.match(line)):
                value = (m[1] or "true").strip('"').lower() in ("true", "yes", "on", "1")
    return value


def _skipped_paths(data: bytes) -> list[bytes]:
    """Return the paths of the index entries marked skip-worktree (index versions 2 to 4)."""
    if len(data) < 12 or data[:4] != b"DIRC":
        return []
    version, count = struct.unpack_from(">LL", data, 4)
    if version == 2:
        return []  # git writes version 3 as soon as one entry has extended flags (skip-worktree is one)
    out: list[bytes] = []
    at, previous = 12, b""
    for _ in range(count):
        flags = (data[at + 60] << 8) | data[at + 61]
        extended = version >= 3 and bool(flags & 0x4000)
        skipped = extended and bool(data[at + 62] << 8 & _SKIP_WORKTREE)
        start = at + 62 + (2 if extended else 0)
        if version >= 4:  # the previous path less N bytes (git's offset varint), then the rest up to a NUL
            byte = data[start]
            strip, start = byte & 0x7F, start + 1
            while byte & 0x80:
                byte = data[start]
                strip, start = ((strip + 1) << 7) | (byte & 0x7F), start + 1
            end = data.index(b"\0", start)
            path, at = previous[:len(previous) - strip] + data[start:end], end + 1
        else:
            end = data.index(b"\0", start)
            path, at = data[start:end], at + (((end - at) + 8) & ~7)
        if skipped:
            out.append(path)
        previous = path
    return out


def hidden_record_folders(root: Path, gitdir: Path) -> list[str]:
    """Return the record folders (facts, relations, topics) a sparse checkout leaves out of the work tree.

    A folder counts when Git's index marks one of its files skip-worktree and
    the file is not there (a file marked by hand but still present is read as usual).
    """
    gitdir = _own_gitdir(gitdir)
    if not os.path.isfile(gitdir / "info" / "sparse-checkout") or not _sparse_on(gitdir):
        return []  # git sparse-checkout disable keeps the file and turns the setting off
    try:
        with open(gitdir / "index", "rb") as handle:
            data = handle.read()
        skipped = _skipped_paths(data)
    except (OSError, ValueError, IndexError, struct.error):
        return []  # no index, or a damaged one: the writes' own checks say so
    hidden: list[str] = []
    for path in skipped:
        top = path.split(b"/", 1)[0]
        if top in _TOPS and top.decode() not in hidden and not os.path.lexists(root / os.fsdecode(path)):
            hidden.append(top.decode())
    return sorted(hidden)


def hidden_message(hidden: list[str]) -> tuple[str, str]:
    """Return the message and the fix for record folders a sparse checkout leaves out."""
    folders = " ".join(hidden)
    listed = ", ".join(f"{h}/" for h in hidden)
    message = f"the sparse checkout of this work tree leaves {listed} out, so am would see the vault without those records"
    return message, SPARSE_FIX.format(folders=folders)


def refuse_hidden(root: Path, gitdir: Path) -> None:
    """Raise GitError when a sparse checkout leaves a record folder out of the work tree (one stat when none)."""
    hidden = hidden_record_folders(root, gitdir)
    if hidden:
        message, fix = hidden_message(hidden)
        raise GitError(message, hint=f"include {'it' if len(hidden) == 1 else 'them'}: {fix}; nothing was changed")
