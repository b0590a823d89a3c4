"""Group commit's queue: the writers of one process waiting to commit to one repository (used by write/transaction.py).

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import pygit2

from am.git.formats.trees import Kept
from am.git.values import Change

# (name, email) or (name, email, time, offset in minutes): what pygit2.Signature takes.
Who = tuple[str, str] | tuple[str, str, int, int]


class AfterHook(Protocol):
    """Called once a batch is in the branch: its last commit, every path it wrote, the commit it was built on,
    and the blob it committed at each path."""

    def __call__(self, commit: str, paths: Sequence[PurePosixPath], base: str | None = None, *,
                 blobs: Mapping[str, str] | None = None) -> None: ...


@dataclass(eq=False)
class Request:
    """One writer's commit waiting in (or being written by) a group commit."""

    changes: tuple[Change, ...]
    message: str
    author: Who
    committer: Who | None
    after: AfterHook | None = None
    woken: threading.Event = field(default_factory=threading.Event)
    blobs: dict[tuple[str, ...], pygit2.Oid] = field(default_factory=dict)
    previous: dict[PurePosixPath, bytes | None] = field(default_factory=dict)
    commit: str | None = None
    error: BaseException | None = None
    remote: str | None = None  # the queue id of a request from another process (am/git/coord/spool.py)
    records_only: bool = False  # a grouped write: only record files (am/git/checks.py), from this process or the queue


class Group:
    """The writers of one process waiting to commit to one repository."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: list[Request] = []
        self.leading = False
        # (stamp of .git/index, the GitIndex am wrote it from): shared by every
        # GitStore of this process, since each batch may have another leader.
        self.kept: tuple[tuple[int, int, int, int] | None, Any] | None = None
        # The folders the last chain of commits wrote, for the next one, whoever leads it.
        self.trees = Kept()
        # Whether this process has cleared what killed writers left in .git/am/ (write/guards.py).
        self.swept = False


_GROUPS: dict[str, Group] = {}
_GROUPS_LOCK = threading.Lock()
_MAX_BATCH = 64


def group_for(gitdir: Path) -> Group:
    key = os.path.realpath(gitdir)
    with _GROUPS_LOCK:
        group = _GROUPS.get(key)
        if group is None:
            group = _GROUPS[key] = Group()
        return group


def take_batch(pending: list[Request]) -> tuple[list[Request], list[Request]]:
    """Split the queue into a batch of requests on disjoint paths and the rest (which wait for the next batch)."""
    batch: list[Request] = []
    rest: list[Request] = []
    taken: set[PurePosixPath] = set()
    for r in pending:
        paths = {c.path for c in r.changes}
        if len(batch) < _MAX_BATCH and not (paths & taken):
            batch.append(r)
            taken |= paths
        else:
            rest.append(r)
    return batch, rest


def batch_tip(batch: Sequence[Request]) -> str:
    """Return the last commit a batch made."""
    return [r.commit for r in batch if r.commit is not None][-1]
