"""The day's page: what happened in a vault on one day, read from the commits' trailers.

``am today`` and ``am day DATE`` group the day's writes as a person reads a daily log
(OpenClaw's): facts written, superseded, expired or changed, proposals made, sessions
ingested, reviews decided, topics and relations, imports, syncs, and hand edits. Nothing is
stored for it: the page is Git's history of that day, so it is as right as ``am log``.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from am.errors import AmError, UsageError
from am.upkeep.audit import LogEntry, log_entries

__all__ = ["SECTIONS", "DayLog", "day_log", "parse_day"]

# (title, ops): an entry goes to the first section whose op matches (an op ending in "." is a prefix).
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("facts written", ("fact.add",)),
    ("facts superseded", ("fact.supersede",)),
    ("facts expired, confirmed or changed", ("fact.",)),
    ("proposals made", ("session.propose",)),
    ("sessions ingested", ("session.",)),
    ("reviews decided", ("review.",)),
    ("topics", ("topic.",)),
    ("relations", ("relation.",)),
    ("imports", ("import.",)),
    ("syncs and merges", ("sync.", "merge.")),
    ("hand edits", ("manual",)),
)
_OTHER = "other writes"


@dataclass(frozen=True)
class DayLog:
    """One day's writes, grouped; ``texts`` maps a record id to its first line as it reads now."""

    day: date
    start: datetime
    end: datetime
    sections: tuple[tuple[str, tuple[LogEntry, ...]], ...]
    texts: dict[str, str]

    @property
    def count(self) -> int:
        """Return how many writes the day holds."""
        return sum(len(entries) for _, entries in self.sections)

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the day."""
        return {
            "day": self.day.isoformat(), "from": self.start.isoformat(), "to": self.end.isoformat(),
            "writes": self.count,
            "sections": [{"title": title, "entries": [e.to_json() for e in entries]} for title, entries in self.sections],
            "texts": dict(sorted(self.texts.items())),
        }


def parse_day(value: str, moment: datetime) -> date:
    """Read DATE as an ISO day (2026-10-05), or as a phrase ``am log --since`` reads ('yesterday', '3 days ago',
    'last Friday', '上周五'), taken as the day it falls on where the user is."""
    word = value.strip().lower()
    if word in ("today", "今天"):
        return moment.date()
    try:
        return date.fromisoformat(word)
    except ValueError:
        pass
    from am.cache.timephrases import parse_time

    try:
        return parse_time(value, now=moment).astimezone(moment.tzinfo).date()
    except (ValueError, AmError):
        raise UsageError(f"cannot read {value!r} as a day",
                         hint="use an ISO date like 2026-10-05, or a phrase such as 'yesterday', "
                              "'3 days ago', 'last Friday' or '上周五'") from None


def _section(op: str) -> str:
    for title, ops in SECTIONS:
        if any(op == o or (o.endswith(".") and op.startswith(o)) for o in ops):
            return title
    return _OTHER


def day_log(vault: Any, day: date, tz: Any) -> DayLog:
    """Return the writes committed on ``day`` in the time zone ``tz`` (the user's), oldest first."""
    start = datetime.combine(day, time.min, tzinfo=tz)
    end = start + timedelta(days=1)
    # Walked newest first down to the day's start; later commits are passed over.
    entries = [e for e in log_entries(vault, since=start)
               if datetime.fromisoformat(e.time).timestamp() < end.timestamp()]
    entries.reverse()
    grouped: dict[str, list[LogEntry]] = {}
    for entry in entries:
        grouped.setdefault(_section(entry.op), []).append(entry)
    order = [title for title, _ in SECTIONS] + [_OTHER]
    sections = tuple((title, tuple(grouped[title])) for title in order if title in grouped)
    return DayLog(day, start, end, sections, _texts(vault, entries))


def _texts(vault: Any, entries: list[LogEntry]) -> dict[str, str]:
    """Each named record's first line as the vault holds it now (a record since removed has none)."""
    from am.records.model import Fact, Relation, Topic

    out: dict[str, str] = {}
    for record_id in {rid for e in entries for rid in e.records}:
        try:
            _, record = vault.get(record_id)
        except AmError:  # renamed, removed or unreadable since: the log still names it
            continue
        if isinstance(record, Fact):
            first = record.body.strip().split("\n", 1)[0]
            out[record_id] = f"[{record.status}] {first}"
        elif isinstance(record, Topic):
            out[record_id] = f"[{record.kind}] {record.title}"
        elif isinstance(record, Relation):
            out[record_id] = f"{record.from_} --{record.rel}--> {record.to}"
    return out
