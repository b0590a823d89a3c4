"""A blob written to a file straight from ``git cat-file``, never held whole in memory.

libgit2 reads an object whole, and its Python bytes are a second copy: a sync
that brought a 2 GB file held it two or three times and died under a memory
limit, with a traceback. A file that is not a record is Git's business, so a
large one is copied by git into the file am writes, a mebibyte at a time
(a partial clone's missing blob is fetched as git fetches it).

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

import os
import subprocess

from am.errors import GitError
from am.git.program.prewrite import SAFE_GIT, git_env

__all__ = ["STREAM_OVER", "stream_blob"]

# A blob larger than this is copied by git into its file instead of read into memory (records are at most 1 MiB).
STREAM_OVER = 4 << 20
_CHUNK = 1 << 20


def stream_blob(root: str, oid: str, fd: int) -> int:
    """Write the blob ``oid`` of the repository at ``root`` to ``fd``; return the bytes written."""
    proc = subprocess.Popen(["git", *SAFE_GIT, "-C", root, "cat-file", "blob", oid], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=git_env())
    assert proc.stdout is not None and proc.stderr is not None
    written = 0
    try:
        while chunk := proc.stdout.read(_CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            written += len(chunk)
    finally:
        proc.stdout.close()
        err = proc.stderr.read()
        proc.stderr.close()
        code = proc.wait()
    if code != 0:
        raise GitError(f"git cat-file could not read the blob {oid}: {err.decode('utf-8', 'replace').strip()}",
                       hint="run git fsck; the file was not written, nothing else was changed")
    return written
