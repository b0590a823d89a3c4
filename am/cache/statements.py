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


_NEAR_COLUMNS = "r.id, json_extract(r.data, '$[2]')"  # the body: RECORD_FIELDS[Fact][2] (a test holds it)
_NEAR_WORLD = ("r.type = 'fact' AND r.status IN (SELECT value FROM json_each(?)) AND COALESCE(r.repo, '') = ? "
               "AND COALESCE(r.version, '') = ?")


class StatementQueries:
    """Facts by statement; ``Index`` supplies ``conn``."""

    conn: Any
    NEAR_CAP = 300  # a topic with more facts than this is searched, not read whole

    def facts_near(self, text: str, topics: list[str] | tuple[str, ...], repo: str | None, version: str | None,
                   statuses: tuple[str, ...]) -> list[tuple[str, str]]:
        """Return (id, text) of facts in one world (``statuses``, repo, branch) sharing a topic with a new fact.

        The facts a similar-fact check (am/writes/similar.py) compares ``text`` with. The topics' members
        are read whole through ``members`` when they are at most ``NEAR_CAP`` (~0.2 ms at 100k facts);
        a bigger topic is searched instead, for the facts holding every word of ``text`` and then every
        word but its numbers (an update's "3 retries" -> "5 retries"), at most 200 a search. No ``topics``:
        the facts of any topic that search finds (a session's proposal, which names its session).
        """
        import json

        world = [json.dumps(list(statuses)), repo or "", version or ""]
        marks = ",".join("?" * len(topics))
        size = self.conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM members WHERE topic IN ({marks}) LIMIT ?)",
                                 [*topics, self.NEAR_CAP + 1]).fetchone()[0] if topics else self.NEAR_CAP + 1
        if size <= self.NEAR_CAP:
            rows = self.conn.execute(f"SELECT DISTINCT {_NEAR_COLUMNS} FROM members m JOIN records r ON r.rowid = m.rowid "
                                     f"WHERE m.topic IN ({marks}) AND {_NEAR_WORLD} ORDER BY r.id",
                                     [*topics, *world]).fetchall()
            return [(i, b or "") for i, b in rows]
        from am.cache.terms import analyse

        found: dict[int, None] = {}
        for query in (text, " ".join(w for w in text.split() if not any(c.isdigit() for c in w))):
            every = analyse(query).every if query.strip() else None
            if every is not None:
                found.update(dict.fromkeys(r for (r,) in self.conn.execute(
                    "SELECT rowid FROM search WHERE search MATCH ? LIMIT 200", (every,))))
        if not found:
            return []
        shared = f" AND EXISTS (SELECT 1 FROM members m WHERE m.rowid = r.rowid AND m.topic IN ({marks}))" if topics else ""
        rows = self.conn.execute(
            f"SELECT {_NEAR_COLUMNS} FROM records r WHERE r.rowid IN (SELECT value FROM json_each(?)) AND {_NEAR_WORLD}"
            f"{shared} ORDER BY r.id", [json.dumps(list(found)), *world, *topics]).fetchall()
        return [(i, b or "") for i, b in rows]

    def facts_stating(self, text: str) -> list[tuple[PurePosixPath, Fact]]:
        """Return (path, fact) of every fact whose text is ``text`` up to whitespace, sorted by id then path."""
        flat = " ".join(text.split())
        rows = self.conn.execute("SELECT path, data FROM records INDEXED BY records_statement "
                                 "WHERE type = 'fact' AND statement = ? ORDER BY id, path", (statement_key(text),))
        return [(PurePosixPath(p), f) for p, d in rows
                if isinstance(f := record_from_json("fact", d), Fact) and " ".join(f.body.split()) == flat]

    def holding_texts(self, statuses: tuple[str, ...]) -> list[tuple[str, str, str, str, str, str, str]]:
        """Return (path, id, repo, branch, topics JSON, text, created) of every fact with one of ``statuses``, oldest
        first (a tie by id).

        What a look for pairs of similar facts across the vault reads (am/upkeep/similarpairs.py): no
        record is decoded, the text comes out of the stored JSON in SQL.
        """
        import json

        rows = self.conn.execute(
            "SELECT r.path, r.id, COALESCE(r.repo, ''), COALESCE(r.version, ''), r.topics, "
            "json_extract(r.data, '$[2]'), COALESCE(r.created, '') FROM records r WHERE r.type = 'fact' AND r.status IN "
            "(SELECT value FROM json_each(?)) ORDER BY r.created_ts, r.id, r.path", (json.dumps(list(statuses)),)).fetchall()
        return [(p, i, repo, version, topics or "[]", body or "", created)
                for p, i, repo, version, topics, body, created in rows]

    def statement_keys(self) -> set[int]:
        """Return the statement key of every fact (what an import asks before ``facts_stating``, once)."""
        return {k for (k,) in self.conn.execute("SELECT DISTINCT statement FROM records INDEXED BY records_statement "
                                               "WHERE type = 'fact'")}
