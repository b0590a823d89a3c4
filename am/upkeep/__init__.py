"""Upkeep: keeping a vault healthy and accountable.

Floor 6. ``check`` validates every file; ``hooks`` installs and runs the git
hooks of vaults and code repositories; ``audit`` reads the trail (log,
history, blame, undo); ``recover`` restores what a reset lost and repairs the
repository; ``authorship`` says who writes (actor and Git identity);
``worldwrites`` checks the world a write names and re-confirms facts.

May import: every floor below (``am.records``, ``am.git``, ``am.cache``,
``am.worlds``, ``am.packs``), ``am.errors``, ``am.clock``, ``am.registry``.
Must not import: ``am.vault`` at module level (``hooks`` opens a vault lazily,
as a door would), ``am.cli`` or any other door.
"""
