"""Writes: what runs when a record is written, between the reads below and the facade above.

Floor 6. The facade hands this floor its collaborators, not itself:
``RecordFiles`` (am/cache/recordfiles.py), ``authorship.Authorship`` (who
writes: actor, Git identity, am's commit messages) and ``writer.RecordWriter``
(the one way a record reaches Git: checked, rendered, committed, handed to the
cache; an update's compare-and-swap base). ``facts`` adds, supersedes and
changes the status of facts; ``forms`` renders a record as the write puts it
and holds the name rule (no new record takes a name, or a look-alike of a
name, another record answers to); ``duplicates`` finds a fact already
recorded instead of writing its twin; ``worldwrites`` checks the world a
write names and re-confirms facts; ``renames`` renames a topic (every
reference follows) and fixes a fact's text; ``lookup`` finds the record an id
names; ``formats`` refuses a vault of a newer format; ``obsidian`` writes the
templates and settings an Obsidian vault lacks.

May import: every floor below (``am.records``, ``am.git``, ``am.cache``,
``am.worlds``, ``am.packs``), ``am.errors``, ``am.clock``, ``am.registry``.
Must not import: ``am.upkeep`` (check, hooks, audit, recover, review sit
above and write through this floor), ``am.vault`` (the facade calls in with
its collaborators; nothing here calls back), ``am.cli`` or any other door.

Decisions: docs/decisions/writes.md.
"""
