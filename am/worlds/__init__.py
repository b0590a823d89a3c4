"""Worlds: which records hold in a (repo, branch, commit, time), and why.

Floor 4. ``rules`` judges one record in a world (status, repo, ancestry or
branch name, valid time, supersession); ``ancestry`` reads the code
repository's commit graph through a registered clone and caches it;
``branches`` resolves the branch names a world may use (and the closest to a typo);
``checks`` checks the world a write names;
``landed`` tells when a commit outside the history landed in it as an
equivalent commit (patch ids, as git cherry); ``here`` finds the world of the
current checkout; ``stale`` tells which facts
a code commit makes stale.

May import: ``am.errors``, ``am.clock``, ``am.registry``, ``am.records``,
``am.git``, ``am.cache``.
Must not import: ``am.packs``, ``am.writes``, ``am.upkeep``, ``am.vault`` (take the
``VaultReader`` protocol instead), doors.

Decisions: docs/decisions/worlds.md.
"""
