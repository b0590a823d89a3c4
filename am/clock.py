"""The current moment: one place that honours $AM_NOW (tests and reproducible runs)."""

from __future__ import annotations

import os
from datetime import datetime

__all__ = ["now"]


def now() -> datetime:
    """Return the current moment with its offset, or $AM_NOW when set."""
    fixed = os.environ.get("AM_NOW")
    if fixed:
        moment = datetime.fromisoformat(fixed)
        return moment if moment.tzinfo is not None else moment.astimezone()
    return datetime.now().astimezone()
