"""The statement lock a fact add holds (am/git/locking.py, ``key_lock``) gives up only when nobody gets anywhere.

Its holder may wait its turn for the write lock behind many writers; an add of another statement
that shares its lock (one of 256) waited at most 30 s in all and failed with a LockTimeoutError,
which 32 writers on a loaded machine hit (tests/test_concurrency.py's stress run).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from am.errors import LockTimeoutError
from am.vault import Vault


def _hold(root: Path, key: int, *, seconds: float, write: bool, held: threading.Event) -> None:
    """Hold the lock of ``key`` for ``seconds``; meanwhile commit a topic every 0.1 s if ``write``."""
    with Vault.open(root, actor="holder") as other:
        with other.store.key_lock(key):
            held.set()
            end = time.monotonic() + seconds
            n = 0
            while time.monotonic() < end:
                if write:  # the branch moves: writers are getting through (a topic: no statement lock of its own)
                    other.add_topic(title=f"Holder topic {n}", kind="concept", id=f"concept-holder-{n}")
                    n += 1
                time.sleep(0.1)


def _holder(root: Path, key: int, *, seconds: float, write: bool) -> threading.Thread:
    held = threading.Event()
    thread = threading.Thread(target=_hold, args=(root, key), kwargs={"seconds": seconds, "write": write, "held": held})
    thread.start()
    assert held.wait(30)
    return thread


def test_a_wait_on_a_statement_lock_goes_on_while_writes_get_through(alpha: Vault) -> None:
    holder = _holder(alpha.root, 7, seconds=2.0, write=True)
    try:
        began = time.monotonic()
        with alpha.store.key_lock(7 + 256, timeout=0.5):  # another statement, the same one of 256 locks
            waited = time.monotonic() - began
    finally:
        holder.join()
    assert waited > 0.5  # it outlasted its timeout, because the holder's writes kept landing


def test_a_wait_on_a_statement_lock_gives_up_when_nothing_moves(alpha: Vault) -> None:
    holder = _holder(alpha.root, 9, seconds=2.0, write=False)
    try:
        with pytest.raises(LockTimeoutError, match="no write got through for 0.5 s"):
            with alpha.store.key_lock(9, timeout=0.5):
                pass
    finally:
        holder.join()
