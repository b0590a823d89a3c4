"""What a read needs from Git without pygit2: ``LazyStore``, HEAD from the ref files, and (re-exported from
``am.git.values``) the value types, failpoints and blob ids.

Importing pygit2 costs ~100 ms, more than a whole warm `am search`. A read on a
fresh cache needs only HEAD's commit id (to see that the cache is current) and
the path of Git's index (its stamp): both are plain files. ``LazyStore`` answers
those from the files and opens the repository (importing pygit2) the first time
it is asked anything else; anything unusual about the refs (a symbolic ref
chain, reftable, an unborn branch) is left to pygit2.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from am.git.refs import UNKNOWN, read_ref
from am.git.values import (
    FAILPOINTS,
    Change,
    CommitInfo,
    failpoint,
    hash_blob,
    hash_fd,
    hash_file,
)

if TYPE_CHECKING:
    from am.git.store import GitStore

    _Store = GitStore  # type checkers see every GitStore method; at run time they come from __getattr__
else:
    _Store = object

__all__ = ["FAILPOINTS", "UNKNOWN", "Change", "CommitInfo", "LazyStore", "failpoint", "hash_blob", "hash_fd", "hash_file",
           "read_ref"]

_OPENING = threading.Lock()


class LazyStore(_Store):
    """A vault's GitStore that opens the repository only when a question needs more than the ref files."""

    def __init__(self, root: Path, *, code: bool = False) -> None:
        self.root = root
        self.gitdir = root / ".git"
        self._code = code
        self._store: GitStore | None = None

    @staticmethod
    def _plain(root: Path) -> bool:
        return (root / ".git" / "HEAD").is_file() and (root / ".git" / "objects").is_dir()

    @classmethod
    def open(cls, root: Path) -> LazyStore:
        """Open a work tree: lazily when its .git is a plain folder, now otherwise (a linked worktree, none)."""
        store = cls(root)
        if not cls._plain(root):
            store.opened()
        return store

    @classmethod
    def open_code(cls, root: Path) -> LazyStore:
        """Open a code repository's clone to read its commit graph: lazily when it has a plain .git folder."""
        store = cls(root.resolve(), code=True)
        if not cls._plain(store.root):
            store.root = root
            store.opened()
        return store

    @classmethod
    def init(cls, root: Path, *, branch: str = "main") -> LazyStore:
        """Create a repository at ``root`` (or open the one there), opened now."""
        from am.git.store import GitStore

        if root.is_dir() and not (root / ".am" / "vault.yml").is_file():
            from am.git.program.sparse import refuse_hidden_vault

            refuse_hidden_vault(root)  # a vault whose .am/ a sparse checkout left out: no new vault made there
        store = cls(root)
        store._store = GitStore.init(root, branch=branch)
        store.root, store.gitdir = store._store.root, store._store.gitdir
        return store

    def opened(self) -> GitStore:
        """Return the real store, opening the repository the first time."""
        if self._store is None:
            from am.git.store import GitStore

            # Threads sharing a vault must share one store (its locks and kept index live in it).
            with _OPENING:
                if self._store is None:
                    store = GitStore.open_code(self.root) if self._code else GitStore.open(self.root)
                    self.root, self.gitdir = store.root, store.gitdir
                    self._store = store
        return self._store

    def head(self) -> str | None:
        """Return the commit id HEAD resolves to, or None on an unborn branch."""
        if self._store is None:
            found = read_ref(self.gitdir)
            if found != UNKNOWN:
                return found
        return self.opened().head()

    def find_commit(self, rev: str) -> str | None:
        """Return the commit a revision names, or None; a branch ref is read from the files when it can be."""
        if self._store is None and rev.startswith("refs/heads/"):
            found = read_ref(self.gitdir, rev)
            if found != UNKNOWN:
                return found
        return self.opened().find_commit(rev)

    def __getattr__(self, name: str) -> Any:
        # Everything else is the real store's (called only for names not found here).
        if name.startswith("__") or name == "_store":
            raise AttributeError(name)
        return getattr(self.opened(), name)
