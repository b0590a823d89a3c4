"""The AmError tree: every expected failure, with an exit code and a fix-it message.

The command line turns any AmError into one line on stderr ("Error: ...") and
its exit code; nothing here knows about click.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

__all__ = [
    "AmError",
    "CollisionError",
    "ConflictError",
    "DirtyFileError",
    "GitError",
    "InvalidIdError",
    "InvalidRecordError",
    "LockTimeoutError",
    "NotAVaultError",
    "NotFoundError",
    "PathTakenError",
    "SecretError",
    "StorageError",
    "UnknownWorldError",
    "UsageError",
    "storage_error",
    "explained",
    "storage_trouble",
]


class AmError(Exception):
    """Base of every expected am failure; ``str(err)`` is the message for people."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}; {hint}")


class UsageError(AmError):
    """The caller asked for something that does not make sense."""

    exit_code = 2


class NotAVaultError(AmError):
    """No vault at the given path, name or enclosing folder."""

    exit_code = 3


class NotFoundError(AmError):
    """A record, vault or repository that was named does not exist."""

    exit_code = 4


class InvalidRecordError(AmError):
    """A record file or a new record fails the format (YAML, schema, links)."""

    exit_code = 5

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        field: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = path
        self.field = field
        self.line = line
        self.detail = message  # without the file and field, for reports that name them already
        where = ""
        if path is not None:
            where = path if line is None else f"{path}:{line}"
            where += ": "
        if field is not None:
            message = f"field '{field}': {message}"
        super().__init__(where + message, hint=hint)


class InvalidIdError(InvalidRecordError):
    """An id (or a title turned into one) cannot name a file safely."""


class CollisionError(AmError):
    """A record with that id already exists."""

    exit_code = 6


class DirtyFileError(AmError):
    """A file am must write has uncommitted changes of someone else's."""

    exit_code = 7


class LockTimeoutError(AmError):
    """Another writer held the vault's lock for too long."""

    exit_code = 8


class ConflictError(AmError):
    """A Git operation (revert, merge) would conflict; nothing was changed."""

    exit_code = 9


class PathTakenError(ConflictError):
    """A new record's file is already in the vault, with other content (e.g. two writers drew one fact id)."""

    def __init__(self, message: str, *, path: str | None = None, hint: str | None = None) -> None:
        self.path = path
        super().__init__(message, hint=hint)


class SecretError(AmError):
    """Content looks like a credential; history is forever, so it is refused."""

    exit_code = 10


class GitError(AmError):
    """Git itself failed in a way am could not recover from."""

    exit_code = 11


class StorageError(GitError):
    """The disk or file system refused a read or write (full, read-only, too large, not permitted)."""

    exit_code = 12


def storage_error(err: OSError, what: str, *, then: str | None = None) -> StorageError:
    """Return the one-line error for a failed file operation, naming the cause and the fix.

    ``then``: what to do once the cause is fixed, when something was already
    changed (else the hint says nothing was).
    """
    import errno
    import os

    fixes = {
        errno.ENOSPC: "free some disk space",
        errno.EDQUOT: "free some space in your quota",
        errno.EFBIG: "the file system (or ulimit -f) does not allow a file this large",
        errno.EROFS: "the file system is read-only; remount it read-write or work in a copy",
        errno.EACCES: "check the permissions of the vault's folders",
        errno.EPERM: "check the permissions (or an immutable attribute: lsattr) of the vault's folders",
        errno.ENOTDIR: "a file is where am needs a folder; move it away",
        errno.EEXIST: "a file or folder is in the way; move it away",
        errno.EISDIR: "a folder is where am needs a file; move it away",
        errno.EIO: "the disk reported an error; check it (dmesg)",
        errno.EMFILE: "this process may open no more files; raise the limit (ulimit -n)",
    }
    retry = {errno.ENOSPC: ", then retry", errno.EDQUOT: ", then retry", errno.EIO: " before retrying",
             errno.EMFILE: ", then retry"}
    reason = os.strerror(err.errno) if err.errno else str(err)
    where = f" ({err.filename})" if err.filename and str(err.filename) not in what else ""
    fix = fixes.get(err.errno or 0)
    if then is not None:
        hint = f"{fix}; then {then}" if fix else then
    else:
        hint = fix + retry.get(err.errno or 0, "") if fix else "nothing was changed; retry"
    return StorageError(f"could not {what}{where}: {reason}", hint=hint)


def storage_trouble(folder: object) -> str | None:
    """Say why files cannot be written in ``folder`` (a full or read-only file system, ulimit -f), or None.

    What a failure's own words hide: SQLite reports a full disk or a file size
    limit as "disk I/O error". One statvfs and one getrlimit.
    """
    import os

    path = os.fspath(folder)  # type: ignore[call-overload]
    while path and not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return f"the file system holding {folder} is read-only"
    free = st.f_bavail * st.f_frsize
    if free < 1 << 20:
        return f"the file system holding {folder} is full ({free // 1024} KiB free)"
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError):
        return None
    if limit != resource.RLIM_INFINITY and limit < 1 << 30:
        return f"this process may write no file over {limit // 1024} KiB (ulimit -f)"
    return None


def explained(err: object, folder: object) -> str:
    """Return an error's words, with ``storage_trouble(folder)`` after them when it finds one (SQLite says only
    "disk I/O error" for a full disk or a file size limit)."""
    trouble = storage_trouble(folder)
    return f"{err}: {trouble}" if trouble else str(err)


class UnknownWorldError(NotFoundError):
    """A world names a repo, branch or commit that does not exist here (a typo, or not fetched)."""

    exit_code = 13
