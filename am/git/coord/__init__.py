"""What writers leave for each other around am's write lock: the queues, the note of a write in flight, leases.

* ``group``: group commit's queue, the writers of one process waiting to
  commit to one repository (``Request``, ``Group``);
* ``spool``: group commit across processes, a writer that finds the write
  lock taken leaves its request in ``.git/am/queue/`` for the leader;
* ``inflight``: the note of a write in flight (``.git/am/inflight``), what lets
  the next write finish a killed one;
* ``asidelocks``: Git lock files am moved aside (``.git/am/stale-locks/``),
  and the pruning of what is kept there;
* ``lease``: knowing when another program opens a work-tree file for writing
  while am replaces it (Linux file leases).

The lock itself is ``Locking`` (am/git/locking.py), one of the objects the
store owns; it, ``staging``, the write transaction (am/git/write/) and the
repairs use these. Nothing here holds a repository open or moves a branch.

May import: ``am.errors``, pygit2, the leaves of ``am.git`` (``values``,
``common``), ``am.git.formats`` and each other, each by its own name.
Must not import: ``am.git.store``, ``reading``, ``staging``, ``locking``,
``am.git.write``, the ``am.git`` package itself (a circle), ``am.cache`` and
every floor above it.
This ``__init__`` imports nothing at run time.

Decisions: docs/decisions/git.md.
"""
