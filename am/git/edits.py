"""A tree edited by path: files written and files removed, on top of a commit's tree (for moves and renames).

``store.commit_tree(lambda tip: edited_tree(store, tip, writes, removes))`` is
one commit that writes, moves and removes files, with the compare-and-swap,
the dirty-file checks and the index update of ``commit_tree``. Plain libgit2
(an in-memory index), not the batch path: renames are rare and touch few files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pygit2

__all__ = ["edited_tree"]


def edited_tree(store: Any, tip: str | None, writes: Mapping[str, bytes], removes: Sequence[str]) -> str:
    """Return the id of ``tip``'s tree with ``writes`` (path -> bytes) put in and ``removes`` taken out."""
    repo: pygit2.Repository = store.repo
    index = pygit2.Index()
    if tip is not None:
        index.read_tree(repo[tip].peel(pygit2.Tree))
    for path in removes:
        if path in index:
            index.remove(path)
    for path, data in writes.items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), pygit2.enums.FileMode.BLOB))
    return str(index.write_tree(repo))
