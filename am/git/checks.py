"""Checks every write request passes before it is committed, whoever made it (this process or the queue).

A request from `.git/am/queue/` is a file any process that can write the
repository could have left; it is held to exactly the rules of a write made
in this process: its paths are record files under topics/, facts/ or
relations/ (never `..`, never a `.git` folder, never outside the work tree),
its author and committer are identities Git can store, and its message is text
without NUL; and, from the queue only, each file is a record that passes a
direct write's own checks (``check_queued``: am/records/writes.py
``check_to_write``), at its own id's path, under am's trailers naming it and its
author (issue 36.7). Git's own merge, cherry-pick, revert or rebase standing unfinished in the
work tree refuses every write (``check_no_git_operation``). Nothing here
imports pygit2.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from am.errors import GitError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from am.git.values import Change

__all__ = ["check_message", "check_no_git_operation", "check_path", "check_queued", "check_who", "clean_email",
           "clean_name"]

# Top-level folders of the records a grouped write may touch (am/records/ids.py RECORD_DIRS).
RECORD_TOPS = frozenset({"topics", "facts", "relations"})
_PART = re.compile(r"[A-Za-z0-9._-]{1,255}\Z")
_SAFE_PART = re.compile(r"[^\x00-\x1f\x7f/\\:]+\Z")  # am/records/ids.py's: what a direct write's path may hold
_BAD_IN_NAME = re.compile(r"[\x00-\x1f\x7f<>]+")
_MAX_MESSAGE = 1 << 16
# What Git keeps in a work tree's own Git folder while an operation of its stands unfinished: (name, what, finish,
# abort). A rebase first: one stopped on a conflict also has the pick's files.
_UNDER_WAY = (
    ("rebase-merge", "a git rebase", "git rebase --continue", "git rebase --abort"),
    ("rebase-apply", "a git rebase (or git am)", "git rebase --continue", "git rebase --abort"),
    ("MERGE_HEAD", "a git merge", "git commit", "git merge --abort"),
    ("CHERRY_PICK_HEAD", "a git cherry-pick", "git cherry-pick --continue", "git cherry-pick --abort"),
    ("REVERT_HEAD", "a git revert", "git revert --continue", "git revert --abort"),
)


def _is_dotgit(part: str) -> bool:
    # git refuses .git in any case, and with trailing dots or spaces (NTFS/HFS+ spellings of it).
    low = part.lower().rstrip(". ")
    return low in (".git", "git~1")


def _is_record_part(part: str) -> bool:
    """Whether a part of a record's path is one a direct write may name (am/records/ids.py ``check_record_path``).

    Spaces and letters of any script pass (a topic's file named after its
    title); a leading '.', control characters, '\\' and ':', a device name
    (CON, nul.txt), an invisible format character (a zero-width joiner, a bidi
    control: what makes ``\u200c.git`` read as ``.git`` on some file systems),
    a lone surrogate or a name over 255 bytes do not. A plain ASCII name (every
    id's) is judged by one match.
    """
    from am.records.ids import is_device_name

    if _PART.match(part):
        return not part.startswith(".") and not is_device_name(part)
    import unicodedata

    try:
        size = len(part.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return (size <= 255 and not part.startswith(".") and _SAFE_PART.match(part) is not None
            and not is_device_name(part) and not any(unicodedata.category(ch) == "Cf" for ch in part))


def check_path(path: PurePosixPath | str, *, records_only: bool = False) -> PurePosixPath:
    """Return the path if a write may put a file there; raise UsageError naming it otherwise."""
    text = str(path)
    why = None
    parts = text.split("/")
    if not text or text.startswith("/") or "\\" in text or "\x00" in text:
        why = "not a relative path inside the vault"
    elif any(p in ("", ".", "..") for p in parts):
        why = "it has an empty, '.' or '..' part"
    elif any(_is_dotgit(p) for p in parts):
        why = "it is inside Git's own folder"
    elif records_only and (parts[0] not in RECORD_TOPS or not text.endswith(".md")
                           or not all(_is_record_part(p) for p in parts)):
        why = "it is not a record file under topics/, facts/ or relations/"
    if why is not None:
        raise UsageError(f"refused to write {text!r}: {why}", hint="only am's own record files are written")
    return PurePosixPath(text)


def clean_name(name: str) -> str:
    """Return a name Git can store in a signature: no angle brackets, no control characters, one line."""
    return " ".join(_BAD_IN_NAME.sub(" ", name).split())


def clean_email(email: str) -> str:
    """Return an email Git can store (no angle brackets, spaces or control characters)."""
    return _BAD_IN_NAME.sub("", email).replace(" ", "")


def check_who(who: Sequence[object], *, field: str) -> None:
    """Raise UsageError unless ``who`` is (name, email) or (name, email, time, offset) Git can store."""
    ok = (isinstance(who, (tuple, list)) and len(who) in (2, 4)
          and all(isinstance(v, str) for v in who[:2])
          and all(isinstance(v, int) and not isinstance(v, bool) for v in who[2:]))
    if ok:
        name, email = str(who[0]), str(who[1])
        ok = bool(name.strip()) and clean_name(name) == name and clean_email(email) == email
    if not ok:
        raise UsageError(f"refused a write whose {field} is not an identity Git can store: {who!r}",
                         hint="set user.name and user.email to one line each, without < or >")


def check_message(message: object) -> None:
    """Raise UsageError unless the commit message is text Git can store."""
    if not isinstance(message, str) or "\x00" in message or len(message) > _MAX_MESSAGE:
        raise UsageError("refused a write whose commit message has a NUL or is too long",
                         hint="a commit message is text of at most 64 KiB")


def check_queued(changes: Sequence[Change], message: str, author: Sequence[object], *,
                 committed: Callable[[str], bytes | None]) -> None:
    """Raise the error a request from the queue gets instead of its commit (nothing of it is written).

    Each file is a record checked as ``RecordWriter.write`` checks it (``check_to_write``: schema, secrets; no
    override, which a write with one never queues), and is its own: a new file at the path am gives its id (or the
    readable name of a topic's title), an update at a path whose committed version (``committed``: the bytes of
    a blob id, None if unknown) has the same id. The message carries am's trailers naming those records and,
    as ``Am-Actor``, its author.
    """
    from am.errors import InvalidRecordError
    from am.records.codec import decode_record_bytes, parse_record
    from am.records.ids import readable_name, record_file
    from am.records.model import Topic
    from am.records.writes import check_to_write, check_trailers

    ids = []
    for c in changes:
        where = str(c.path)
        record = parse_record(decode_record_bytes(c.data, path=where), where)
        check_to_write(where, record)
        if c.base is None:
            own = record_file(record.type, record.id, record.created)
            readable = readable_name(record.title) if isinstance(record, Topic) else None
            if where != own and not (readable and where == f"{own.rpartition('/')[0]}/{readable}.md"):
                raise InvalidRecordError(f"refused a new file for {record.id} that is not at its path {own}",
                                         path=where, hint="a record is written at the path of its id")
        else:
            old = committed(c.base)
            was = None if old is None else parse_record(decode_record_bytes(old, path=where), where)
            if was is None or was.id != record.id or was.type != record.type:
                raise InvalidRecordError(f"refused to write {record.type} {record.id} over another record's file",
                                         path=where, hint="an update is written at the path of the record it updates")
        ids.append(record.id)
    check_trailers(message, actor=str(author[0]) if author else "", ids=ids)


def check_no_git_operation(gitdir: Path) -> None:
    """Raise GitError while Git's merge, cherry-pick, revert or rebase is unfinished in the work tree of ``gitdir``.

    A commit of am's on top would finish nothing and leave the operation
    pending (a merge's other parent lost). A stat a name: ``gitdir`` is the
    work tree's own Git folder, where a linked worktree keeps them.
    """
    if os.path.isfile(gitdir):  # a linked worktree's .git file names its own Git folder
        with open(gitdir, encoding="utf-8", errors="replace") as handle:
            named = handle.read().strip().removeprefix("gitdir:").strip()
        gitdir = Path(os.path.join(os.path.dirname(gitdir), named))
    for name, what, finish, abort in _UNDER_WAY:
        if os.path.lexists(os.path.join(gitdir, name)):
            marked = _driverless_conflicts(gitdir)
            if marked:
                more = f" and {len(marked) - 2} more" if len(marked) > 2 else ""
                raise GitError(f"{what} is in progress in this work tree ({name} in {gitdir}), and it left Git's "
                               f"conflict markers in records ({', '.join(marked[:2])}{more}): this clone has no am "
                               "merge driver (a plain git clone carries none)",
                               hint=f"abort it with {abort}, run am hooks install, then git pull again (or am sync): "
                                    "records then merge without markers; nothing was changed")
            raise GitError(f"{what} is in progress in this work tree ({name} in {gitdir})",
                           hint=f"finish it with {finish}, or abort it with {abort}, then run the command again; "
                                "nothing was changed")


def _driverless_conflicts(gitdir: Path) -> list[str]:
    """Return the record files Git left unmerged when the clone has no ``merge.am.driver`` (else, or unknown: [])."""
    import subprocess

    from am.git.program.prewrite import SAFE_GIT, git_env
    from am.records.merge import is_record_path

    def git(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["git", *SAFE_GIT, f"--git-dir={gitdir}", *args], capture_output=True,
                              env=git_env(), stdin=subprocess.DEVNULL, check=False)

    try:
        if git("config", "--get", "merge.am.driver").stdout.strip():
            return []
        listed = git("ls-files", "-u", "-z").stdout.decode("utf-8", "surrogateescape")
    except OSError:
        return []
    paths = {entry.split("\t", 1)[1] for entry in listed.split("\0") if "\t" in entry}
    return sorted(p for p in paths if is_record_path(p))
