"""The only user of pygit2 (this package): the write lock, compare-and-swap commits, and reads of history.

Who owns what. ``GitStore`` (store.py) is a thin front: it opens the repository
and builds one object per job, each handed what it needs in its constructor
(the pygit2 ``Repository``, the paths, the other objects it drives), the way
dulwich's ``Repo`` holds an object store and a refs container:

* ``Reader`` (reading.py): refs, trees, blobs, history, ancestry;
* ``Staging`` (staging.py): Git's index, Git's lock files and the
  compare-and-swap branch move, and what this process's writers share (coord/group.py);
* ``Locking`` (locking.py): am's write lock and key locks, and the queue of
  other processes' requests while one waits (coord/spool.py);
* ``WorkTree`` (write/worktree.py): the work tree's files, replaced only if still as checked;
* ``Guards`` (write/guards.py): request checks, signing, the dirty check, index healing;
* ``Writer`` (write/transaction.py) with ``PlainWriter`` (write/plain.py): the write transaction;
* ``Repairer`` (repair.py): undo, recovery, doctor, hooks; ``LostCommits``
  (lost.py): the commits no ref reaches, from the reflogs and the objects.

Below them: ``values`` (``Change``, ``CommitInfo``, failpoints, blob ids: the
leaf every module may import), ``common`` (fsync and lock-wait helpers), and
three sub-folders, each saying in its ``__init__`` what it may import:

* ``formats/``: the Git formats am writes itself (``packs``, ``midx``,
  ``trees``, ``gitindex``, ``bigblob``), each held to git as its oracle;
* ``coord/``: what writers leave for each other around the write lock
  (``group``, ``spool``, ``inflight``, ``asidelocks``, ``lease``);
* ``program/``: the git program as a child process, without pygit2
  (``transport``, ``prewrite``, ``partial``, ``patchids``, ``cligit``, ``sparse``).

Beside them, without pygit2: ``refs`` and ``light`` (``LazyStore``: HEAD from
the ref files, the store opened on first need). Above the store: ``remote``
(remotes and merges, with ``movefiles``: the work tree's files of a branch move) and ``patch`` (a reviewer's diff). For the floors above,
beside the store: ``checks`` (what every write request passes), ``incoming`` (paths
Git refuses and links that leave the vault, in a commit from elsewhere), ``edits`` (a
tree edited by path), ``branches`` (vault branches) and ``workfiles`` (the
work tree read as Git stores it).
No import circle: a module never imports the ``am.git`` package itself, only
the submodule it needs (a sub-folder's ``__init__`` imports nothing), and a
module below the store that needs a store only for annotations takes a small
``Protocol`` (``formats/bigblob.Objects``); only ``light``, ``remote`` and
``patch``, above the store, name ``GitStore``.

A write follows RELIABILITY.md to the letter:

1. take am's own advisory lock (``.git/am/write.lock``), blocking with a timeout;
2. check that no file to be written carries someone's uncommitted edit;
3. write each working-tree file atomically (temp file, fsync, rename, fsync dir);
4. build the new tree from the branch tip plus exactly the changed files and
   create the commit with ``create_commit(ref, ..., parents=[tip])``, which
   libgit2 turns into a compare-and-swap; if someone else moved the branch,
   rebuild on the new tip and try again, never dropping their commit;
5. update Git's index for those paths only, holding ``index.lock`` the way git
   does, so a later ``git add -A && git commit`` keeps am's files.

Writers of one process that arrive together are committed as a group
(``commit_grouped``): one commit each, chained, with one flush, one branch
move, one index rewrite (docs/commit-protocol.md).

Failpoints for crash tests: ``AM_FAILPOINT=<name>`` makes the process kill
itself with SIGKILL at that step (names in ``FAILPOINTS``).

Floor 2. May import: ``am.errors``, ``am.clock``, ``am.records``, pygit2 (in
``store`` and the modules it loads, never from ``light``).
Must not import: ``am.cache`` and every floor above it, sqlite3, click.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

# Nothing is imported here at run time: a process that needs only am.git.refs or am.git.program.transport
# (a no-op am sync) does not pay for dataclasses and typing (PERF.md, start-up). TYPE_CHECKING is
# spelled out for the same reason; type checkers treat the name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from am.git.light import (
        FAILPOINTS,
        Change,
        CommitInfo,
        LazyStore,
        failpoint,
        hash_blob,
    )
    from am.git.store import GitStore

__all__ = ["FAILPOINTS", "Change", "CommitInfo", "GitStore", "LazyStore", "failpoint", "hash_blob"]

_LIGHT = frozenset({"FAILPOINTS", "Change", "CommitInfo", "LazyStore", "failpoint", "hash_blob"})


def __getattr__(name: str) -> object:
    if name in _LIGHT:
        import am.git.light

        return getattr(am.git.light, name)
    if name == "GitStore":
        from am.git.store import GitStore

        return GitStore
    raise AttributeError(f"module 'am.git' has no attribute {name!r}")
