"""The escape hatch: ``AM_GIT_WRITER=libgit2`` commits through libgit2's own writers only (used by write/transaction.py).

am's write path writes some Git formats itself, for speed: the batch's pack
and its index (formats/packs.py), the chain's trees (formats/trees.py) and Git's index
(formats/gitindex.py). Each is checked against git and libgit2 in the tests; still,
a person who suspects one of them can take them all off the path:

    AM_GIT_WRITER=libgit2 am fact add ...

Then every object is a loose object written (and fsynced) by libgit2, every
tree is built by libgit2's TreeBuilder, Git's index is read, changed and
written by libgit2, and packs are never merged by am. The locks, the checks,
the compare-and-swap branch move and the crash notes are the same code as on
the fast path. Slower (a loose object and an fsync per object, the whole index
re-serialised per batch), and as safe.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

import pygit2
from pygit2.enums import FileMode

import am.git.coord.inflight as inflight
import am.git.coord.spool as spool
from am.errors import AmError, ConflictError
from am.git.coord.group import Request
from am.git.staging import Staging
from am.git.values import failpoint

__all__ = ["PlainWriter", "build_tree", "plain"]


def plain() -> bool:
    """Return whether writes go through libgit2's own writers only (``AM_GIT_WRITER=libgit2``)."""
    return os.environ.get("AM_GIT_WRITER", "am") == "libgit2"


def build_tree(repo: pygit2.Repository, base: pygit2.Oid | None,
               blobs: dict[tuple[str, ...], pygit2.Oid], path: tuple[str, ...] = ()) -> pygit2.Oid:
    """Return the tree ``base`` with these files set, built with libgit2's TreeBuilder."""
    builder = repo.TreeBuilder(base) if base is not None else repo.TreeBuilder()
    folders: dict[str, dict[tuple[str, ...], pygit2.Oid]] = {}
    for parts, oid in blobs.items():
        if len(parts) == 1:
            existing = builder.get(parts[0])
            if existing is not None and existing.type_str == "tree":
                raise ConflictError(f"{'/'.join((*path, parts[0]))} is a folder in the vault where am writes a file")
            builder.insert(parts[0], oid, FileMode.BLOB)
        else:
            folders.setdefault(parts[0], {})[parts[1:]] = oid
    for name, inner in folders.items():
        existing = builder.get(name)
        if existing is not None and existing.type_str != "tree":
            raise ConflictError(f"{'/'.join((*path, name))} is a file in the vault where am needs a folder")
        child = build_tree(repo, None if existing is None else existing.id, inner, (*path, name))
        builder.insert(name, child, FileMode.TREE)
    return builder.write()


class PlainWriter:
    """The chain of a batch written with libgit2's object, tree and index writers."""

    def __init__(self, staging: Staging) -> None:
        self.staging = staging
        self.repo = staging.repo

    def write_chain(self, ref: str, live: list[Request], base_tree: pygit2.Tree | None, tip: str | None,
                           heal: list[tuple[PurePosixPath, pygit2.Oid]],
                           ) -> tuple[list[pygit2.Oid | AmError], None]:
        """Write one commit per request (loose objects, fsynced by libgit2), then move the branch to the last."""
        outcomes: list[pygit2.Oid | AmError] = []
        parent = tip
        tree: pygit2.Oid | None = None if base_tree is None else base_tree.id
        subjects = []
        for r in live:
            try:
                tree = build_tree(self.repo, tree, r.blobs)
            except ConflictError as err:
                outcomes.append(err)
                continue
            parents = [] if parent is None else [pygit2.Oid(hex=parent)]
            oid = self.repo.create_commit(None, pygit2.Signature(*r.author),
                                          pygit2.Signature(*(r.committer or r.author)), r.message, tree, parents)
            outcomes.append(oid)
            parent = str(oid)
            subjects.append(r.message.split("\n", 1)[0])
        if parent is None or parent == tip:
            return outcomes, None
        for r, o in zip(live, outcomes):
            if r.remote is not None and not isinstance(o, AmError):
                spool.answer_pending(self.staging.queue_dir, r, str(o))
        failpoint("after-objects")
        entries = [(c.path, str(r.blobs[tuple(c.path.parts)])) for r, o in zip(live, outcomes)
                   if not isinstance(o, AmError) for c in r.changes]
        inflight.write(self.staging.am_dir, ref, parent, entries + [(p, str(o)) for p, o in heal])
        reflog = "commit: " + subjects[-1]
        if len(subjects) > 1:
            reflog = f"commit (am group of {len(subjects)}): " + subjects[-1]
        try:
            self.staging.lock_index_for_move()  # as git commit does (staging.py); refused past the wait
        except BaseException:
            inflight.note_failed_move(self.staging.am_dir, parent, tip)  # its loose objects: never replayed
            raise
        try:
            self.staging.move_ref(ref, tip, pygit2.Oid(hex=parent), reflog)
        except BaseException:
            self.staging.let_go_index_lock()
            raise
        return outcomes, None
