"""Reading the cache: lookups, record lists, links and ranked full-text search.

A mixin of am/cache/index.py's ``Index`` (which owns the connection); this module
only runs SQL through ``self.conn`` and never opens a database itself.
Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from am.cache.rows import NOTE_ERROR, OWN, UNREADABLE_WHERE, Hit, IndexedLink, IndexStatus, by_id, distinct_repos, record_from_json
from am.records.model import Record
from am.cache.textseg import build_match

__all__ = ["IndexQueries", "BM25"]

_CONFIDENCE_RANK = {"high": 0, "medium": 1, "low": 2}
_WORLD = "status, repo, version, commit_id, until_commit, valid_from, valid_until"
# The same expression as in the index records_rank (am/cache/rows.py), so ORDER BY walks that index.
_CONF_RANK = ("(CASE COALESCE(conf, 'medium') WHEN 'high' THEN 0 WHEN 'medium' THEN 1 WHEN 'low' THEN 2 "
              "ELSE 3 END)")


def _rank_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Return the rank order of a ranked_facts row (..., confidence rank, created_ts, data): the index's."""
    return (row[-3], _NEVER if row[-2] is None else -row[-2], row[0])


def _world_of(alias: str) -> str:
    return ", ".join(f"{alias}.{c}" for c in _WORLD.split(", "))

_NEVER = float("inf")
# Column weights for bm25(): a title or alias hit outranks a body hit.
BM25 = "bm25(search, 8.0, 1.0, 6.0, 3.0)"
_BM25 = BM25


class IndexQueries:
    """The read side of the cache; ``Index`` supplies ``conn``, ``path`` and ``_meta``."""

    conn: Any
    path: Path
    # A level of a ranked search with more matches than this scores only this many (the first in row id
    # order: topics, then newest; docs/decisions/recall.md). Below it, every match is scored: exact BM25.
    BOUND = 500

    def _meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    def lookup(self, record_id: str) -> PurePosixPath | None:
        """Return the path of the record with this id (of two: the one named after it, else the first by path)."""
        row = self.conn.execute(f"SELECT path FROM records WHERE id = ? ORDER BY {OWN} DESC, path LIMIT 1",
                                (record_id,)).fetchone()
        return PurePosixPath(row[0]) if row else None

    def invalid_paths(self, record_id: str) -> list[PurePosixPath]:
        """Return files named after this id that do not parse as records."""
        return [PurePosixPath(p) for p in self.unparsed_paths() if p.rsplit("/", 1)[-1] == f"{record_id}.md"]

    def get(self, record_id: str) -> tuple[PurePosixPath, Record] | None:
        """Return (path, record) for an id, or None."""
        row = self.conn.execute(f"SELECT path, type, data FROM records WHERE id = ? ORDER BY {OWN} DESC, path LIMIT 1",
                                (record_id,)).fetchone()
        return (PurePosixPath(row[0]), record_from_json(row[1], row[2])) if row else None

    def records(self, *, type: str | None = None, topic: str | None = None, status: str | None = None,
                ids: Iterable[str] | None = None) -> list[tuple[PurePosixPath, Record]]:
        """Return (path, record) pairs of the working tree, sorted by id then path."""
        where, args = self._filters(type=type, topic=topic, status=status)
        if ids is not None:
            wanted = list(ids)
            where.append("r.id IN (SELECT value FROM json_each(?))")
            args.append(json.dumps(wanted))
        sql = "SELECT r.path, r.type, r.data FROM records r"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY " + by_id("r.", twins=self.has_twins())
        return [(PurePosixPath(p), record_from_json(t, d)) for p, t, d in self.conn.execute(sql, args)]

    def fact_world_rows(self, *, repo: str | None = None, dropped: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
        """Return the world fields of facts, bodies left out: every fact sorted by id then path, or ranked.

        Columns: id, status, confidence, repo, version, commit, until_commit,
        valid_from, valid_until, supersedes (JSON list, or None), superseded_by, pinned,
        created, topics (JSON list). A slice judges and ranks these and decodes
        only the facts it shows. With ``dropped`` (statuses that never hold in
        the world), only facts that can hold in ``repo``'s world come back (no
        repo or that one; another status), ranked: pinned, confidence, newest, id.
        A last column, created_ts, is the moment ``created`` names.
        """
        cols = ("id, COALESCE(status, 'active'), COALESCE(conf, 'medium'), repo, version, commit_id, until_commit, "
                "valid_from, valid_until, NULLIF(supersedes, '[]'), superseded_by, pinned, created, topics, created_ts")
        if dropped is None:
            sql = f"SELECT {cols} FROM records WHERE type = 'fact' ORDER BY {by_id(twins=self.has_twins())}"
            return self.conn.execute(sql).fetchall()  # type: ignore[no-any-return]
        marks = ",".join("?" * len(dropped))
        sql = (f"SELECT {cols} FROM records WHERE type = 'fact' AND COALESCE(status, 'active') NOT IN ({marks}) "
               "AND (repo IS NULL OR repo = ?)")
        rows: list[tuple[Any, ...]] = self.conn.execute(sql, (*dropped, repo)).fetchall()
        # Sorting here is ~3x faster than ORDER BY, whose sorter copies every column. No moment sorts last.
        rows.sort(key=lambda r: (-r[11], _CONFIDENCE_RANK.get(r[2], 3), _NEVER if r[14] is None else -r[14], r[0]))
        return rows

    def fact_world_dropped(self, *, repo: str | None, dropped: Sequence[str]) -> dict[str | None, int]:
        """Count the facts ``fact_world_rows(repo=, dropped=)`` leaves out: by status, and None for another repo."""
        marks = ",".join("?" * len(dropped))
        sql = (f"SELECT CASE WHEN COALESCE(status, 'active') IN ({marks}) THEN COALESCE(status, 'active') END, "
               f"count(*) FROM records WHERE type = 'fact' AND (COALESCE(status, 'active') IN ({marks}) "
               "OR repo IS NOT NULL AND repo IS NOT ?) GROUP BY 1")
        return dict(self.conn.execute(sql, (*dropped, *dropped, repo)).fetchall())

    def watched_facts(self, *, repo: str | None) -> list[tuple[Any, ...]]:
        """Return (id, 7 world fields, paths as a JSON list) of ``repo``'s facts that watch code paths."""
        return self.conn.execute(  # type: ignore[no-any-return]
            f"SELECT id, {_WORLD}, paths FROM records INDEXED BY records_watch "
            "WHERE type = 'fact' AND paths IS NOT NULL AND repo = ?", (repo,)).fetchall()

    def repo_names(self) -> list[str]:
        """Return every code-repo name a record names."""
        return distinct_repos(self.conn)

    def dirty_paths(self) -> list[str]:
        """Return the record files whose working tree differs from HEAD's."""
        return list(json.loads(self._meta().get("dirty") or "[]"))

    def unreadable_paths(self) -> list[str]:
        """Return the record files that do not parse, committed or not (a conflict, a YAML slip), by path."""
        return [p for (p,) in self.conn.execute(f"SELECT path FROM files WHERE {UNREADABLE_WHERE} ORDER BY path")]

    def has_duplicate_facts(self) -> bool:
        """Return whether two fact files share an id (then rows.by_id decides which wins; ranking must not change it)."""
        return self.conn.execute("SELECT 1 FROM twins WHERE type = 'fact' LIMIT 1").fetchone() is not None

    def has_twins(self) -> bool:
        """Return whether two record files of one type share an id (the triggers of the schema keep the list)."""
        return self.conn.execute("SELECT 1 FROM twins LIMIT 1").fetchone() is not None

    # ------------------------------------------------------------ a slice's world, in pieces (am/packs/cache.py)
    # World fields, in the order am.packs.cache reads them: status, repo, version, commit, until_commit, valid time.
    # INDEXED BY names the covering index each query was written for, and CROSS JOIN fixes the join order
    # (the planner, without statistics, would pick a narrower index or the wrong side and read every row).

    def fact_world_groups(self) -> list[tuple[Any, ...]]:
        """Return every distinct combination of the facts' world fields (7 columns) and how many facts have it."""
        return self.conn.execute(  # type: ignore[no-any-return]
            f"SELECT {_WORLD}, count(*) FROM records INDEXED BY records_world WHERE type = 'fact' "
            f"GROUP BY {_WORLD}").fetchall()

    def ranked_facts(self, *, repo: str | None, dropped: Sequence[str], chunk: int = 128, topics: bool = False,
                     tiers: tuple[Collection[str], Collection[str], float] | None = None) -> Iterator[tuple[Any, ...]]:
        """Yield (id, 7 world fields, data) of the facts that may hold in ``repo``'s world, best ranked first.

        Rank: pinned, confidence (high, medium, low, other), newest ``created``
        (none last), id. ``dropped`` are statuses that never hold there. With
        ``topics``, the topics (JSON list) come before ``data``. With ``tiers``
        (promoted ids, recently used ids, cutoff moment: am/cache/usage.py), after
        the pinned come the promoted, then facts created since the cutoff or
        recently used, then the rest (demoted), each in the same rank order.
        """
        marks = ",".join("?" * len(dropped))
        head = (f"SELECT id, {_WORLD}, {'topics, ' if topics else ''}{_CONF_RANK}, created_ts, data "
                f"FROM records INDEXED BY records_rank WHERE type = 'fact' "
                f"AND COALESCE(status, 'active') NOT IN ({marks}) AND (repo IS NULL OR repo = ?)")
        order = f" ORDER BY pinned DESC, {_CONF_RANK}, created_ts DESC, id"
        args: tuple[Any, ...] = (*dropped, repo)
        if tiers is None:
            yield from self._chunks(head + order, args, chunk)
            return
        promoted, recent, cutoff = set(tiers[0]), set(tiers[1]), tiers[2]

        def by_ids(ids: set[str], extra: str, more: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
            rows = self.conn.execute(head.replace("records_rank", "records_id") + " AND pinned = 0 AND id IN (SELECT value FROM json_each(?))" + extra,
                                     (*args, json.dumps(sorted(ids)), *more)).fetchall()  # by id: a seek each, no scan
            return sorted(rows, key=_rank_key)

        streams: list[Iterable[tuple[Any, ...]]] = [
            self._chunks(head + " AND pinned = 1" + order, args, chunk),
            by_ids(promoted, ""),
            heapq.merge((r for r in self._chunks(head + " AND pinned = 0 AND created_ts >= ?" + order,
                                                 (*args, cutoff), chunk) if r[0] not in promoted),
                        by_ids(recent - promoted, " AND (created_ts < ? OR created_ts IS NULL)", (cutoff,)),
                        key=_rank_key),
            (r for r in self._chunks(head + " AND pinned = 0 AND (created_ts < ? OR created_ts IS NULL)" + order,
                                     (*args, cutoff), chunk) if r[0] not in promoted and r[0] not in recent),
        ]
        for stream in streams:
            for row in stream:
                yield (*row[:-3], row[-1])

    def _chunks(self, sql: str, args: Sequence[Any], chunk: int) -> Iterator[tuple[Any, ...]]:
        """Yield a statement's rows, fetched in growing chunks; a reader that stops early ends it."""
        cursor = self.conn.execute(sql, args)
        try:
            while True:
                rows = cursor.fetchmany(chunk)
                if not rows:
                    return
                yield from rows
                chunk = min(chunk * 2, 4096)
        finally:
            cursor.close()  # a reader that stops early (the budget is full) ends the statement now

    def supersession_edges(self, *, repo: str | None, dropped: Sequence[str],
                           believed: Sequence[str]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """Return the edges 'new supersedes old' whose two ends may hold in ``repo``'s world, the new one believed.

        Two lists of (new id, 7 world fields, old id, 7 world fields): from the
        new facts' ``supersedes`` (by new id, then list order), and from the old
        facts' ``superseded_by`` (by old id).
        """
        drop, keep = ",".join("?" * len(dropped)), ",".join("?" * len(believed))
        new_w, old_w = _world_of("n"), _world_of("o")
        by_list = self.conn.execute(
            f"SELECT n.id, {new_w}, o.id, {old_w} FROM records n INDEXED BY records_supersedes, json_each(n.supersedes) j "
            "CROSS JOIN records o INDEXED BY records_fact ON o.type = 'fact' AND o.id = j.value "
            f"WHERE n.type = 'fact' AND n.supersedes != '[]' AND COALESCE(n.status, 'active') IN ({keep}) "
            f"AND (n.repo IS NULL OR n.repo = ?) AND COALESCE(o.status, 'active') NOT IN ({drop}) "
            "AND (o.repo IS NULL OR o.repo = ?) AND o.id != n.id ORDER BY n.id, j.key",
            (*believed, repo, *dropped, repo)).fetchall()
        by_link = self.conn.execute(
            f"SELECT n.id, {new_w}, o.id, {old_w} FROM records o INDEXED BY records_successor "
            "CROSS JOIN records n INDEXED BY records_fact ON n.type = 'fact' AND n.id = o.superseded_by "
            f"WHERE o.type = 'fact' AND o.superseded_by IS NOT NULL AND COALESCE(o.status, 'active') NOT IN ({drop}) "
            f"AND (o.repo IS NULL OR o.repo = ?) AND COALESCE(n.status, 'active') IN ({keep}) "
            "AND (n.repo IS NULL OR n.repo = ?) AND n.id != o.id ORDER BY o.id",
            (*dropped, repo, *believed, repo)).fetchall()
        return by_list, by_link

    def fact_rows_about(self, ids: Sequence[str], *, members: bool = True) -> list[tuple[Any, ...]]:
        """Return (id, 7 world fields, pinned, conf, created_ts, topics) of the facts with one of ``ids``
        or (``members``) about one of them, each once, in no particular order."""
        cols = f"r.id, {_world_of('r')}, r.pinned, r.conf, r.created_ts, r.topics"
        wanted = json.dumps(list(ids))
        rows: list[tuple[Any, ...]] = self.conn.execute(
            f"SELECT {cols} FROM records r INDEXED BY records_fact WHERE r.type = 'fact' "
            "AND r.id IN (SELECT value FROM json_each(?))", (wanted,)).fetchall()
        if members:
            rows += self.conn.execute(
                f"SELECT {cols} FROM members m CROSS JOIN records r ON r.rowid = m.rowid "
                "WHERE m.topic IN (SELECT value FROM json_each(?)) AND r.type = 'fact'", (wanted,)).fetchall()
        return list({row[0]: row for row in rows}.values())

    def topic_values(self, *, statuses: Sequence[str]) -> list[Record]:
        """Return the topics with one of ``statuses`` (no status: active), sorted by id then path."""
        marks = ",".join("?" * len(statuses))
        return [record_from_json("topic", d) for (d,) in self.conn.execute(
            f"SELECT data FROM records INDEXED BY records_topic WHERE type = 'topic' "
            f"AND COALESCE(status, 'active') IN ({marks}) ORDER BY id, path", tuple(statuses))]

    def relation_world_rows(self) -> list[tuple[Any, ...]]:
        """Return (id, rel, from, to, 7 world fields) of every relation, sorted by id then path."""
        return self.conn.execute(  # type: ignore[no-any-return]
            f"SELECT id, rel, src, dst, {_WORLD} FROM records INDEXED BY records_relation "
            f"WHERE type = 'relation' ORDER BY {by_id(twins=self.has_twins())}").fetchall()

    def record_values(self, *, type: str | None = None) -> list[Record]:
        """Return every record of the working tree (or of one type), sorted by id then path."""
        sql = "SELECT type, data FROM records" + (" WHERE type = ?" if type else "") + " ORDER BY " + by_id(twins=self.has_twins())
        return [record_from_json(t, d) for t, d in self.conn.execute(sql, (type,) if type else ())]

    @staticmethod
    def _filters(*, type: str | None = None, topic: str | None = None, status: str | None = None,
                 statuses: Sequence[str] | None = None, repo: str | None = None,
                 types: Sequence[str] | None = None, since: datetime | None = None,
                 until: datetime | None = None) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        args: list[Any] = []
        if type is not None:
            where.append("r.type = ?")
            args.append(type)
        if types:
            where.append(f"r.type IN ({','.join('?' * len(types))})")
            args += list(types)
        if topic is not None:
            where.append("r.rowid IN (SELECT rowid FROM members WHERE topic = ?)")
            args.append(topic)
        if status is not None:
            where.append("r.status = ?")
            args.append(status)
        if statuses is not None:
            where.append(f"r.status IN ({','.join('?' * len(statuses))})")
            args += list(statuses)
        if repo is not None:
            # A record without a repo holds in every repo's world (DESIGN §5).
            where.append("(r.repo = ? OR r.repo IS NULL)")
            args.append(repo)
        if since is not None:
            where.append("r.created_ts >= ?")
            args.append(since.timestamp())
        if until is not None:
            where.append("r.created_ts < ?")
            args.append(until.timestamp())
        return where, args

    def id_paths(self) -> dict[str, str]:
        """Return {id: path} of every record (of two files with one id: the one named after it, else the first by path)."""
        return {i: p for i, p in self.conn.execute(f"SELECT id, path FROM records ORDER BY {OWN}, path DESC")}

    def unparsed_paths(self) -> list[str]:
        """Return the files that are not records (notes, or broken records), sorted."""
        return [p for (p,) in self.conn.execute("SELECT path FROM files WHERE error IS NOT NULL ORDER BY path")]

    def resolve_name_key(self, key: str) -> str | None:
        """Return the id a name key names (file name, id, title, alias; first by path), or None."""
        row = self.conn.execute("SELECT id FROM names WHERE key = ? ORDER BY rank, path LIMIT 1", (key,)).fetchone()
        return row[0] if row else None

    def foreign_names(self) -> list[tuple[str, str]]:
        """Return (key, id) of the names with a character outside ASCII (am/records/lookalikes.py), by key."""
        return list(self.conn.execute("SELECT key, id FROM names WHERE length(CAST(key AS BLOB)) > length(key)"))

    def name_ref_records(self) -> list[tuple[PurePosixPath, Record]]:
        """Return the records whose link-valued keys name records by a name ("[[Li Wei]]"), sorted by path."""
        sql = "SELECT r.path, r.type, r.data FROM namerefs n CROSS JOIN records r ON r.path = n.path ORDER BY r.path"
        return [(PurePosixPath(p), record_from_json(t, d)) for p, t, d in self.conn.execute(sql)]

    def links(self, *, source: str | None = None, target: str | None = None,
              dangling: bool | None = None) -> list[IndexedLink]:
        """Return body wikilinks, sorted by source then target; cross-vault links never dangle here."""
        sql = ("SELECT r.id, r.path, l.target, l.vault, "
               "l.vault = '' AND NOT EXISTS (SELECT 1 FROM records t WHERE t.id = l.target) "
               "FROM links l JOIN records r ON r.rowid = l.rowid")
        where, args = [], []
        if source is not None:
            where.append("r.id = ?")
            args.append(source)
        if target is not None:
            where.append("l.target = ?")
            args.append(target)
        if where:
            sql += " WHERE " + " AND ".join(where)
        out = [IndexedLink(s, PurePosixPath(p), t, v or None, bool(d))
               for s, p, t, v, d in self.conn.execute(sql + " ORDER BY r.id, r.path, l.target, l.vault", args)]
        return out if dangling is None else [link for link in out if link.dangling == dangling]

    def link_pairs(self) -> list[tuple[str, str]]:
        """Return (source id, target id) of every same-vault wikilink, in the order of ``links()``."""
        return self.conn.execute(  # type: ignore[no-any-return]
            "SELECT r.id, l.target FROM links l JOIN records r ON r.rowid = l.rowid WHERE l.vault = '' "
            "ORDER BY r.id, r.path, l.target").fetchall()

    # ------------------------------------------------------------ a slice's --topic neighbourhood (am/packs/cache.py)
    # A fact's world fields as one value, json_array(...): the keys of the groups that hold are passed back in.

    def link_rows(self, ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """Return (source id, target id, source type, 7 world fields, topics) of the same-vault wikilinks of
        every topic and relation, and of the facts with one of ``ids``."""
        return self.conn.execute(  # type: ignore[no-any-return]
            f"SELECT r.id, l.target, r.type, {_world_of('r')}, r.topics FROM records r CROSS JOIN links l "
            "ON l.rowid = r.rowid WHERE l.vault = '' AND r.rowid IN ("
            "SELECT rowid FROM records INDEXED BY records_topic WHERE type = 'topic' UNION ALL "
            "SELECT rowid FROM records INDEXED BY records_relation WHERE type = 'relation' UNION ALL "
            "SELECT rowid FROM records INDEXED BY records_fact WHERE type = 'fact' "
            "AND id IN (SELECT value FROM json_each(?)))", (json.dumps(list(ids)),)).fetchall()

    def link_ends(self) -> tuple[list[str], list[str]]:
        """Return the distinct same-vault link targets and the distinct topics records are about."""
        targets = [t for (t,) in self.conn.execute("SELECT DISTINCT target FROM links INDEXED BY links_target")]
        members = [t for (t,) in self.conn.execute("SELECT DISTINCT topic FROM members")]
        return targets, members

    def fact_links_touching(self, ids: Sequence[str], *, as_target: bool = True,
                            as_topic: bool = True) -> list[tuple[Any, ...]]:
        """Return (topic, target, fact id, 7 world fields) of the same-vault links of facts, one row per topic
        of the fact, where the target (``as_target``) or the topic (``as_topic``) is one of ``ids``."""
        cols = f"m.topic, l.target, r.id, {_world_of('r')}"
        wanted = json.dumps(list(ids))
        rows: list[tuple[Any, ...]] = []
        if as_target:
            rows += self.conn.execute(
                f"SELECT {cols} FROM links l INDEXED BY links_target CROSS JOIN records r ON r.rowid = l.rowid "
                "CROSS JOIN members m ON m.rowid = l.rowid WHERE l.target IN (SELECT value FROM json_each(?)) "
                "AND l.vault = '' AND r.type = 'fact'", (wanted,)).fetchall()
        if as_topic:
            rows += self.conn.execute(
                f"SELECT {cols} FROM members m CROSS JOIN records r ON r.rowid = m.rowid "
                "CROSS JOIN links l ON l.rowid = m.rowid WHERE m.topic IN (SELECT value FROM json_each(?)) "
                "AND l.vault = '' AND r.type = 'fact'", (wanted,)).fetchall()
        return rows

    def fact_world_counts_about(self, topics: Sequence[str]) -> list[tuple[Any, ...]]:
        """Return (7 world fields, count) of the facts about one of ``topics``, by distinct world fields."""
        return self.conn.execute(  # type: ignore[no-any-return]
            f"SELECT {_WORLD}, count(*) FROM records INDEXED BY records_world WHERE type = 'fact' AND rowid IN "
            "(SELECT rowid FROM members WHERE topic IN (SELECT value FROM json_each(?))) "
            f"GROUP BY {_WORLD}", (json.dumps(list(topics)),)).fetchall()

    def search(self, match: str, *, limit: int = 20, since: datetime | None = None, until: datetime | None = None,
               statuses: Sequence[str] | None = None, topic: str | None = None, repo: str | None = None,
               types: Sequence[str] | None = None, mode: str = "ranked", sort: str = "rank") -> list[Hit]:
        """Return records matching a user's text, best first.

        ``mode="ranked"`` (am/cache/terms.py): stems without stop words; records with the
        terms as a phrase first, then with every term, then with some, by how many they
        match, each level by BM25. ``mode="and"``: every word must occur (the search before
        ranking, kept as the benchmark's baseline). ``sort="time"``: the same records, newest
        first. Ties are broken by id, so the answer depends only on the files. With no
        terms, return the newest records that pass the filters.
        """
        from am.cache.terms import analyse

        where, args = self._filters(topic=topic, statuses=statuses, repo=repo, types=types,
                                    since=since, until=until)
        cols = "r.id, r.path, r.type, r.status, r.created"
        terms = analyse(match) if match.strip() else None
        if mode == "and":
            expression = build_match(match) if match.strip() else None
            levels = [] if expression is None else [expression]
        else:
            assert terms is not None or not match.strip()
            levels = [] if terms is None or terms.every is None else [
                e for e in dict.fromkeys((terms.phrase, terms.every, terms.any)) if e is not None]
        if not levels:
            sql = f"SELECT {cols}, 0.0 FROM records r"
            if where:
                sql += " WHERE " + " AND ".join(where)
            sql += " ORDER BY r.created_ts DESC, r.id LIMIT ?"
            rows = self.conn.execute(sql, [*args, limit]).fetchall()  # listed, not matched (nor by id): 0 of 0
            return [Hit(i, PurePosixPath(p), t, s, c, float(rank), 0, 0, 1) for i, p, t, s, c, rank in rows]
        if sort == "time":
            return self._newest(levels, cols, where, args, limit, terms)
        hits: list[Hit] = []
        seen: set[str] = set()
        size = terms.size if terms is not None and mode != "and" else 0
        for tier, expression in enumerate(levels):
            want = limit - len(hits)
            if want <= 0:
                break
            last = tier == len(levels) - 1 and tier > 0
            # The last level (some terms) is re-ranked by how many terms each match has: rank a wider cut.
            found = self._top(expression, cols, where, args, (want + len(seen)) * (4 if last else 1) + 50 * last)
            found = [row for row in found if str(row[1]) not in seen]
            counts = self._matched(terms, [row[-1] for row in found]) if last and terms is not None else {}
            if last:
                found.sort(key=lambda row: (-counts.get(row[-1], 0), row[-2], row[0]))
            level = 2 if last else 0 if tier == 0 and terms is not None and terms.phrase else 1
            for i, p, t, s, c, rank, rowid in found[:want]:
                seen.add(p)
                matched = counts.get(rowid, 0) if last else size
                hits.append(Hit(i, PurePosixPath(p), t, s, c, float(rank), matched, size, level))
        return hits

    def _top(self, expression: str, cols: str, where: list[str], args: list[Any], limit: int) -> list[tuple[Any, ...]]:
        """Return the best ``limit`` matches of one expression that pass the filters, as (cols..., rank, rowid).

        Best is BM25, then id (then path, for two files with one id), so the answer depends
        only on the files. The matches scored are those of ``_scored``: every one, or in a
        level with more than ``BOUND``, the first ``BOUND`` in row id order (topics, then
        newest). They are sorted once; Python reads that order only as far as it decides the answer:
        chunk by chunk (each to the end of its last score's ties), each chunk's records filtered in
        SQL, until ``limit`` hits are kept and the next match ranks strictly worse than the last kept.
        Filters that leave fewer than ``limit`` of a bounded set widen it (eight times, then every match).
        """
        sql = (f"SELECT {cols}, r.rowid FROM records r WHERE r.rowid IN (SELECT value FROM json_each(?))"
               + "".join(f" AND {w}" for w in where))
        bound = max(self.BOUND, limit)
        while True:
            scored, complete = self._scored(expression, bound)
            ranks = dict(scored)
            found: list[tuple[Any, ...]] = []
            read, step = 0, limit * 2 + 10
            while read < len(scored):
                end = min(len(scored), read + step)
                while end < len(scored) and scored[end][1] == scored[end - 1][1]:
                    end += 1  # a chunk takes its last score's ties: the loop stops only before a worse score
                chunk, read = scored[read:end], end
                found += self.conn.execute(sql, [json.dumps([rowid for rowid, _ in chunk]), *args]).fetchall()
                found.sort(key=lambda row: (ranks[row[-1]], row[0], row[1]))
                if len(found) >= limit and read < len(scored) and scored[read][1] > ranks[found[limit - 1][-1]]:
                    break  # what follows ranks worse than the last hit kept: no tie left unseen
                step *= 2
            if complete or len(found) >= limit:
                break
            bound = -1 if bound * 8 >= self.BOUND * 64 else bound * 8
        return [(*row[:-1], ranks[row[-1]], row[-1]) for row in found[:limit]]

    def _scored(self, expression: str, bound: int) -> tuple[list[tuple[int, float]], bool]:
        """Return (rowid, BM25) of an expression's matches to rank, best first, and whether that is every match.

        Every match when there are at most ``bound`` (or ``bound`` is -1); else the first
        ``bound`` in row id order, which is a static rank (am/cache/rows.py ``rank_rowid``:
        topics, then newest). FTS5 stops reading there: bm25() costs ~1-2 µs a match, and
        scoring each of the ~6,700 matches of a common phrase at 100k facts costs more than
        the whole search may (issue 16).
        """
        rows: list[tuple[int, float]] = self.conn.execute(
            f"SELECT rowid, {_BM25} FROM search WHERE search MATCH ? LIMIT ?",
            (expression, -1 if bound < 0 else bound + 1)).fetchall()
        complete = bound < 0 or len(rows) <= bound
        if not complete:
            del rows[bound:]
        rows.sort(key=lambda row: row[1])
        return rows, complete

    def search_notes(self, match: str, *, limit: int = 20) -> list[tuple[str, str, float, int]]:
        """Return notes matching a user's text as (path, text, BM25 rank, tier), best first.

        The tiers of ``search``: 0 the terms as a phrase, 1 every term, 2 some of them.
        Notes are never records: they have no id, status, topic or time to filter by.
        """
        from am.cache.terms import analyse

        terms = analyse(match) if match.strip() else None
        if terms is None or terms.every is None:
            return []
        levels = [e for e in dict.fromkeys((terms.phrase, terms.every, terms.any)) if e is not None]
        found: dict[str, tuple[str, str, float, int]] = {}
        for expression in levels:
            tier = 0 if expression == terms.phrase else 1 if expression == terms.every else 2
            for path, raw, rank in self.conn.execute(
                    f"SELECT path, raw, {_BM25.replace('search', 'notes')} AS rank FROM notes WHERE notes MATCH ? "
                    "ORDER BY rank, path LIMIT ?", (expression, limit)):
                found.setdefault(path, (path, raw, float(rank), tier))
            if len(found) >= limit:
                break
        return list(found.values())[:limit]

    def _matched(self, terms: Any, rowids: Sequence[int]) -> dict[int, int]:
        """Return how many of the query's terms each of these records holds.

        Each term's matches are read between the lowest and highest of the row ids (a range
        FTS5 seeks to; ``rowid IN (...)`` made it run the term once per id, ~10 ms a term at
        100k facts) and counted for the ids asked about.
        """
        counts: dict[int, int] = {}
        wanted = set(rowids)
        if not wanted:
            return counts
        low, high = min(wanted), max(wanted)
        for unit in terms.units:
            for (rowid,) in self.conn.execute(
                    "SELECT rowid FROM search WHERE search MATCH ? AND rowid >= ? AND rowid <= ?",
                    (unit.match, low, high)):
                if rowid in wanted:
                    counts[rowid] = counts.get(rowid, 0) + 1
        return counts

    def _newest(self, levels: list[str], cols: str, where: list[str], args: list[Any], limit: int,
                terms: Any) -> list[Hit]:
        """Return the records matching every term (else some), newest first."""
        size = terms.size if terms is not None else 0
        for tier, expression in enumerate(levels[-2:] if len(levels) > 1 else levels):
            sql = (f"SELECT {cols}, r.rowid FROM records r WHERE r.rowid IN "
                   "(SELECT rowid FROM search WHERE search MATCH ?)" + "".join(f" AND {w}" for w in where)
                   + " ORDER BY r.created_ts IS NULL, r.created_ts DESC, r.id LIMIT ?")
            rows = self.conn.execute(sql, [expression, *args, limit]).fetchall()
            if rows:
                some = tier == 1
                counts = self._matched(terms, [r[-1] for r in rows]) if some and terms is not None else {}
                return [Hit(i, PurePosixPath(p), t, s, c, 0.0, counts.get(rowid, 0) if some else size, size,
                            2 if some else 1) for i, p, t, s, c, rowid in rows]
        return []

    def ids_with_prefix(self, prefix: str, *, limit: int = 20, since: datetime | None = None,
                        until: datetime | None = None, statuses: Sequence[str] | None = None,
                        topic: str | None = None, repo: str | None = None,
                        types: Sequence[str] | None = None) -> list[Hit]:
        """Return records whose id starts with ``prefix`` and pass the filters, sorted by id."""
        where, args = self._filters(topic=topic, statuses=statuses, repo=repo, types=types, since=since, until=until)
        sql = ("SELECT r.id, r.path, r.type, r.status, r.created FROM records r WHERE r.id >= ? AND r.id < ?"
               + "".join(f" AND {w}" for w in where) + " ORDER BY r.id, r.path LIMIT ?")
        rows = self.conn.execute(sql, [prefix, prefix + "\U0010ffff", *args, limit]).fetchall()
        return [Hit(i, PurePosixPath(p), t, s, c, 0.0) for i, p, t, s, c in rows]

    def status(self) -> IndexStatus:
        """Return counts and problems of the cache."""
        meta = self._meta()
        counts = dict(self.conn.execute("SELECT type, count(*) FROM records GROUP BY type").fetchall())
        invalid = self.conn.execute(f"SELECT path, error FROM files WHERE {UNREADABLE_WHERE} ORDER BY path").fetchall()
        dup = [i for (i,) in self.conn.execute("SELECT id FROM records GROUP BY id HAVING count(*) > 1 ORDER BY id")]
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return IndexStatus(
            path=self.path, schema=int(meta.get("schema", 0)), head=meta.get("head") or None, counts=counts,
            files=self.conn.execute("SELECT count(*) FROM files").fetchone()[0],
            invalid=[(p, e) for p, e in invalid], dirty=json.loads(meta.get("dirty") or "[]"),
            duplicates=dup, bytes=size, swept_at=float(meta.get("swept_at") or 0),
            notes=self.conn.execute("SELECT count(*) FROM files WHERE error = ?", (NOTE_ERROR,)).fetchone()[0],
        )

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Return the cache's content without bookkeeping (stat data, row ids), for comparisons."""
        return {
            "files": self.conn.execute("SELECT path, blob, error FROM files ORDER BY path").fetchall(),
            "records": self.conn.execute(
                "SELECT path, id, type, status, kind, title, rel, src, dst, repo, version, created, created_ts, "
                "pinned, data FROM records ORDER BY path").fetchall(),
            "members": self.conn.execute(
                "SELECT r.path, m.topic FROM members m JOIN records r USING(rowid) ORDER BY 1, 2").fetchall(),
            "links": [(str(link.path), link.target, link.vault, link.dangling) for link in self.links()],
            "search": self.conn.execute(
                "SELECT r.path, s.title, s.body, s.aliases, s.tags FROM search s JOIN records r "
                "ON r.rowid = s.rowid ORDER BY 1").fetchall(),
            "dirty": [(p,) for p in json.loads(self._meta().get("dirty") or "[]")],
        }
