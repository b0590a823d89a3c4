"""A progress bar on a terminal for long work (a first index of a large vault), and nothing on a pipe.

Shown on standard error only when it is a terminal, and only once the work has
taken ``DELAY`` seconds (a rebuild of a small vault is over before a bar
would help). The line says how many of how many, the rate, and the time left::

    indexing  ████████░░░░░░░░░░░░  8,000/20,000 files  3,120/s  4 s left

It is redrawn at most ten times a second, in place (a carriage return), and
cleared when the work is done, so the command's own output starts on a clean
line. On a pipe or a file it writes nothing at all: a script's standard error
holds only messages meant for it.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["DELAY", "ProgressBar", "progress_bar"]

DELAY = 1.0  # seconds of work before a bar appears
_WIDTH = 20
_REDRAW = 0.1


def _count(n: int) -> str:
    return f"{n:,}"


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds:02d} s"


class ProgressBar:
    """The bar for one piece of work: call it with (done, total) as the work goes."""

    def __init__(self, label: str, *, stream: TextIO | None = None, delay: float | None = None,
                 unit: str = "files") -> None:
        self.label = label
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.delay = DELAY if delay is None else delay
        self.began = time.monotonic()
        self.shown = False
        self.drawn_at = 0.0
        self.width = 0
        try:
            self.enabled = self.stream.isatty()
        except (AttributeError, ValueError):
            self.enabled = False

    def line(self, done: int, total: int, now: float) -> str:
        """Return the bar's text for this moment."""
        elapsed = max(now - self.began, 1e-6)
        rate = done / elapsed
        filled = _WIDTH * done // total if total else _WIDTH
        bar = "█" * filled + "░" * (_WIDTH - filled)
        left = (total - done) / rate if rate > 0 else None
        eta = f"{_duration(left)} left" if left is not None else "estimating"
        return (f"{self.label}  {bar}  {_count(done)}/{_count(total)} {self.unit}  "
                f"{_count(int(rate))}/s  {eta}")

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done >= total:
            self.finish()
            return
        if not self.shown and now - self.began < self.delay:
            return
        if self.shown and now - self.drawn_at < _REDRAW:
            return
        text = self.line(done, total, now)
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        columns = columns if columns > 20 else 100  # a terminal that does not say its width (0)
        text = text[: max(columns - 1, 10)]
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)
        self.shown = True
        self.drawn_at = now

    def finish(self) -> None:
        """Clear the bar's line, if one was drawn."""
        if self.shown:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.shown = False


def progress_bar(label: str = "indexing") -> Callable[[int, int], None]:
    """Return a callback for (done, total) that draws a bar on a terminal's standard error."""
    return ProgressBar(label)
