"""Context packs: what holds in a world, ranked, cut to a token budget, rendered (DESIGN §6).

``build_pack(records, request, setup, ...)`` (``am.packs.assemble``) is pure: it takes any iterable of
records (the cache, a work-tree scan, or a past commit's tree) and the world
(``am.worlds.ancestry.setup_world``), and returns a ``Pack``; ``am.packs.pack`` renders it
(``render_markdown``, ``render_json``, re-exported here), and the same records
and request give byte-identical output. ``slice_vault(vault, request)`` does
the I/O around it.

Ranking: pinned facts first, then (with --query) the retrieval order, then use
and age (am/cache/usage.py: promoted after three uses in a week, demoted after
thirty days neither new nor used; pinned never fade), then confidence, then
recency, then id. The budget admits facts in that order, a
topic's heading with its first fact, then relations among the shown topics;
whatever does not fit is counted in the pack, with the way to get it.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from am.cache.usage import UsageLog
from am.clock import now as clock_now
from am.errors import UsageError
from am.records.model import Fact, Record
from am.packs.assemble import Loader, build_pack, ids_of
from am.packs.pack import (
    DEFAULT_MAX_TOKENS,
    Pack,
    SliceRequest,
    estimate_tokens,
    render_json,
    render_markdown,
)
from am.worlds.rules import (
    WHY_PENDING,
    WHY_REPO,
    FactView,
    World,
)
from am.worlds.stale import WatchedFact

if TYPE_CHECKING:
    from am.cache.index import Index
    from am.worlds.ancestry import WorldSetup
    from am.packs.reader import VaultReader

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "count_held",
    "SliceRequest",
    "Pack",
    "estimate_tokens",
    "build_pack",
    "render_markdown",
    "render_json",
    "slice_vault",
    "world_of",
    "watched_of",
]

def _usage(vault: VaultReader) -> UsageLog:
    """Return the vault's use counts (the facade keeps one open; another reader gets its own)."""
    opener = getattr(vault, "usage", None)
    if opener is not None:
        return opener()  # type: ignore[no-any-return]
    return UsageLog(vault.root / ".am" / "cache")


def _open_index(vault: VaultReader) -> Index | None:
    """Return the vault's cache, fresh, or None when it cannot be used (then the files are scanned)."""
    opener = getattr(vault, "cache", None)
    if opener is None:
        return None
    try:
        index: Index | None = opener()
        return index
    except ImportError:
        return None
    except Exception as err:  # the cache is disposable; a slice never fails because of it
        import logging

        logging.getLogger("am").warning("slice reads the files instead of the cache: %s", err)
        return None


def _from_cache(index: Index, world: World | None = None) -> tuple[list[Record | FactView], Loader | None,
                                                                  dict[str, int] | None]:
    """Read topics and relations in full and facts as views; return them, the loader of full facts, and the
    count of facts left out by SQL (with a world: facts that cannot hold there are neither read nor ranked)."""
    rows = getattr(index, "fact_world_rows", None)
    if rows is None:
        return [r for _, r in index.records()], None, None
    values = getattr(index, "record_values", None)
    if values is not None:
        out: list[Record | FactView] = [*values(type="topic"), *values(type="relation")]
    else:
        out = [r for _, r in index.records(type="topic")]
        out += [r for _, r in index.records(type="relation")]
    dropped: dict[str, int] | None = None
    # Two files with one id: the one named after it (else the first by path) wins in resolve(), so every row must reach it in id order.
    if world is not None and not index.has_duplicate_facts():
        never = ("expired", "superseded") + (() if world.include_pending else (WHY_PENDING,))
        found = index.fact_world_rows(repo=world.repo, dropped=never)
        dropped = {WHY_REPO if status is None else status: n
                   for status, n in index.fact_world_dropped(repo=world.repo, dropped=never).items()}
    else:
        found = index.fact_world_rows()
    view, ids, ranked = FactView, ids_of, dropped is not None
    for rank, (fid, status, confidence, repo, version, commit, until, start, end, supersedes, successor, pinned,
               created, topics, _) in enumerate(found):
        out.append(view(fid, status, confidence, repo, version, commit, until, start, end,
                        () if supersedes is None else ids(supersedes), successor, pinned == 1, created, ids(topics),
                        rank if ranked else -1))

    def load(ids: Sequence[str]) -> dict[str, Fact]:
        found: dict[str, Fact] = {}
        for _, record in index.records(ids=ids):
            if isinstance(record, Fact):
                found.setdefault(record.id, record)
        return found

    return out, load, dropped


class _CachedLinks:
    """The cache's same-vault (source, target) link pairs, read when first iterated (a query's full-text
    level usually serves before the graph level needs them)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.pairs: list[tuple[str, str]] | None = None

    def __iter__(self) -> Iterator[tuple[str, str]]:
        if self.pairs is None:
            self.pairs = list(self.index.link_pairs())
        return iter(self.pairs)


def _search_fn(index: Index | None, embedder: Any = None) -> Any:
    """Return the cache's full-text search as ``search(query, limit) -> ids``, or None without a cache.

    With an embedder, its vectors are fused in (``HybridSearch``).
    """
    if index is None:
        return None
    if embedder is not None:
        from am.packs.retrieval import HybridSearch

        return HybridSearch(index, embedder)

    def search(query: str, limit: int) -> list[str]:
        hits = index.search(query, limit=limit, statuses=("active", "contested", "pending-review"))
        return [hit.id for hit in hits]

    return search


def slice_vault(vault: VaultReader, request: SliceRequest, *, records: Iterable[Record | FactView] | None = None,
                count_use: bool = True, setup: WorldSetup | None = None) -> Pack:
    """Build the pack of a vault for a request: choose the record source, the world and the retrieval.

    ``count_use=False`` reads without counting the shown facts as used (a person looking, not an agent's context).
    ``setup``: a world already set up (am diff --merge-preview's merge not yet made), instead of the request's."""
    # Reading 100k records makes no reference cycles, but would trigger a dozen full
    # collections that walk every one of them (about a fifth of a large slice).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _slice_vault(vault, request, records, count_use, setup)
    finally:
        if collecting:
            gc.enable()


def world_of(vault: VaultReader, request: SliceRequest, *, at: datetime | None = None) -> WorldSetup:
    """Set up the world a request names, with its ancestry oracle (UnknownWorldError when it cannot exist)."""
    from am.worlds.ancestry import setup_world

    known = getattr(vault, "known_repos", None)
    return setup_world(request.repo, request.branch, request.commit, at=at,
                       include_pending=request.include_pending, cache_dir=vault.root / ".am" / "cache" / "ancestry",
                       known_repos=known, commit_source=request.commit_source)


def count_held(vault: VaultReader, request: SliceRequest) -> int:
    """Return how many facts hold in a request's world: the facts of its ``--max-tokens 0`` pack of every topic.

    Counted from the cache's world groups with no pack built (a few milliseconds at 20k facts, where the
    pack costs half a second and more); without a usable cache, from the pack itself.
    """
    from am.worlds.ancestry import now

    request = replace(request, topic=None, query=None, max_tokens=0)
    setup = world_of(vault, request, at=request.at or now())
    index = _open_index(vault) if request.as_of is None else None
    if index is not None and hasattr(index, "fact_world_groups"):
        from am.packs.cache import held_counts

        counts = held_counts(index, setup)
        if counts is not None:
            return counts[0]
    return slice_vault(vault, request, count_use=False).shown_facts


def watched_of(index: Index, repo: str | None) -> list[WatchedFact]:
    """Return the facts of ``repo`` that watch code paths, from the cache."""
    if repo is None or not hasattr(index, "watched_facts"):
        return []
    return [WatchedFact(row[0], row[4], ids_of(row[8])) for row in index.watched_facts(repo=repo) if row[4]]


def _slice_vault(vault: VaultReader, request: SliceRequest, records: Iterable[Record | FactView] | None,
                 count_use: bool = True, given: WorldSetup | None = None) -> Pack:
    from am.worlds.ancestry import now, records_at

    if request.depth < 0:
        raise UsageError("--depth must be 0 or more")
    if request.topic and request.query:
        raise UsageError("--topic and --query choose the scope in two ways; give one of them")
    if request.query:
        from am.cache.terms import analyse

        if not analyse(request.query).units:  # it would list the newest records, "served by: full-text"
            raise UsageError(f"--query {request.query!r} has no word to search for",
                             hint="give --query a word to look for, or leave it out for the whole world")
    at = request.at or now()
    setup = given if given is not None else world_of(vault, request, at=at)
    commit = vault.store.head()
    signals = _usage(vault).signals(repo=setup.world.repo, branch=setup.world.branch, at=clock_now())
    index = None
    watched: Callable[[], list[WatchedFact]] | None = None
    dirty = 0
    load: Loader | None = None
    dropped: dict[str, int] | None = None
    backend, note = (None, "vector: not installed")
    embedder = None
    if request.query:
        from am.packs.embedding import is_embedder, load_backend

        backend, note = load_backend(vault.settings)
        if is_embedder(backend):
            embedder, backend = backend, None
    if request.as_of is not None:
        past = vault.store.last_commit_at(request.as_of.timestamp())
        if past is None:
            from pathlib import Path

            from am.git.program.partial import refuse_before_shallow

            refuse_before_shallow(Path(vault.store.gitdir), f"--as-of {request.as_of_label or request.as_of}")
            raise UsageError(f"the vault has no commit at or before {request.as_of_label or request.as_of}",
                             hint="pick a later time (see: git log --reverse --format=%ci | head -1)")
        commit = past
        records = records_at(vault, past)
    elif records is None:
        index = _open_index(vault)
        if index is not None:
            commit = index.head or commit
            if backend is None and hasattr(index, "fact_world_groups"):
                from am.packs.cache import cached_pack

                # Every topic, a topic's neighbourhood, or a query the full-text index serves: judged
                # and ranked in pieces, only the shown facts decoded.
                pack = cached_pack(index, request, setup, vault_name=vault.name, vault_commit=commit,
                                   search=_search_fn(index, embedder), backend_note=note, signals=signals)
                if pack is not None:
                    return _with_links(pack, vault, request, setup, count_use)
            records, load, dropped = _from_cache(index, setup.world)
            repo, cache = setup.world.repo, index
            watched = lambda: watched_of(cache, repo)  # noqa: E731 -- read only when staleness needs it
            dirty = len(index.dirty_paths())
        else:
            records = (r for _, r in vault.iter_records())
    search = _search_fn(index, embedder) if request.query else None
    if embedder is not None and index is None:
        note += " (not used: it needs the cache)"
    links = None
    if index is not None and (request.topic or request.query):
        # The cache already parsed every body's links; parsing 10k bodies again costs seconds.
        links = _CachedLinks(index)
    # The cache belongs to the vault, which closes it.
    pack = build_pack(records, request, setup, vault_name=vault.name, vault_commit=commit,
                      search=search, backend=backend, backend_note=note, links=links, load=load,
                      dropped=dropped, watched=watched, dirty=dirty, signals=signals)
    return _with_links(pack, vault, request, setup, count_use)


def _with_links(pack: Pack, vault: VaultReader, request: SliceRequest, setup: WorldSetup,
                count_use: bool = True) -> Pack:
    """Add what cross-vault links of the shown facts name, when asked to follow them; count the shown facts' use.

    A record file that does not parse (saved half way, or Git's conflict markers committed by a merge made
    without am's driver) is named, committed or not: its fact is in no pack.
    """
    index = vault.cache() if request.as_of is None else None
    if index is not None:
        pack.unreadable = tuple(index.unreadable_paths())
    if count_use:
        shown = [f.id for f in pack.all_shown()]
        _usage(vault).record(shown, repo=setup.world.repo, branch=setup.world.branch, at=clock_now())
    if request.follow_links:
        from am.packs.retrieval import follow_links

        found, notes = follow_links(pack.all_shown(), vault.name, setup, open_vault=type(vault).open,
                                    allowed=request.link_vaults)
        pack.foreign.extend(found)
        pack.foreign_notes.extend(notes)
    return pack
