"""The world of the current folder: which registered repo, branch and commit we are in."""

from __future__ import annotations

from pathlib import Path

from am.errors import AmError, NotFoundError, UsageError
from am.git import GitStore
from am.registry import Registry

__all__ = ["world_here"]


def world_here(cwd: Path | None = None) -> tuple[str, str | None, str]:
    """Return (repo name, branch, commit) of the Git repository around ``cwd``."""
    start = (cwd or Path.cwd()).resolve()
    top = next((p for p in (start, *start.parents) if (p / ".git").exists()), None)
    if top is None:
        raise UsageError(f"{start} is not inside a Git repository", hint="run it from your code repository, or pass --repo")
    # A code repository, not a vault: open it read-only, whatever its layout.
    store = GitStore.open_code(top)
    commit = store.head()
    if commit is None:
        raise UsageError(f"{top} has no commits yet")
    try:
        branch: str | None = store.head_ref().removeprefix("refs/heads/")
    except AmError:  # a detached HEAD has no branch; the commit still places the fact
        branch = None
    registry = Registry.load()
    for name, path in sorted(registry.repos.items()):
        if Path(path).expanduser().resolve() == top:
            return name, branch, commit
    raise NotFoundError(f"{top} is not a registered code repository", hint=f"register it: am repo add NAME {top}")
