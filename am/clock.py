"""The current moment: one place that honours $AM_NOW (tests and reproducible runs).

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

import os
from datetime import datetime, tzinfo

__all__ = ["now", "wall"]


def now() -> datetime:
    """Return the current moment with its offset, or $AM_NOW when set."""
    fixed = os.environ.get("AM_NOW")
    if fixed:
        moment = datetime.fromisoformat(fixed)
        return moment if moment.tzinfo is not None else moment.astimezone()
    return datetime.now().astimezone()


def wall(naive: datetime, tz: tzinfo | None) -> datetime:
    """A wall-clock time where the user is: in the machine's own zone, with that zone's offset on that day
    (a date in October named in December has October's daylight-saving offset); else in ``tz`` as it is."""
    if tz is not None and _is_local(tz):
        return naive.astimezone()
    return naive.replace(tzinfo=tz)


def _is_local(tz: tzinfo) -> bool:
    """Whether ``tz`` is the machine's local zone, by its offset now ($AM_NOW's moment when set): a moment
    given with another offset keeps it."""
    moment = now()
    return tz.utcoffset(None) == moment.utcoffset() == moment.astimezone().utcoffset()
