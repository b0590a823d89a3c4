"""Portability (DESIGN §12): `am import` from the systems people use, `am export` back out.

A door above the facade (floor 9). Readers are one module per source system
(``read_*.py``); each turns a source into records with stable ids through
``am.io.source.Builder``; ``am.io.importer`` sets them against the vault and
writes what is new in batched commits (``Vault.import_batch``);
``am.io.export`` writes records out.

May import: the facade (``am.vault``, under ``TYPE_CHECKING``: the caller
hands the vault in) and every library floor (``am.records``, ``am.worlds``,
``am.errors``, ...); Git and the cache only through the ``Vault``.
Must not import: another door (``am.cli``, ``am.mcp``, ``am.sync``,
``am.sessions``), pygit2, sqlite3 or click.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

from am.io.export import EXPORT_FORMATS, ExportWorld, export_pairs, render_export
from am.io.importer import ImportOptions, ImportSummary, import_source, read_source
from am.io.source import SYSTEMS

__all__ = [
    "EXPORT_FORMATS",
    "SYSTEMS",
    "ExportWorld",
    "ImportOptions",
    "ImportSummary",
    "export_pairs",
    "import_source",
    "read_source",
    "render_export",
]
