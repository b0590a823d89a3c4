"""The world of the current folder: which registered repo, branch and commit we are in, and its vault.

A clone's work tree has a ``.git`` folder; a linked worktree (``git worktree
add``, as Claude Code and Codex use for parallel agents) has a ``.git`` file
naming its own git dir, whose ``commondir`` leads to the clone's. Both are
matched to the registry by the clone's git dir, so every worktree of a
registered clone is that repo. HEAD, the branch and its tip are read from the
files (no pygit2) when they are plain; anything unusual is asked of Git.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from am.errors import AmError, NotFoundError, UsageError
from am.git.refs import UNKNOWN, read_ref
from am.registry import Registry

__all__ = ["Checkout", "World", "fill_world", "find_checkout", "registered_here", "uncommitted_in", "vault_here",
           "world_here"]

World = tuple[str | None, str | None, str | None]  # (repo, branch, commit); None where not known

_OID = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Checkout:
    """A Git work tree: its top folder, its own git dir, and the clone's common git dir."""

    top: Path
    gitdir: Path
    common: Path

    def head(self) -> tuple[str | None, str | None]:
        """Return (branch, commit) of HEAD; the branch is None when detached, the commit None when unborn."""
        try:
            text = (self.gitdir / "HEAD").read_text("ascii").strip()
        except (OSError, UnicodeError):
            return self._asked()
        if _OID.fullmatch(text):
            return None, text
        if not text.startswith("ref: refs/heads/"):
            return self._asked()
        ref = text[5:]
        found = _read_ref(self.common, ref) or _read_ref(self.gitdir, ref)
        if found is None:
            return self._asked()
        return ref.removeprefix("refs/heads/"), found

    def _asked(self) -> tuple[str | None, str | None]:
        from am.git import GitStore

        store = GitStore.open_code(self.top)
        commit = store.head()
        try:
            branch: str | None = store.head_ref().removeprefix("refs/heads/")
        except AmError:
            branch = None
        return branch, commit


def _read_ref(gitdir: Path, ref: str) -> str | None:
    """Return the id a branch ref holds, read from the files (loose or packed); None if they do not settle it."""
    found = read_ref(gitdir, ref)
    return None if found == UNKNOWN else found


def _gitdir_of(top: Path) -> Path | None:
    dotgit = top / ".git"
    if dotgit.is_dir():
        return dotgit.resolve()
    try:
        text = dotgit.read_text("utf-8").strip()
    except (OSError, UnicodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:"):].strip())
    return (top / target).resolve() if not target.is_absolute() else target.resolve()


def find_checkout(cwd: Path | None = None) -> Checkout | None:
    """Return the Git work tree around ``cwd`` (a clone or a linked worktree), or None."""
    start = (cwd or Path.cwd()).resolve()
    for top in (start, *start.parents):
        if not (top / ".git").exists():
            continue
        gitdir = _gitdir_of(top)
        if gitdir is None:
            return None
        common = gitdir
        try:
            rel = (gitdir / "commondir").read_text("utf-8").strip()
        except OSError:
            rel = ""
        if rel:
            common = (gitdir / rel).resolve() if not Path(rel).is_absolute() else Path(rel).resolve()
        return Checkout(top, gitdir, common)
    return None


def _clone_gitdir(path: str) -> Path | None:
    root = Path(path).expanduser()
    found = _gitdir_of(root)
    if found is not None:
        return found
    # A bare clone is its own git dir.
    return root.resolve() if (root / "HEAD").is_file() and (root / "objects").is_dir() else None


def registered_here(cwd: Path | None = None, registry: Registry | None = None) -> tuple[str, Checkout] | None:
    """Return (repo name, checkout) when ``cwd`` is inside a registered clone or a worktree of one."""
    checkout = find_checkout(cwd)
    if checkout is None:
        return None
    registry = registry or Registry.load()
    for name, path in sorted(registry.repos.items()):
        if Path(path).expanduser().resolve() == checkout.top:
            return name, checkout
    for name, path in sorted(registry.repos.items()):
        gitdir = _clone_gitdir(path)
        if gitdir is not None and gitdir == checkout.common:
            return name, checkout
    return None


def world_here(cwd: Path | None = None) -> tuple[str, str | None, str]:
    """Return (repo name, branch, commit) of the registered clone or worktree around ``cwd``."""
    start = (cwd or Path.cwd()).resolve()
    checkout = find_checkout(start)
    if checkout is None:
        raise UsageError(f"{start} is not inside a Git repository", hint="run it from your code repository, or pass --repo")
    found = registered_here(start)
    if found is None:
        raise NotFoundError(f"{checkout.top} is not a registered code repository",
                            hint=f"register it: am repo add NAME {checkout.top}")
    name, _ = found
    branch, commit = checkout.head()
    if commit is None:
        raise UsageError(f"{checkout.top} has no commits yet")
    return name, branch, commit


def fill_world(repo: str | None, branch: str | None, commit: str | None, *, cwd: Path | None = None,
               registry: Registry | None = None) -> World:
    """Fill a world from the registered clone (or worktree) around ``cwd`` where not given: every door's default.

    A world that names its repo is taken as given. Else the repo is the clone's
    around ``cwd`` (none outside a registered clone); with neither branch nor
    commit given, the clone's HEAD: a checked-out branch (its tip is the world's
    commit, so the world follows the branch), or a detached commit. ``am slice``
    and the MCP server's tools resolve through this, so both give one answer.
    """
    if repo is not None:
        return repo, branch, commit
    found = registered_here(cwd, registry)
    if found is None:
        return None, branch, commit
    name, checkout = found
    if branch is None and commit is None:
        branch, commit = checkout.head()
        if commit is None:  # an unborn branch (a new project, no commit yet): no branch to judge by, the repo alone
            branch = None
        elif branch is not None:
            commit = None  # a checked-out branch's HEAD is its tip: the world is the branch
    return name, branch, commit


def uncommitted_in(top: Path, watched: Sequence[str] = ()) -> list[str]:
    """Return the files of the work tree at ``top`` that differ from HEAD (changed, staged, new or deleted),
    only those under a ``watched`` path (a file, folder or glob, as staleness matches them) when given.

    Read with libgit2 (pygit2's status), which runs none of the clone's hooks, filters or fsmonitor.
    """
    from am.git import GitStore
    from am.worlds.stale import path_matches

    changed = GitStore.open_code(top).work_tree_status()
    return sorted(p for p in changed if not watched or any(path_matches(w, p) for w in watched))


def vault_here(cwd: Path | None = None, registry: Registry | None = None) -> Path | None:
    """Return the vault that the registered clone (or worktree) around ``cwd`` belongs to, if it names one."""
    registry = registry or Registry.load()
    found = registered_here(cwd, registry)
    if found is None:
        return None
    vault = registry.repo_vaults.get(found[0])
    if vault is None:
        return None
    path = registry.vaults.get(vault)
    return Path(path).expanduser() if path is not None else None
