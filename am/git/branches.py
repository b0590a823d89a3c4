"""Vault branches: an agent's memory kept apart on a branch of the vault, in a linked work tree of its own.

``--vault-branch NAME`` (or ``AM_VAULT_BRANCH``) makes every command of that
invocation read and write the vault's branch ``NAME`` instead of the current
one. The branch gets a linked work tree (``git worktree``) under
``.am/cache/branches/NAME`` — ignored by the vault's own work tree, and
disposable like the rest of the cache: its writes are commits on the branch,
and a deleted folder is made again from the branch. The write protocol of a
linked work tree is the vault's own (files, compare-and-swap, Git's index), so
nothing about writing changes; ``am merge NAME`` folds the branch in.

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pygit2

from am.errors import GitError, UsageError
from am.records.ids import is_valid_id

__all__ = ["branch_worktree"]


def branch_worktree(root: Path, name: str) -> Path:
    """Return the work tree of vault branch ``name``, creating the branch (at HEAD) and its work tree when missing."""
    if not is_valid_id(name):
        raise UsageError(f"{name!r} is not a vault branch name",
                         hint="use lowercase letters, digits and '-', e.g. agent-codex")
    try:
        repo = pygit2.Repository(str(root), pygit2.enums.RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, KeyError):
        raise GitError(f"{root} is not a Git repository") from None
    if not repo.head_is_unborn and not repo.head_is_detached and repo.head.name == f"refs/heads/{name}":
        return root
    if repo.head_is_unborn:
        raise UsageError("the vault has no commit yet to branch from", hint="write something first")
    path = root / ".am" / "cache" / "branches" / name
    if (path / ".git").is_file() and (path / ".am" / "vault.yml").is_file():
        return path
    lock_dir = Path(repo.path) / "am"
    lock_dir.mkdir(exist_ok=True)
    with open(lock_dir / "branches.lock", "w") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # two agents starting at once make one work tree
        if (path / ".git").is_file():
            return path
        wt_name = f"am-{name}"
        if wt_name in repo.list_worktrees():
            repo.lookup_worktree(wt_name).prune(True)  # its folder was deleted with the cache
        ref = repo.references.get(f"refs/heads/{name}")
        if ref is None:
            ref = repo.references.create(f"refs/heads/{name}", repo.head.target)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            repo.add_worktree(wt_name, str(path), ref)
        except (pygit2.GitError, ValueError) as err:
            raise GitError(f"could not open vault branch {name}: {err}",
                           hint="is the branch checked out elsewhere? (git worktree list)") from None
        os.utime(path)
    return path
