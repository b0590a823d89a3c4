"""Context packs: what an agent reads before a task.

Floor 5. ``retrieval`` finds candidates (vector, full text, graph, in that
order, each level saying whether it served); ``slice`` assembles a pack for a
world; ``pack`` ranks, budgets and renders it (Markdown and JSON, byte-stable);
``cache`` is the fast path that judges worlds straight from the SQLite cache.

May import: every floor below (``am.records``, ``am.git``, ``am.cache``,
``am.worlds``), ``am.errors``, ``am.clock``, ``am.registry``.
Must not import: ``am.writes``, ``am.upkeep``, ``am.vault`` (take ``am.worlds.ancestry.VaultReader``), doors.

Decisions: docs/decisions/packs.md.
"""
