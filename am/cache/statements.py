"""Reading the cache for a fact add: the facts that already say a statement (docs/decisions/writes.md#a-fact-said-twice-is-recorded-once-duplicates).

A mixin of am/cache/index.py's ``Index``, like am/cache/query.py: SQL through ``self.conn`` only,
along ``records_statement`` (one key a statement, am/cache/rows.py), so the answer costs the same
in a vault of ten facts or of a hundred thousand.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from am.cache.rows import record_from_json, statement_key
from am.records.model import Fact

__all__ = ["StatementQueries"]


class StatementQueries:
    """Facts by statement; ``Index`` supplies ``conn``."""

    conn: Any

    def facts_stating(self, text: str) -> list[tuple[PurePosixPath, Fact]]:
        """Return (path, fact) of every fact whose text is ``text`` up to whitespace, sorted by id then path."""
        flat = " ".join(text.split())
        rows = self.conn.execute("SELECT path, data FROM records INDEXED BY records_statement "
                                 "WHERE type = 'fact' AND statement = ? ORDER BY id, path", (statement_key(text),))
        return [(PurePosixPath(p), f) for p, d in rows
                if isinstance(f := record_from_json("fact", d), Fact) and " ".join(f.body.split()) == flat]

    def statement_keys(self) -> set[int]:
        """Return the statement key of every fact (what an import asks before ``facts_stating``, once)."""
        return {k for (k,) in self.conn.execute("SELECT DISTINCT statement FROM records INDEXED BY records_statement "
                                               "WHERE type = 'fact'")}
