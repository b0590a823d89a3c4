"""The checks of what a commit from elsewhere brings into the work tree: paths Git refuses, links that leave the vault.

A remote's tree (or a vault branch's) is input nobody here planned: libgit2 and
``git mktree`` write names such as ``.git/config``, ``git~1`` or ``..`` that
git itself refuses to check out, and a symbolic link's target can be any text.
Nothing here imports pygit2.

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from am.errors import GitError
from am.git.checks import _is_dotgit

__all__ = ["check_incoming", "check_record_sizes", "link_inside", "refused_path"]

# Code points HFS+ ignores in a file name (git's is_hfs_dotgit): ".g\u200cit" is ".git" on a Mac.
_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")


def refused_path(path: str) -> bool:
    """Return whether Git refuses to check out ``path`` (its verify_path, with core.protectNTFS and protectHFS on).

    An empty, ``.`` or ``..`` part, or a part that is ``.git`` in any case, with
    trailing dots or spaces, as ``git~1``, with an NTFS stream (``.git::$INDEX_ALLOCATION``),
    behind a backslash or with HFS+'s ignored code points. Both protections are
    on here whatever this machine's settings: the vault is shared with machines where they matter.
    """
    for part in path.replace("\\", "/").split("/"):
        if part in ("", ".", ".."):
            return True
        if part[0] == "." or "~" in part or not part.isascii():  # a record's name costs no more than this
            if _is_dotgit(_HFS_IGNORED.sub("", part).partition(":")[0]):
                return True
    return False


def check_incoming(changes: list[tuple[str, str | None]], commit: str | None) -> None:
    """Refuse a commit whose tree brings a path Git will not check out, naming the path, the commit and the fix.

    Git refuses such a tree too (``error: invalid path``); am does not write
    it, skip it or let it reach a traceback: nothing is changed.
    """
    bad = [path for path, new in changes if new is not None and refused_path(path)]
    if not bad:
        return
    shown = ", ".join(repr(p) for p in bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
    where = f"the commit {commit}" if commit else "the commit being merged"
    raise GitError(
        f"{where} has {shown}: a path Git refuses to check out (a .git folder, one of its spellings, or '..'); "
        "am sync did not merge it",
        hint="whoever pushed it removes the path in a new commit on that branch "
             f"(git rm -r --cached -- {bad[0]!r}, git commit, git push), then run am sync again; nothing was changed here")


def check_record_sizes(changes: Iterable[tuple[str, str | None]], size_of: Callable[[str], int],
                       commit: str | None) -> None:
    """Refuse a commit that brings a record file larger than am reads (1 MiB), naming it, before anything is read.

    ``size_of``: a blob's size from its header (the blob is not read). A file
    that is not a record may be of any size: Git's business, copied by git
    (am/git/program/catfile.py). A record that large is no record am wrote, and
    merging it would hold it whole in memory, several times.
    """
    from am.records.codec import MAX_RECORD_BYTES
    from am.records.merge import is_record_path

    big = [(path, size) for path, new in changes if new is not None and is_record_path(path)
           and (size := size_of(new)) > MAX_RECORD_BYTES]
    if not big:
        return
    path, size = big[0]
    more = f" (and {len(big) - 1} more)" if len(big) > 1 else ""
    where = f"the commit {commit}" if commit else "the commit being merged"
    raise GitError(
        f"{where} has {path}{more}, {size // 1024} KiB: larger than a record am reads "
        f"({MAX_RECORD_BYTES // 1024} KiB); am sync did not merge it",
        hint="whoever pushed it moves it out of topics/, facts/ and relations/ (or makes it smaller) in a new commit "
             "on that branch, then run am sync again; nothing was changed here")


def link_inside(folder: str, target: bytes) -> bool:
    """Whether a link in ``folder`` to ``target`` stays inside the vault, whatever links it passes through.

    Relative, no NUL or backslash, ``..`` only leading and no deeper than the
    link's folder (a ``..`` after a name could climb out through another
    link), and no part Git refuses (``.git`` in any spelling): a link whose
    every step descends from a real folder of the vault ends in the vault.
    """
    if not target or target.startswith(b"/") or b"\0" in target or b"\\" in target:
        return False
    try:
        parts = target.decode("utf-8").split("/")
    except UnicodeDecodeError:
        return False
    depth = len(folder.split("/")) if folder else 0
    up = 0
    while up < len(parts) and parts[up] == "..":
        up += 1
    rest = [p for p in parts[up:] if p not in ("", ".")]
    return up <= depth and ".." not in rest and not any(refused_path(p) for p in rest)
