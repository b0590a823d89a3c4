"""The cache: the disposable SQLite index of records, links and full text, and search over it.

Floor 3. The only user of sqlite3 (in ``index.py``). Everything here is
derived from the working tree and Git history and can be deleted: ``file``
guards the database file, ``rows`` says what a record becomes in it, ``scan``
finds what changed since the last refresh, ``query`` reads it back (``statements``:
the facts that say a statement), ``recordfiles`` reads a vault's record files (by id
through the index; the facade's reads and the write floor's), ``progress`` holds the
command line's progress bar for a rebuild, ``stems`` the English stemmer,
``textseg`` segments text (CJK bigrams), ``timephrases`` turns "last week" or
"上周" into a range, ``search`` ranks hits, ``sessionlines`` indexes and ranks
the lines of ingested session logs (tables of their own), ``vectors`` keeps the
records' embeddings and ranks them, held in memory by a long-lived process
(``vecmatrix``) or read from a file beside the cache by a one-shot one (``vecfile``).

May import: ``am.errors``, ``am.clock``, ``am.records``, ``am.git`` (its light,
pygit2-free part at module level).
Must not import: ``am.worlds``, ``am.packs``, ``am.writes``, ``am.upkeep``, ``am.vault``, doors.
A vault reaches the cache through the ``VaultFiles`` protocol, not the facade.

Decisions: docs/decisions/cache.md.
"""
