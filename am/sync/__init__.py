"""Sync: many machines and agents, one memory (DESIGN §9) — a door above the facade.

``am sync`` fetches a vault's remote, merges it with the record-aware merge of
``am.records.merge`` (a fast-forward, or one ``Am-Op: sync.merge`` commit), and
pushes without force, fetching and merging again when the remote moved.
``am merge BRANCH`` folds a vault branch in with the same merge.

May import: the facade (``am.vault``, under TYPE_CHECKING) and every library
floor: ``am.records`` (the merge rules), ``am.git`` (fetch, push, merge bases,
moving the branch), ``am.upkeep``, ``am.errors``.
Must not import: the other doors (``am.cli``, ``am.mcp``, ...), pygit2, sqlite3, click.

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

from am.sync.engine import MergePlan, SyncReport, merge_branch, plan_merge, sync

__all__ = ["MergePlan", "SyncReport", "merge_branch", "plan_merge", "sync"]
