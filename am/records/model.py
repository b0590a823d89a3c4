"""Values: Topic, Fact, Relation, and the closed vocabularies of the format.

Records are frozen dataclasses. Unknown frontmatter keys ride along in
``extra`` (file order kept) so that am never drops what a person wrote.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Union

__all__ = [
    "RECORD_TYPES",
    "TOPIC_KINDS",
    "STATUSES",
    "FACT_STATUSES",
    "RELATION_STATUSES",
    "CONFIDENCES",
    "AXES",
    "RELATION_TYPES",
    "Topic",
    "Fact",
    "Relation",
    "Record",
    "replace",
]

RECORD_TYPES = ("topic", "fact", "relation")
TOPIC_KINDS = ("project", "tool", "person", "org", "decision", "session", "concept", "event")
STATUSES = ("active", "expired", "superseded", "contested", "pending-review")
FACT_STATUSES = STATUSES
RELATION_STATUSES = STATUSES
CONFIDENCES = ("high", "medium", "low")
AXES = ("subject", "time", "timeless")
RELATION_TYPES = (
    "depends-on",
    "part-of",
    "belongs-to",
    "authored-by",
    "references",
    "conflicts-with",
    "supersedes",
)


@dataclass(frozen=True)
class Topic:
    """A node: a project, tool, person, org, decision, session, concept or event."""

    type: ClassVar[str] = "topic"
    id: str
    kind: str
    title: str
    body: str = ""
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    status: str = "active"
    created: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    eol: str = "\n"


@dataclass(frozen=True)
class Fact:
    """One self-contained statement about one or more topics, holding in a world."""

    type: ClassVar[str] = "fact"
    id: str
    topics: tuple[str, ...]
    body: str
    status: str = "active"
    confidence: str = "medium"
    provenance: str = "human"
    repo: str | None = None
    version: str | None = None
    commit: str | None = None
    axis: str | None = None
    created: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    until_commit: str | None = None
    supersedes: tuple[str, ...] = ()
    superseded_by: str | None = None
    reason: str | None = None
    paths: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    pinned: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    eol: str = "\n"
    dirty: bool = False  # written with --here over uncommitted changes: the commit may not hold what it says


@dataclass(frozen=True)
class Relation:
    """A typed edge between two topics or facts; one of the seven types."""

    type: ClassVar[str] = "relation"
    id: str
    rel: str
    from_: str
    to: str
    body: str = ""
    status: str = "active"
    created: str | None = None
    repo: str | None = None
    version: str | None = None
    commit: str | None = None
    until_commit: str | None = None
    axis: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    reason: str | None = None
    tags: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    eol: str = "\n"


Record = Union[Topic, Fact, Relation]
