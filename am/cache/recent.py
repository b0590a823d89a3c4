"""Reading the cache for `am now`: pinned facts, the newest facts, open review items, the latest sessions.

A mixin of am/cache/index.py's ``Index``, like am/cache/query.py: SQL through ``self.conn`` only,
each query along an index (pinned and created time), reading as few rows as it can.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath
from typing import Any

from am.cache.rows import record_from_json
from am.records.model import Fact, Relation, Topic

__all__ = ["RecentQueries"]


class RecentQueries:
    """What is hot in a vault; ``Index`` supplies ``conn``."""

    conn: Any

    def relations_of(self, rel: str, status: str | None = None) -> list[tuple[PurePosixPath, Relation]]:
        """Return (path, relation) of the relations of one type (and status), sorted by id then path: the
        others are passed over along the index, never decoded (the review queue's conflicts-with pairs)."""
        sql = "SELECT path, data FROM records INDEXED BY records_relation WHERE type = 'relation' AND rel = ?"
        args: tuple[str, ...] = (rel,) if status is None else (rel, status)
        rows = self.conn.execute(sql + (" AND status = ?" if status is not None else "") + " ORDER BY id, path", args)
        return [(PurePosixPath(p), r) for p, d in rows if isinstance(r := record_from_json("relation", d), Relation)]

    def watching_facts(self, *, repo: str | None, dropped: Sequence[str]) -> list[tuple[Any, ...]]:
        """Return (id, 7 world fields, data) of the facts that watch code paths and may hold in ``repo``'s world:
        of that repo or of none, with a status other than ``dropped``; sorted by id then path."""
        cols = "id, path, status, repo, version, commit_id, until_commit, valid_from, valid_until, data"
        one = f"SELECT {cols} FROM records INDEXED BY records_watch WHERE type = 'fact' AND paths IS NOT NULL AND repo"
        marks = ",".join("?" * len(dropped))
        rows = self.conn.execute(  # two searches along records_watch (an OR of the two scanned every fact)
            f"SELECT * FROM ({one} = ? UNION ALL {one} IS NULL) WHERE COALESCE(status, 'active') NOT IN ({marks}) "
            "ORDER BY id, path", (repo, *dropped))
        return [(row[0], *row[2:]) for row in rows]

    def pinned_facts(self) -> list[Fact]:
        """Return every pinned fact, sorted by id then path."""
        return [f for (d,) in self.conn.execute(
            "SELECT data FROM records INDEXED BY records_rank WHERE type = 'fact' AND pinned = 1 ORDER BY id, path")
            if isinstance(f := record_from_json("fact", d), Fact)]

    def newest_facts(self, *, since: float | None = None, statuses: Sequence[str] | None = None,
                     chunk: int = 200) -> Iterator[Fact]:
        """Yield facts newest first (created time, then id), those created at or after ``since`` or all."""
        where = ["type = 'fact'"]
        args: list[Any] = []
        if since is not None:
            where.append("created_ts >= ?")
            args.append(since)
        if statuses is not None:
            where.append("COALESCE(status, 'active') IN (SELECT value FROM json_each(?))")
            args.append(json.dumps(list(statuses)))
        cursor = self.conn.execute(f"SELECT data FROM records INDEXED BY records_created WHERE {' AND '.join(where)} "
                                   "ORDER BY created_ts DESC, id", args)
        try:
            while rows := cursor.fetchmany(chunk):
                for (data,) in rows:
                    fact = record_from_json("fact", data)
                    assert isinstance(fact, Fact)
                    yield fact
        finally:
            cursor.close()

    def facts_with_status(self, statuses: Sequence[str]) -> list[Fact]:
        """Return the facts with one of ``statuses``, newest first."""
        return [f for (d,) in self.conn.execute(
            "SELECT data FROM records WHERE type = 'fact' AND status IN (SELECT value FROM json_each(?)) "
            "ORDER BY created_ts DESC, id", (json.dumps(list(statuses)),))
            if isinstance(f := record_from_json("fact", d), Fact)]

    def newest_topics(self, *, kind: str, limit: int) -> list[Topic]:
        """Return the newest topics of a kind (created time, then id)."""
        return [t for (d,) in self.conn.execute(
            "SELECT data FROM records WHERE type = 'topic' AND kind = ? ORDER BY created_ts DESC, id LIMIT ?",
            (kind, limit)) if isinstance(t := record_from_json("topic", d), Topic)]

    def topic_titles(self, ids: Sequence[str]) -> dict[str, str]:
        """Return {topic id: title} of these topics."""
        return dict(self.conn.execute(
            "SELECT id, title FROM records WHERE type = 'topic' AND id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(ids)),)).fetchall())
