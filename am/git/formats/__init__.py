"""The Git formats am writes itself, for speed, each held to git and libgit2 as its oracle in the tests.

* ``packs``: a batch's objects written as one pack file with its index, and
  am's small packs merged as they pile up;
* ``midx``: which packs git's multi-pack index already covers (read only);
* ``trees``: the trees of a chain of commits, each folder kept as sorted
  entries from one commit to the next, written into the batch's pack;
* ``gitindex``: Git's index file (versions 2 and 3) kept as bytes and updated
  by splicing entries;
* ``bigblob``: large files (session logs) written to the object store before
  the commit that names them, and told to the batch's pack.

``AM_GIT_WRITER=libgit2`` takes all of them off the write path (am/git/write/plain.py).
The staging, the write transaction and the store (above) use these; nothing
here knows a store, a lock or a write.

May import: ``am.errors``, pygit2, the leaves of ``am.git`` (``values``,
``common``) and each other, each by its own name.
Must not import: ``am.git.store``, ``reading``, ``staging``, ``am.git.write``,
``am.git.coord``, ``am.git.program``, the ``am.git`` package itself (a circle),
``am.cache`` and every floor above it.
This ``__init__`` imports nothing at run time.

Decisions: docs/decisions/git.md.
"""
