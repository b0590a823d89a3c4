"""Search in a world: the one code `am search` and the MCP `search` tool run, and the JSON both give.

A search started in a registered clone (or given ``branch``) keeps only the
records that hold in that world and marks the ones the world judges ("superseded
here by ...", "stale here: ..."), as a slice would; the world is filled by
``am.worlds.here.fill_world``, the same default every door uses. ``search_json``
is the stable shape of ``am search --format json``, which the MCP tool returns
field for field.

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from am.cache.search import SearchResult
    from am.cache.vectors import Embedder
    from am.packs.reader import VaultReader
    from am.packs.why import WorldMarks
    from am.worlds.here import World

    from am.packs.pack import SliceRequest

    Fill = Callable[[str | None, str | None, str | None], World]
    Judge = Callable[[SliceRequest], WorldMarks]

__all__ = ["SearchQuery", "SearchVault", "WorldSearch", "check_filters", "search_embedder", "search_json",
           "search_world", "world_marks_for"]


class SearchVault(Protocol):
    """What a world search reads of a vault besides what a slice reads (``am.vault.Vault`` is one)."""

    root: Path

    def known_repos(self) -> set[str]: ...

    def topic_hint(self, missing: str) -> str: ...


@dataclass(frozen=True)
class SearchQuery:
    """One search, as a door received it: the words and every filter."""

    text: str
    topic: str | None = None
    status: str | None = None
    repo: str | None = None
    branch: str | None = None
    since: str | None = None
    until: str | None = None
    include_superseded: bool = False
    limit: int = 20
    sort: str = "rank"


@dataclass(frozen=True)
class WorldSearch:
    """A search's answer: the hits (those that hold, when a world filtered them) and the world's marks."""

    result: SearchResult
    marks: WorldMarks | None
    repo: str | None  # the repo the search was narrowed to (the world's, when one filtered it)


def check_filters(vault: SearchVault, cache: Any, repo: str | None, topic: str | None) -> None:
    """Refuse a repo or topic that names nothing (a typo would only find fewer records), suggesting the closest."""
    from am.cache.search import topic_named

    if repo is not None:
        from am.worlds.branches import check_repo_known

        check_repo_known(repo, vault.known_repos())  # exit 13, as am slice
    # A topic only facts name (no file of its own) still narrows: the rule am.cache.search applies, said here
    # first with the closest topic.
    if topic is not None and cache is not None and not topic_named(cache, topic):
        from am.errors import NotFoundError

        raise NotFoundError(f"unknown topic {topic!r}", hint=vault.topic_hint(topic) + "list them with: am topic list")


def world_marks_for(vault: VaultReader, repo: str | None, branch: str | None, *,
                    fill: Fill | None = None, judge: Judge | None = None) -> WorldMarks | None:
    """Return the world a search is filtered by (``branch``, or the default world), or None.

    ``fill`` fills a world where not given (default: ``fill_world``, the registered clone around the current
    folder; the MCP server passes its own, which is ``fill_world`` at the server's folder). ``judge`` judges
    the vault in the world's request (default: ``world_marks``; a server passes one that keeps its answers).
    """
    if fill is None:
        from am.worlds.here import fill_world

        fill = fill_world
    if branch is None:
        if repo is not None:
            return None  # repo alone keeps its old meaning: that repo's records and those with none
        repo, branch, commit = fill(None, None, None)
        if repo is None:
            return None
    else:
        repo, branch, commit = fill(repo, branch, None)
    from am.packs.pack import SliceRequest

    request = SliceRequest(repo=repo, branch=branch, commit=commit, max_tokens=0)
    if judge is not None:
        return judge(request)
    from am.packs.why import world_marks

    return world_marks(vault, request)


def search_embedder(settings: dict[str, Any], sort: str) -> tuple[Any, str]:
    """Return the embedder this machine configured (loaded once a process) and the vector level's note."""
    if sort != "rank":
        return None, "vector: not used with --sort time"
    from am.packs.embedding import is_embedder, load_backend

    backend, note = load_backend(settings)
    if backend is not None and not is_embedder(backend):
        return None, f"{note} (a search backend: it serves am slice --query, not am search)"
    return backend, note


def search_world(vault: Any, cache: Any, query: SearchQuery, *, embedder: Embedder | None, vector_note: str,
                 vector_once: bool = False, fill: Fill | None = None, judge: Judge | None = None) -> WorldSearch:
    """Search ``cache`` for ``query`` in its world (``fill`` fills it: see ``world_marks_for``), as `am search` does."""
    from am.cache.search import search

    check_filters(vault, cache, query.repo, query.topic)
    marks = world_marks_for(vault, query.repo, query.branch, fill=fill, judge=judge)
    repo = query.repo if marks is None else marks.setup.world.repo
    limit = query.limit
    result = search(cache, query.text, topic=query.topic, status=query.status, repo=repo, since=query.since,
                    until=query.until, include_superseded=query.include_superseded,
                    limit=limit if marks is None else max(limit * 5, 100), sort=query.sort, embedder=embedder,
                    vector_note=vector_note, vector_once=vector_once)
    if marks is not None:
        result = replace(result, hits=tuple(h for h in result.hits if marks.keeps(h.id))[:limit])
    return WorldSearch(result, marks, repo)


def search_json(found: WorldSearch, root: Path, sort: str) -> dict[str, Any]:
    """Return the stable JSON of a search (``am search --format json``; the MCP tool's structured result)."""
    result, marks = found.result, found.marks
    return {
        "query": result.query,
        "text": result.text,
        "range": None if result.range is None else {
            "since": result.range.since.isoformat() if result.range.since else None,
            "until": result.range.until.isoformat() if result.range.until else None,
            "phrase": result.range.phrase,
        },
        "ignored_phrases": list(result.ignored),
        "terms": list(result.terms),
        "stop_words": list(result.dropped),
        "sort": sort,
        "without_range": result.without_range,
        "notes": result.notes(),
        "statuses": list(result.statuses),
        "retrieval": {"served": result.served, "levels": list(result.levels)},
        "world": None if marks is None else {"repo": marks.setup.world.repo, "branch": marks.setup.world.branch,
                                             "commit": marks.setup.world.commit},
        "hits": [{
            "id": h.id, "type": h.type, "status": h.status, "title": h.title, "topics": list(h.topics),
            "created": h.created, "path": str(h.path), "file": str(root / h.path),
            "snippet": h.snippet, "rank": round(h.rank, 4),
            **({} if marks is None else {"world_mark": marks.mark(h.id)}),
            "matched": {"terms": h.matched, "of": h.terms, "how": ("id", "phrase", "all", "some", "meaning")[
                0 if h.matched < 0 else h.tier + 1]},
            "found": h.found,
            "explain": h.explain(),
        } for h in result.hits],
    }
