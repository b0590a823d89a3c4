"""Use counts: how often each fact was shown, per world, in a file beside the cache that rebuilds never touch.

A fact is *used* when a command shows it to someone: a slice that includes
it, a search hit, ``am fact show``. Each command counts a fact once. Counts
live in ``.am/cache/usage.sqlite``, a file of their own: rebuilding or
repairing ``index.sqlite`` (a new schema, damage, ``am index rebuild``) leaves
them alone; deleting ``.am/cache/`` loses them, which costs only ranking (they
are never the truth, and Git holds nothing that could rebuild them).

Rows are (world, fact id, UTC day, count, last moment). A world is the key
``repo@branch`` (either part may be empty: ``@`` is vault-wide, such as a
search without ``--repo``); a world reads its own uses, its repo's
branch-less ones and the vault-wide ones (``keys_for``).

Signals (DESIGN §6, ranking): a fact with ``PROMOTE_USES`` uses in the
``PROMOTE_DAYS`` UTC days before today is *promoted*; a fact neither created
nor used in the ``DEMOTE_DAYS`` days before today is *demoted*. Today's uses
count from tomorrow on, so the same question asked twice in a day gets the same
pack (a slice's own use would otherwise reorder the next one). Nothing is ever
deleted, and pinned facts are never demoted.

Counting must never cost a reader its answer: every failure (a read-only
folder, a locked or damaged file) is logged at debug level and ignored. A file
that is not a database (or is malformed, found when it is opened or when a damaged
page is read) is set aside to ``aside/`` and counting starts afresh, so damage
costs the counts so far, not all counting to come.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

__all__ = ["CountsUses", "DB_NAME", "PROMOTE_USES", "PROMOTE_DAYS", "DEMOTE_DAYS", "UsageLog", "UseSignals", "world_key",
           "keys_for"]

log = logging.getLogger("am")

DB_NAME = "usage.sqlite"
PROMOTE_USES = 3
PROMOTE_DAYS = 7
DEMOTE_DAYS = 30
_DAY = 86400
_SCHEMA = """
CREATE TABLE IF NOT EXISTS uses(world TEXT NOT NULL, id TEXT NOT NULL, day INTEGER NOT NULL,
  n INTEGER NOT NULL, last REAL NOT NULL, PRIMARY KEY(world, id, day)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS uses_day ON uses(world, day);
"""


def world_key(repo: str | None, branch: str | None) -> str:
    """Return the key uses are counted under in a world (``repo@branch``, either part may be empty)."""
    return f"{repo or ''}@{branch or ''}"


def keys_for(repo: str | None, branch: str | None) -> tuple[str, ...]:
    """Return the keys whose uses count in a world: its own, its repo's without a branch, the vault's."""
    return tuple(dict.fromkeys((world_key(repo, branch), world_key(repo, None), "@")))


@dataclass(frozen=True)
class UseSignals:
    """What use says about ranking in one world at one moment."""

    week: dict[str, int]        # uses in the last PROMOTE_DAYS days, by fact id
    recent: frozenset[str]      # facts used in the last DEMOTE_DAYS days
    cutoff: float               # facts created before this moment (and not recent) are demoted

    @property
    def promoted(self) -> frozenset[str]:
        """Return the facts with enough uses this week to be promoted."""
        return frozenset(i for i, n in self.week.items() if n >= PROMOTE_USES)

    def tier(self, fact_id: str, created_ts: float | None, pinned: bool) -> int:
        """Return 0 (pinned or promoted), 1 (new or recently used) or 2 (demoted)."""
        if pinned or self.week.get(fact_id, 0) >= PROMOTE_USES:
            return 0
        if fact_id in self.recent or (created_ts is not None and created_ts >= self.cutoff):
            return 1
        return 2

    @staticmethod
    def none(at: datetime) -> UseSignals:
        """Return the signals of a world nobody has used yet."""
        return UseSignals({}, frozenset(), float((int(at.timestamp() // _DAY) - DEMOTE_DAYS) * _DAY))


class UsageLog:
    """The use counts of one vault (``.am/cache/usage.sqlite``)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / DB_NAME
        self._conn: sqlite3.Connection | None = None
        self._failed = False

    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        if self._conn is not None or self._failed:
            return self._conn
        # Imported here: the facade inherits CountsUses, and a command that counts nothing (a write, a sync)
        # should not pay for sqlite3 (PERF.md, start-up). The methods below run only with a connection.
        import sqlite3

        if not create and not self.path.exists():
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = self._open()
            except sqlite3.DatabaseError as err:
                if isinstance(err, sqlite3.OperationalError):  # locked, read-only: the file itself is fine
                    raise
                self._set_aside(err)
                conn = self._open()
        except (sqlite3.Error, OSError) as err:
            log.debug("use counts are not available (%s)", err)
            self._failed = True
            return None
        self._conn = conn
        return conn

    def _set_aside(self, err: Exception) -> None:
        """Move a damaged file to aside/ (the latest one kept): its counts are lost either way, and counting
        nothing from now on would stop every promotion for good."""
        log.debug("use counts were damaged (%s); set aside, counting afresh", err)
        self.close()
        (self.path.parent / "aside").mkdir(exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            if (source := self.path.with_name(DB_NAME + suffix)).exists():
                os.replace(source, self.path.parent / "aside" / source.name)

    def _damaged(self, err: Exception) -> bool:
        """Set the file aside when an error says it is damaged past its header (a page is malformed), so the
        next use starts afresh; return whether it did. Locked or read-only (OperationalError) is not damage."""
        import sqlite3

        if not isinstance(err, sqlite3.DatabaseError) or isinstance(err, sqlite3.OperationalError):
            return False
        try:
            self._set_aside(err)
        except OSError as failed:
            log.debug("use counts could not be set aside (%s)", failed)
            self._failed = True
        return True

    def _open(self) -> sqlite3.Connection:
        import sqlite3

        # Not bound to the opening thread: an MCP server's worker opens it, and the server closes it
        # from its own thread once the workers have stopped (as am/cache/index.py's connection).
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        """Close the file."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def record(self, ids: Iterable[str], *, repo: str | None, branch: str | None, at: datetime) -> None:
        """Count one use of each fact (each once) in the world, at the moment ``at``; never raises."""
        wanted = sorted(set(ids))
        if not wanted:
            return
        key, moment = world_key(repo, branch), at.timestamp()
        day = int(moment // _DAY)
        for _ in range(2):  # a file found damaged by the count is set aside, and the count made in a new one
            conn = self._connect(create=True)
            if conn is None:
                return
            import sqlite3  # loaded by _connect

            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(
                    "INSERT INTO uses(world, id, day, n, last) VALUES (?, ?, ?, 1, ?) ON CONFLICT(world, id, day) "
                    "DO UPDATE SET n = n + 1, last = max(last, excluded.last)",
                    [(key, i, day, moment) for i in wanted])
                conn.execute("COMMIT")
                return
            except sqlite3.Error as err:
                log.debug("could not count uses (%s)", err)
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                if not self._damaged(err):
                    return

    def _rows(self, sql: str, args: Sequence[object]) -> list[tuple[object, ...]]:
        conn = self._connect(create=False)
        if conn is None:
            return []
        import sqlite3  # loaded by _connect

        try:
            return conn.execute(sql, args).fetchall()
        except sqlite3.Error as err:
            log.debug("could not read use counts (%s)", err)
            self._damaged(err)  # a malformed page: the next count starts a new file
            return []

    def counts(self, *, repo: str | None, branch: str | None, days: int, at: datetime,
               today: bool = False) -> dict[str, int]:
        """Return the uses of each fact in the world over the ``days`` UTC days before ``at``'s (and it, if ``today``)."""
        keys = keys_for(repo, branch)
        day = int(at.timestamp() // _DAY)
        rows = self._rows(f"SELECT id, sum(n) FROM uses WHERE world IN ({','.join('?' * len(keys))}) "
                          "AND day >= ? AND day <= ? GROUP BY id", (*keys, day - days, day - (0 if today else 1)))
        return {str(i): int(n) for i, n in rows}  # type: ignore[call-overload]

    def signals(self, *, repo: str | None, branch: str | None, at: datetime) -> UseSignals:
        """Return the ranking signals of the world on ``at``'s UTC day (uses and age up to the day before)."""
        day = int(at.timestamp() // _DAY)
        week = self.counts(repo=repo, branch=branch, days=PROMOTE_DAYS, at=at)
        month = self.counts(repo=repo, branch=branch, days=DEMOTE_DAYS, at=at)
        return UseSignals(week, frozenset(month), float((day - DEMOTE_DAYS) * _DAY))


class CountsUses:
    """The facade's share: a vault's use counts, opened when first asked for (``Vault.close`` closes them)."""

    root: Path

    def usage(self) -> UsageLog:
        """Return the vault's use counts (.am/cache/usage.sqlite, kept across cache rebuilds)."""
        return self.__dict__.setdefault("_usage", UsageLog(self.root / ".am" / "cache"))  # type: ignore[no-any-return]

    def note_uses(self, ids: Iterable[str], *, repo: str | None = None, branch: str | None = None) -> None:
        """Count one use of each of these facts in a world (shown by a slice, a search, a show); never raises."""
        from am.clock import now

        self.usage().record(ids, repo=repo, branch=branch, at=now())
