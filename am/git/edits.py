"""A tree edited by path: files written and files removed, on top of a commit's tree (for moves and renames).

``store.commit_tree(lambda tip: edited_tree(store, tip, writes, removes))`` is
one commit that writes, moves and removes files, with the compare-and-swap,
the dirty-file checks and the index update of ``commit_tree``. Plain libgit2
(an in-memory index), not the batch path: renames are rare and touch few files.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pygit2

__all__ = ["edited_tree", "staged_changes"]


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


def staged_changes(store: Any, index_file: str | None) -> list[tuple[str, str | None, str | None]]:
    """Return (path, blob in HEAD or None, blob staged or None) of every file the index changes against HEAD.

    libgit2 compares the index (Git's, or the one a hook was handed) with
    HEAD's tree in C: a one-file commit in a 10k-file vault costs milliseconds.
    """
    repo: pygit2.Repository = store.repo
    index = pygit2.Index(index_file) if index_file else pygit2.Index(str(store.gitdir / "index"))
    index._repo = repo  # type: ignore[assignment]  # diff_to_tree needs the repository the index belongs to
    head = store.head()
    if head is None:
        return [(entry.path, None, str(entry.id)) for entry in index]
    out: list[tuple[str, str | None, str | None]] = []
    for delta in index.diff_to_tree(repo[head].peel(pygit2.Tree)).deltas:
        status = delta.status_char()
        old = None if status == "A" else str(delta.old_file.id)
        new = None if status == "D" else str(delta.new_file.id)
        if delta.old_file.path != delta.new_file.path:
            out.append((delta.old_file.path, old, None))
            out.append((delta.new_file.path, None, new))
        else:
            out.append((delta.new_file.path, old, new))
    return out
