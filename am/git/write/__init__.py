"""The write transaction of ``am.git``: what one batch of writes does once it holds the write lock.

* ``transaction.Writer``: the requests of a batch checked, their files written,
  one commit each chained on the branch tip, one flush, one compare-and-swap
  branch move, one rewrite of Git's index; group commit (``commit_grouped``);
* ``plain.PlainWriter``: the same chain through libgit2's own writers only
  (``AM_GIT_WRITER=libgit2``);
* ``guards.Guards``: the checks a write passes first (requests, signing, the
  dirty check) and the healing of Git's index after a killed write;
* ``worktree.WorkTree``: the work tree's files, each replaced only if it is
  still what the dirty check saw, and put back when a write fails.

``GitStore`` (am/git/store.py) builds these, handing each the reader, staging
(Git's index, lock files, branch moves) and write lock it drives.

May import: what ``am.git`` may (``am.errors``, ``am.records``, pygit2) and the
modules of ``am.git`` below the store, each by its own name.
Must not import: ``am.git.store`` or the ``am.git`` package itself (a circle),
``am.cache`` and every floor above it.

Decisions: docs/decisions/git.md.
"""
