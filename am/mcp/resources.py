"""The MCP resources: each topic and fact of the vault at ``am://VAULT/topic/ID`` and ``am://VAULT/fact/ID``.

A client lists them (topics, then the facts that are active or contested, a
page at a time) or fills a template with an id, and attaches one to a
conversation: the record as its file reads (frontmatter and body), after a
line that says it is data, with invisible and bidi control characters
stripped as in every tool's answer. Nothing here imports the SDK:
``am.mcp.server`` serves them.

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

from am.errors import NotFoundError, UsageError
from am.mcp.toolkit import DATA_NOTE

if TYPE_CHECKING:
    from am.vault import Vault

__all__ = ["KINDS", "PAGE", "Listed", "list_page", "parse_uri", "read_text", "templates", "uri_of"]

KINDS = ("topic", "fact")
PAGE = 100  # resources a resources/list page holds; the next page's cursor is where it stopped
MIME = "text/markdown"


@dataclass(frozen=True)
class Listed:
    """One resource as resources/list names it."""

    uri: str
    name: str
    title: str
    description: str


def uri_of(vault: str, kind: str, record_id: str) -> str:
    """Return the URI of a record: ``am://VAULT/KIND/ID``."""
    return f"am://{quote(vault, safe='')}/{kind}/{quote(record_id, safe='')}"


def templates(vault: str) -> list[tuple[str, str, str]]:
    """Return (URI template, name, description) for each kind of record this vault serves."""
    return [(f"am://{quote(vault, safe='')}/{kind}/{{id}}", f"{kind}",
             f"One {kind} of the am vault {vault!r} by its id, as its file reads.") for kind in KINDS]


def parse_uri(uri: str, vault: str) -> tuple[str, str]:
    """Return (kind, id) of an ``am://`` URI of this vault; raise a UsageError that says what a URI looks like."""
    example = uri_of(vault, "fact", "ID")
    parts = urlsplit(uri)
    path = parts.path.strip("/").split("/")
    if parts.scheme != "am" or len(path) != 2 or not path[1]:
        raise UsageError(f"resource {uri!r} is not an am URI", hint=f"am://VAULT/topic/ID or am://VAULT/fact/ID, "
                         f"e.g. {example}")
    if unquote(parts.netloc) != vault:
        raise NotFoundError(f"resource {uri!r} is in vault {unquote(parts.netloc)!r}; this server serves {vault!r}",
                            hint=f"ask the server of that vault, or read {uri_of(vault, path[0], unquote(path[1]))}")
    if path[0] not in KINDS:
        raise UsageError(f"resource {uri!r}: {path[0]!r} is not a kind of record served",
                         hint=f"use topic or fact: {example}")
    return path[0], unquote(path[1])


def _first_line(text: str, width: int = 80) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def list_page(vault: Vault, cursor: str | None) -> tuple[list[Listed], str | None]:
    """Return one page of the vault's resources (topics by id, then active and contested facts, oldest first)."""
    try:
        start = int(cursor) if cursor else 0
    except ValueError:
        raise UsageError(f"cursor {cursor!r} is not one this server gave", hint="list from the start") from None
    topics = vault.list_topics()
    found: list[Listed] = []
    for topic in topics[start:start + PAGE]:
        found.append(Listed(uri_of(vault.name, "topic", topic.id), topic.id, topic.title,
                            f"topic [{topic.kind}] {topic.title}"))
    if len(found) < PAGE:
        facts = [f for f in vault.list_facts() if f.status in ("active", "contested")]
        skip = max(0, start - len(topics))
        for fact in facts[skip:skip + PAGE - len(found)]:
            line = _first_line(fact.body)
            found.append(Listed(uri_of(vault.name, "fact", fact.id), fact.id, line,
                                f"fact ({fact.status}, {fact.confidence}; {', '.join(fact.topics)}): {line}"))
        total = len(topics) + len(facts)
    else:
        total = start + len(found) + 1  # there is more: the facts at least
    end = start + len(found)
    return found, (str(end) if end < total else None)


def read_text(vault: Vault, kind: str, record_id: str) -> str:
    """Return a record as its file reads, after a line that says it is data (hidden characters stripped)."""
    from am.packs.pack import strip_hidden
    from am.records.codec import render_record
    from am.records.model import Fact, Topic

    _, record = vault.get_typed(record_id, Fact if kind == "fact" else Topic, kind)
    text: str = strip_hidden(render_record(record))
    return f"<!-- am: {DATA_NOTE} -->\n{text}"
