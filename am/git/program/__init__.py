"""What am asks of the git program (``git`` run as a child process) and of clones libgit2 cannot read alone.

* ``transport``: fetch, push and the upstream of a vault's remote, with no
  pygit2 import (a no-op ``am sync`` and the CLI's entry use it alone);
* ``prewrite``: the files a merge will bring, written ahead by a helper
  process (this file run as a script), and the safe settings every git child
  process here runs with (``SAFE_GIT``, ``git_env``);
* ``partial``: partial and shallow clones, a missing blob fetched as git
  fetches it;
* ``patchids``: patch ids of a code repository's commits (``git patch-id``);
* ``cligit``: what a Git hook reads of its repository through the git CLI;
* ``sparse``: a sparse checkout that leaves a record folder out of the work tree;
* ``catfile``: a large blob copied into its file by ``git cat-file``, never held in memory.

These are the light paths of ``am.git``: none imports pygit2 when it is
imported (``patchids`` opens a clone with it only when asked), and this
``__init__`` imports nothing at run time, so ``am.git.program.transport`` costs
a no-op sync no more than it did as ``am.git.transport`` (PERF.md, start-up).
Below the store: ``reading`` (``partial``), ``checks`` (``prewrite``),
``light`` and ``locking`` (``sparse``) use them; ``remote`` drives ``transport``.

May import: ``am.errors``, the leaves ``am.git.refs`` and ``am.git.values``,
each other, the standard library, pygit2 only inside a function that needs
a clone.
Must not import: ``am.git.store`` or any module that imports pygit2 at import
time, the ``am.git`` package itself (a circle), ``am.cache`` and every floor above it.

Decisions: docs/decisions/sync.md (transport, prewrite), docs/decisions/git.md.
"""
