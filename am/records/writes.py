"""What a write returns, the one-line form of text in commit messages, and drawing a fact id again."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from am.errors import PathTakenError
from am.records.model import Record

__all__ = ["WriteResult", "one_line", "with_fresh_ids"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]+")


@dataclass(frozen=True)
class WriteResult:
    """What one write did: the commit and the records it wrote."""

    commit: str
    records: tuple[Record, ...]
    paths: tuple[PurePosixPath, ...]

    @property
    def record(self) -> Record:
        return self.records[0]


def one_line(text: str, *, limit: int = 200) -> str:
    """Collapse text to one safe line for a commit message (no control or bidi characters)."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def with_fresh_ids(attempt: Callable[[], WriteResult], *, generated: bool) -> WriteResult:
    """Run a write; if its generated fact id was drawn by another writer in the same minute, draw again.

    Generated ids carry 24 random bits per minute: hundreds of agents writing in
    one minute can draw the same one. The second writer's commit finds the file
    taken (nothing was written) and the write is tried again with a new id.
    """
    for tries_left in range(4, -1, -1):
        try:
            return attempt()
        except PathTakenError:
            if not generated or tries_left == 0:
                raise
    raise AssertionError("unreachable")
