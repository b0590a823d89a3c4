"""The filters people reach for on facts: tag, confidence, pinned, provenance, session and actor.

One definition for `am fact list` and `am search` (issue 35.5). A filter keeps a fact when
every given condition holds: ``tags`` (each named tag is on it), ``confidence`` (one of the
levels given), ``pinned``, ``provenance`` (equal, or a prefix ending in ``:``, e.g.
``session:``), ``session`` (its provenance is ``session:ID``: proposed from, or written in,
that session), ``actor`` (the actor of the oldest commit that names it, read from the
commits' trailers as ``am log`` reads them, so it is asked only when given).

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["FactFilter"]


@dataclass(frozen=True)
class FactFilter:
    """What a fact must be to be kept; empty: every fact."""

    tags: tuple[str, ...] = ()
    confidence: tuple[str, ...] = ()
    pinned: bool | None = None
    provenance: str | None = None
    session: str | None = None
    actor: str | None = None

    def __bool__(self) -> bool:
        return bool(self.tags or self.confidence or self.pinned is not None or self.provenance or self.session
                    or self.actor)

    def describe(self) -> str:
        """Say the filter as its options read, for a 'no facts match' line."""
        parts = [f"--tag {t}" for t in self.tags] + [f"--confidence {c}" for c in self.confidence]
        if self.pinned is not None:
            parts.append("--pinned" if self.pinned else "--not-pinned")
        parts += [f"--{k} {v}" for k, v in (("provenance", self.provenance), ("session", self.session),
                                            ("actor", self.actor)) if v]
        return " ".join(parts)

    def keeps(self, fact: Any, writers: Callable[[], dict[str, str]] | None = None) -> bool:
        """Return whether ``fact`` passes; ``writers`` gives each fact's first actor (read once, when --actor)."""
        if self.tags and not set(self.tags) <= set(getattr(fact, "tags", ())):
            return False
        if self.confidence and fact.confidence not in self.confidence:
            return False
        if self.pinned is not None and bool(fact.pinned) != self.pinned:
            return False
        provenance = getattr(fact, "provenance", "") or ""
        if self.provenance and not (provenance == self.provenance or (
                self.provenance.endswith(":") and provenance.startswith(self.provenance))):
            return False
        if self.session and provenance != f"session:{self.session}":
            return False
        if self.actor and (writers is None or writers().get(fact.id) != self.actor):
            return False
        return True

    def apply(self, vault: Any, facts: Sequence[Any]) -> list[Any]:
        """Return the facts that pass, in their order."""
        if not self:
            return list(facts)
        found: dict[str, str] | None = None

        def writers() -> dict[str, str]:
            nonlocal found
            if found is None:
                from am.upkeep.stats import first_writers

                found = first_writers(vault, {f.id for f in facts})
            return found

        return [f for f in facts if self.keeps(f, writers)]
