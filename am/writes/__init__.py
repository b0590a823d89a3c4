"""Writes: what runs when a record is written, between the reads below and the facade above.

Floor 6. ``forms`` renders a record as the write puts it (a changed file in
its own form, a new one as the vault's settings ask) and holds the name rule
(no new record takes a name, or a look-alike of a name, another record
answers to); ``duplicates`` finds a fact already recorded instead of writing
its twin; ``renames`` renames a topic (every reference follows) and fixes a
fact's text; ``worldwrites`` checks the world a write names and re-confirms
facts; ``updating`` is the compare-and-swap base of an update and the checks
every write passes (format, size, secrets); ``authorship`` says who writes
(actor, Git identity) and composes am's commit messages; ``obsidian`` writes
the templates and settings an Obsidian vault lacks.

May import: every floor below (``am.records``, ``am.git``, ``am.cache``,
``am.worlds``, ``am.packs``), ``am.errors``, ``am.clock``, ``am.registry``.
Must not import: ``am.upkeep`` (check, hooks, audit, recover, review sit
above and may write through this floor), ``am.vault`` (the facade calls in
with what a write needs), ``am.cli`` or any other door.
"""
