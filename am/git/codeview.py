"""Reads and object writes of a code repository that am judges worlds in (not a vault).

`am/worlds/codetree.py` lists a commit's files; `am/worlds/preview.py` asks for the merge of
two tips as Git would make it. Both are libgit2 work, so they live here (pygit2 stays in
am/git). The merge writes objects only, like ``git merge-tree --write-tree``: a tree and a
commit no ref names.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pygit2

if TYPE_CHECKING:
    from am.git.store import GitStore

__all__ = ["tree_files", "merge_commit"]


def tree_files(store: GitStore, commit: str) -> list[str]:
    """Return every file path in ``commit``'s tree (blobs and links; a submodule as its folder), sorted."""
    repo = store.repo
    tree = repo.revparse_single(commit).peel(pygit2.Tree)
    files: list[str] = []
    stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for entry in node:
            path = prefix + str(entry.name)
            if entry.type_str == "tree":
                stack.append((path + "/", repo[entry.id].peel(pygit2.Tree)))
            else:
                files.append(path)
    return sorted(files)


def merge_commit(store: GitStore, ours: str, theirs: str, message: str) -> tuple[str, tuple[str, ...]]:
    """Return the commit merging ``theirs`` into ``ours`` (made if needed) and the paths Git could not merge.

    Already merged: ``ours``; a fast-forward: ``theirs``, as ``git merge`` leaves them. A conflicted path keeps
    ``ours``'s side (deleted if ``ours`` deleted it). The author and time are fixed from the two tips, so asking
    again makes the same commit.
    """
    repo = store.repo
    ours_id, theirs_id = repo.revparse_single(ours).id, repo.revparse_single(theirs).id
    if ours_id == theirs_id or repo.descendant_of(ours_id, theirs_id):
        return str(ours_id), ()
    if repo.descendant_of(theirs_id, ours_id):
        return str(theirs_id), ()
    index = repo.merge_commits(ours_id, theirs_id)
    conflicts: list[str] = []
    if index.conflicts is not None:
        for ancestor, mine, other in list(index.conflicts):
            path = (mine or other or ancestor).path
            conflicts.append(path)
            del index.conflicts[path]
            if mine is not None:
                index.add(mine)
    tree = index.write_tree(repo)
    a, b = repo[ours_id].peel(pygit2.Commit), repo[theirs_id].peel(pygit2.Commit)
    who = pygit2.Signature("am merge preview", "am@localhost", max(a.commit_time, b.commit_time), 0)
    made = repo.create_commit(None, who, who, message + "\n", tree, [ours_id, theirs_id])
    return str(made), tuple(sorted(conflicts))
