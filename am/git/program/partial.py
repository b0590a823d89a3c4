"""Clones that hold less than the whole history: partial (git clone --filter) and shallow (git clone --depth).

Objects a partial clone does not hold (git clone --filter=blob:none) are fetched as git fetches them.

A partial clone holds every commit and tree but only the blobs its checkouts
needed; git fetches any other blob from the "promisor" remote the moment a
command reads it. libgit2 does not: it answers "not found". So a read that
misses (an old version of a record: am history, am blame, am slice --since)
asks the git program for the blob (``git cat-file blob``), which fetches it
from the remote and keeps it, with am's safe settings. A blob missing from a
clone that is not partial is damage, and named as such (docs/sync.md).

A shallow clone's history stops at the commits its ``shallow`` file lists
(their parents are not in the clone); libgit2 shows them as root commits, so
what reads history asks ``shallow_commits`` where it stops and says so.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from am.errors import GitError

__all__ = ["UNSHALLOW", "missing_blob", "promisor", "refuse_before_shallow", "shallow_commits", "shallow_text"]

# The fix a shallow vault's messages name.
UNSHALLOW = "git fetch --unshallow"

_TRUE = ("true", "yes", "on", "1")


def promisor(config: Iterable[object]) -> str | None:
    """Return the remote a partial clone fetches left-out objects from (from its Git config), or None."""
    found: str | None = None
    for entry in config:
        key = str(getattr(entry, "name", "")).lower()
        value = str(getattr(entry, "value", "") or "")
        if key == "extensions.partialclone" and value:
            return value
        if key.startswith("remote.") and key.endswith(".promisor") and value.lower() in _TRUE:
            found = key[len("remote."):-len(".promisor")]
    return found


def missing_blob(root: Path, oid: str, remote: str | None) -> bytes:
    """Return a blob the clone lacks: fetched by git from a partial clone's remote, else a clear GitError."""
    if remote is None:
        raise GitError(f"Git object {oid} is missing from the vault's repository {root}",
                       hint="the repository is damaged: run git fsck in it (and am doctor), "
                            "or clone the vault again from its remote")
    import subprocess

    from am.git.program.prewrite import SAFE_GIT, git_env

    proc = subprocess.run(["git", *SAFE_GIT, "-C", str(root), "cat-file", "blob", oid], capture_output=True,
                          env=git_env(), stdin=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        raise GitError(f"this vault is a partial clone (git clone --filter) and an old version of a record "
                       f"(Git object {oid[:12]}) could not be fetched from its remote {remote!r}: "
                       f"{lines[-1] if lines else 'git cat-file failed'}",
                       hint="reach the remote and run the command again (git fetches what the clone left "
                            "out when it is read), or clone the vault again without --filter")
    return proc.stdout


def shallow_text(gitdir: Path) -> str | None:
    """Return a shallow clone's ``shallow`` file (the commits its history stops at), as git reads it, else None."""
    try:  # a linked worktree shares the clone's common folder, where git keeps the file
        gitdir = gitdir / (gitdir / "commondir").read_text().strip()
    except OSError:
        pass
    try:
        return (gitdir / "shallow").read_text("ascii", errors="replace")
    except OSError:
        return None


def shallow_commits(gitdir: Path) -> frozenset[str]:
    """Return the commits a shallow clone's history stops at (empty for a whole clone)."""
    text = shallow_text(gitdir)
    return frozenset(text.split()) if text else frozenset()


def refuse_before_shallow(gitdir: Path, what: str) -> None:
    """Raise when a time before a shallow clone's history was asked for (``what``: the asking, for the message).

    Called where no commit was found at or before the time: in a shallow clone
    that says nothing about the vault, only about how deep it was cloned.
    """
    if shallow_commits(gitdir):
        from am.errors import UsageError

        raise UsageError(f"{what}: this vault is a shallow clone, and its history starts after that time",
                         hint=f"run {UNSHALLOW} in the vault, then the same command again")
