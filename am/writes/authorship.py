"""Who a vault's commits are by: the actor (the agent or person), git's identity, and am's commit messages.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from am.errors import UsageError
from am.git.checks import clean_email, clean_name
from am.records.writes import one_line

if TYPE_CHECKING:
    from am.git import LazyStore

__all__ = ["Authorship", "actor_for_client"]

_NOT_IN_NAME = re.compile(r"[^\w .@+/-]+")
_ACTOR_CHARS = re.compile(r"[^A-Za-z0-9._@+:/-]+")
_ACTOR_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+:/-]{0,63}\Z")
# How long a looked-up git identity is used before it is looked up again (seconds).
_IDENTITY_FOR = 1.0


def actor_for_client(name: str | None) -> str | None:
    """Turn an MCP client's name into an actor am accepts (letters, digits and . _ @ + : / -)."""
    if not name:
        return None
    slug = _ACTOR_CHARS.sub("-", name.strip()).strip("-.")[:64].strip("-.")
    return slug or None


def _clean_actor(name: str) -> str:
    """Return git's user.name as an actor: one line of letters, digits, spaces and . _ @ + / - (else "am").

    A newline, a colon or angle brackets in a name would let it forge a
    trailer line of am's commit messages or break Git's signature format.
    """
    cleaned = " ".join(_NOT_IN_NAME.sub(" ", name).split())[:64].strip()
    return cleaned or "am"


class Authorship:
    """Who a vault's writes are by: the actor, the author and committer of its commits, and their messages."""

    def __init__(self, store: LazyStore, actor: str | None = None) -> None:
        self.store = store
        if actor:  # else $AM_ACTOR or Git's user.name (which needs pygit2), read when a write asks
            self.actor = self.check_actor(actor)

    @staticmethod
    def check_actor(actor: str) -> str:
        """Return ``actor`` if am accepts it as an actor, else raise UsageError."""
        if not _ACTOR_RE.match(actor):
            raise UsageError(
                f"actor {actor!r} is not allowed",
                hint="use letters, digits and . _ @ + : / - (at most 64), e.g. claude-code",
            )
        return actor

    def _default_actor(self) -> str:
        env = os.environ.get("AM_ACTOR")
        if env:
            return self.check_actor(env)
        name = os.environ.get("GIT_AUTHOR_NAME") or self._identity()[0]  # as git names an author
        self._person = bool(name)  # git's user.name: a person at the command line, not an agent's session
        return _clean_actor(name) if name else "am"
    actor = cached_property(_default_actor)
    _person = False

    def forget_actor(self) -> None:
        """Let the next write find its actor again: $AM_ACTOR, else git's user."""
        self.__dict__.pop("actor", None)

    def provenance(self) -> str:
        """A new fact's provenance when none is given: ``human`` for a person (or no actor), else ``session:ACTOR``."""
        actor = self.actor  # first: reading it finds out whether it is a person's
        return "human" if self._person or actor == "am" else f"session:{actor}"

    def _identity(self) -> tuple[str | None, str | None]:
        """Return git's user.name and user.email, looked up at most once a second.

        Each lookup is a libgit2 call that lets go of Python's lock; with
        other threads busy, getting it back took ~0.5 ms a lookup, four per write.
        """
        now = time.monotonic()
        memo: tuple[float, tuple[str | None, str | None]] | None = self.__dict__.get("_identity_memo")
        if memo is None or now - memo[0] >= _IDENTITY_FOR:
            memo = (now, (self.store.config_value("user.name"), self.store.config_value("user.email")))
            self.__dict__["_identity_memo"] = memo
        return memo[1]

    def author(self) -> tuple[str, str]:
        """Return the (name, email) of a write's author: the actor, with git's email."""
        email = os.environ.get("GIT_AUTHOR_EMAIL") or self._identity()[1]  # git's order: the environment first
        return (self.actor, clean_email(email or "") or "am@localhost")

    def committer(self) -> tuple[str, str]:
        """Return the (name, email) of a write's committer: git's identity, else the actor."""
        name = os.environ.get("GIT_COMMITTER_NAME") or self._identity()[0]
        email = os.environ.get("GIT_COMMITTER_EMAIL") or self._identity()[1]
        return (clean_name(one_line(name or "", limit=64)) or self.actor, clean_email(email or "") or "am@localhost")

    def message(self, noun: str, verb: str, ids: Sequence[str], *, subject: str | None = None,
                reason: str | None = None, summary: str | None = None) -> str:
        """Return a write's commit message: its subject, the reason, and the ``Am-*`` trailers."""
        head = subject or f"{noun}: {verb} {ids[0] if ids else ''}".rstrip()
        if summary:
            head += f" {one_line(summary, limit=72)!s}" if subject is None else ""
        lines = [one_line(head, limit=120), ""]
        if reason:
            lines.append(f"Reason: {one_line(reason)}")
        lines.append(f"Am-Op: {noun}.{verb}")
        lines += [f"Am-Record: {i}" for i in ids]
        lines.append(f"Am-Actor: {self.actor}")
        return "\n".join(lines) + "\n"
