"""Upkeep: keeping a vault healthy and accountable after its writes.

Floor 7. ``check`` validates every file (with ``checklinks`` and
``worldcheck``, each finding an ``issues.Issue``); ``hooks`` runs the git
hooks of vaults and code repositories (``hookfiles`` installs them,
``precommit`` and ``postcommit`` are the vault's commit hooks, ``health``
says what is wrong with them, ``merges`` completes Git's merges of records);
``audit`` reads the trail (log, history, blame, undo; ``writers`` counts
fact writes by actor from it); ``recover`` restores what a reset lost and
repairs the repository (``am doctor``); ``review`` decides the facts that
wait for review.

May import: every floor below (``am.records``, ``am.git``, ``am.cache``,
``am.worlds``, ``am.packs``, ``am.writes``: accepting a proposal or undoing a
commit is a write), ``am.errors``, ``am.clock``, ``am.registry``.
Must not import: ``am.vault`` (``hooks`` is handed the facade's opener by the
door that runs it), ``am.cli`` or any other door.

Decisions: docs/decisions/upkeep.md.
"""
