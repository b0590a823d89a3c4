"""The command line's progress bar for a long rebuild of the cache, kept where setting it imports nothing.

``progress_hook`` is set by the command line (am/cli/context.py; None: no bar) and read by
``Index`` when a command triggers a rebuild by itself. It lives in this small module, not on
``Index``, so that setting it does not import the cache (sqlite3) in a command that never reads it.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Progress", "progress_hook"]

Progress = Callable[[int, int], None]  # called with (done, total)

progress_hook: Callable[[], Progress | None] | None = None
