"""What the web view shows, as JSON-ready values, from the same library calls as the CLI; nothing here writes.

Each method answers one page of ``am serve`` (and ``am graph``): the topic
graph of a world (``am.packs.graph``, the slice with no budget), a topic's
facts as ``am slice --topic`` renders them, the activity feed of ``am log``
with the ``am undo`` command of each write, the review queue (stale,
contested, pending review) and the numbers. The topic graph's layout is kept
per vault commit, world and scope, so a second look costs no layout.

Decisions: docs/decisions/web.md.
"""

from __future__ import annotations

import json
import shlex
import threading
from collections import Counter
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from am.packs.pack import SliceRequest

if TYPE_CHECKING:
    from am.packs.graph import TopicGraph
    from am.vault import Vault

__all__ = ["Views", "world_request"]

_CACHE_SIZE = 32
_GRAPHS_LOCK = threading.Lock()  # the layouts may be shared by several threads' views (am serve)
_BRANCHES = 20  # branches counted per repo on the Numbers page (the rest: named as left out)
_LAST = ("last graph",)  # the key of the last graph built, kept whole, in the shared dict of layouts


def world_request(repo: str | None = None, branch: str | None = None, commit: str | None = None,
                  at: str | None = None, topic: str | None = None, depth: int = 1,
                  include_pending: bool = False) -> SliceRequest:
    """Return the slice request of a world and scope, reading ``at`` as ``am slice --at`` does."""
    moment: datetime | None = None
    if at:
        from am.cache.timephrases import parse_time
        from am.errors import UsageError
        from am.worlds.ancestry import now

        try:
            moment = parse_time(at, now=now())
        except UsageError as err:
            raise UsageError(f"at: {err.message}", hint=err.hint) from None
    if depth < 0 or depth > 10:
        from am.errors import UsageError

        raise UsageError(f"depth {depth} is out of range", hint="give a depth from 0 to 10")
    return SliceRequest(repo=repo or None, branch=branch or None, commit=commit or None, at=moment,
                        at_label=at or "now", topic=topic or None, depth=depth, include_pending=include_pending,
                        max_tokens=0)


class Views:
    """The read-only views of one open vault (the server keeps one for its lifetime)."""

    def __init__(self, vault: Vault, *, graphs: dict[tuple[Any, ...], dict[str, Any]] | None = None) -> None:
        self.vault = vault
        # The layouts, by vault commit, world and scope: one dict may be shared by the views of several threads.
        self._graphs: dict[tuple[Any, ...], dict[str, Any]] = {} if graphs is None else graphs

    # ------------------------------------------------------------ the graph

    def _key(self, request: SliceRequest) -> tuple[Any, ...] | None:
        from am.packs.slice import world_of

        setup = world_of(self.vault, request, at=request.at)
        cache = self.vault.cache()
        # Uncommitted edits (a person typing in Obsidian) change the graph without a commit: nothing is kept then.
        if cache is None or cache.dirty_paths():
            return None
        return (self.vault.store.head(), setup.world.repo, setup.world.branch, setup.world.commit, request.at_label,
                request.topic, request.depth if request.topic else None, request.include_pending)

    def _kept(self, key: tuple[Any, ...] | None, request: SliceRequest) -> TopicGraph | None:
        """Return the last graph built, when it is of this key (vault commit, world, scope) and its pack's request
        is ``request`` (as ``world_graph`` asks it: no budget, no query, no links followed, not compact)."""
        with _GRAPHS_LOCK:
            last = self._graphs.get(_LAST)
        if key is None or last is None or last["key"] != key:
            return None
        graph: TopicGraph = last["graph"]
        return graph if graph.request == replace(request, max_tokens=0, query=None, follow_links=False,
                                                 compact=False) else None

    def topic_graph(self, request: SliceRequest, key: tuple[Any, ...] | None = None) -> TopicGraph:
        """Return the graph of a world and scope (``am.packs.graph.world_graph``); the last one built is kept
        (one: its pack holds every shown fact), so the page's export of the graph it shows builds nothing again."""
        from am.packs.graph import world_graph

        key = key or (self._key(request) if request.at is None else None)
        graph = self._kept(key, request)
        if graph is None:
            graph = world_graph(self.vault, request)
            if key is not None:
                with _GRAPHS_LOCK:
                    self._graphs[_LAST] = {"key": key, "graph": graph}
        return graph

    def graph(self, request: SliceRequest) -> dict[str, Any]:
        """Return the graph's JSON, laid out once per vault commit, world and scope ('at' a phrase: each time)."""
        from am.packs.graph import graph_json

        key = self._key(request) if request.at is None else None
        if key is not None:
            with _GRAPHS_LOCK:
                if key in self._graphs:
                    return self._graphs[key]
        data = graph_json(self.topic_graph(request, key))
        if key is not None:
            with _GRAPHS_LOCK:
                while len(self._graphs) >= _CACHE_SIZE:
                    self._graphs.pop(next(iter(self._graphs)))
                self._graphs[key] = data
        return data

    def topic(self, request: SliceRequest, topic_id: str) -> dict[str, Any]:
        """Return the slice of one topic (depth 0) in a world, as ``am slice --topic ID --format json`` prints it."""
        from am.packs.slice import render_json, slice_vault

        self.vault.get_topic(topic_id)  # NotFoundError for an unknown topic, as the CLI says it
        pack = slice_vault(self.vault, replace(request, topic=topic_id, depth=0, max_tokens=0), count_use=False)
        data: dict[str, Any] = json.loads(render_json(pack))
        data["command"] = replace(request, topic=topic_id, depth=0).argv() + " --max-tokens 0"
        return data

    # ------------------------------------------------------------ activity

    def log(self, *, actor: str | None = None, op: str | None = None, limit: int = 200) -> dict[str, Any]:
        """Return ``am log`` entries, newest first, each with the command that undoes it."""
        from am.upkeep.audit import log_entries

        entries = log_entries(self.vault, actor=actor or None, op=op or None, limit=limit)
        out = []
        for entry in entries:
            item = entry.to_json()
            item["undo"] = None if entry.op in ("vault.init", "merge") or entry.manual and not entry.records \
                else f"am undo {entry.commit[:10]}"
            out.append(item)
        actors = Counter(e.actor for e in entries)
        ops = Counter(e.op for e in entries)
        return {"entries": out, "actors": dict(sorted(actors.items())), "ops": dict(sorted(ops.items())),
                "limit": limit, "vault": self.vault.name}

    # ------------------------------------------------------------ review

    def review(self, request: SliceRequest) -> dict[str, Any]:
        """Return what waits for a person: stale facts in the world, contested facts and pairs, pending review."""
        from am.packs.pack import clean_text
        from am.packs.why import stale_in_world
        from am.records.model import Fact
        from am.upkeep.review import CHOICES, stale_choices
        from am.worlds.ancestry import open_clone

        # Stale: of what holds in the world, as the CLI queue reads it: a pending fact is listed once, under
        # pending (its decision, accept or reject, comes first).
        report = stale_in_world(self.vault, replace(request, include_pending=False))

        def fact(f: Fact) -> dict[str, Any]:
            return {"id": f.id, "text": clean_text(f.body), "status": f.status, "confidence": f.confidence,
                    "topics": list(f.topics), "repo": f.repo, "branch": f.version, "commit": f.commit,
                    "provenance": clean_text(f.provenance), "created": f.created, "reason": f.reason}

        world = report.setup.world
        where = [f"--{k} {shlex.quote(v)}" for k, v in (("repo", world.repo), ("branch", world.branch),
                                                         ("commit", request.commit and world.commit)) if v]
        store = open_clone(world.repo)[0] if report.facts and world.repo and world.commit else None
        stale = []
        for found in report.facts:
            # The CLI queue's choices, by its rule (a fact of another branch: no confirm, no expire here).
            fid, mark = found.fact.id, found.mark
            choices, note = stale_choices(store, found.fact, world.branch, world.commit)
            stale.append({**fact(found.fact), "changed": mark.to_json(), "evidence": mark.describe(),
                          "choices": list(choices), "note": note,
                          "commands": [f"am why {fid}", *_decisions(fid, choices, where)]})
        contested = [{**fact(f), "choices": list(CHOICES["contested"]),
                      "commands": _decisions(f.id, CHOICES["contested"], [])}
                     for f in self.vault.list_facts(status="contested")]
        proposals = self._proposals()
        proposed = {p["id"] for p in proposals}
        pending = []
        for f in self.vault.list_facts(status="pending-review"):
            choices = CHOICES["proposal" if f.id in proposed else "pending"]
            pending.append({**fact(f), "choices": list(choices), "commands": _decisions(f.id, choices, [])})
        pairs = [{"id": rel.id, "from": rel.from_, "to": rel.to, "note": clean_text(rel.body),
                  "texts": {end: self._text_of(end) for end in (rel.from_, rel.to)}}
                 for rel in self.vault.list_relations(status="active", rel="conflicts-with")]
        return {"world": {"repo": world.repo, "branch": world.branch, "commit": world.commit},
                "stale": stale, "contested": contested, "pending": pending, "pairs": pairs,
                "proposals": proposals}

    def _text_of(self, record_id: str) -> str | None:
        from am.errors import AmError
        from am.packs.pack import clean_text
        from am.records.model import Topic

        try:
            _, record = self.vault.get(record_id)
        except AmError:
            return None
        return clean_text(record.title if isinstance(record, Topic) else record.body)

    def _proposals(self) -> list[dict[str, Any]]:
        """Return pending proposals where the library has them (``am review``); an empty list where it has not."""
        try:
            from am.upkeep import review as review_module
        except ImportError:
            return []
        lister = getattr(review_module, "proposals", None)
        if lister is None:
            return []
        found = lister(self.vault)
        return [p.to_json() if hasattr(p, "to_json") else dict(p) for p in found]

    # ------------------------------------------------------------ numbers

    def numbers(self, request: SliceRequest) -> dict[str, Any]:
        """Return facts by status, actor and week; the facts that hold on each branch of every known repo (the
        first 20 by name); the full pack (facts, tokens, bytes) of the request's world; the cache's health."""
        from am.packs.slice import count_held, render_markdown, slice_vault
        from am.upkeep.writers import fact_writes_by_actor
        from am.worlds.ancestry import open_clone

        request = replace(request, topic=None, query=None, max_tokens=0)
        cache = self.vault.cache()
        # Status and created of every fact: from the cache's columns (no fact decoded), else from the records.
        facts = [(r[1], r[12]) for r in cache.fact_world_rows()] if cache is not None \
            else [(f.status, f.created) for f in self.vault.list_facts()]
        by_status = Counter(status for status, _ in facts)
        by_week: Counter[str] = Counter()
        for _, created in facts:
            if created:
                try:
                    year, week, _ = datetime.fromisoformat(created).isocalendar()
                except ValueError:
                    continue
                by_week[f"{year}-W{week:02d}"] += 1
        by_actor = fact_writes_by_actor(self.vault)  # each commit counted once, kept in .am/cache/
        # Every branch's count of what holds (no pack: milliseconds each); the full pack of the picker's world only.
        worlds, left_out = [], []
        for repo in sorted(self.vault.known_repos()):
            store, _why = open_clone(repo)
            names = _branches(store)
            if len(names) > _BRANCHES:
                left_out.append({"repo": repo, "branches": len(names) - _BRANCHES})
            branches: list[str | None] = [*names[:_BRANCHES]] or [None]
            for branch in branches:
                held = count_held(self.vault, replace(request, repo=repo, branch=branch, commit=None))
                worlds.append({"repo": repo, "branch": branch, "facts": held})
        # The page's graph of this world, if it is the last one built, holds this very pack (every topic, no budget).
        kept = self._kept(self._key(request), request) if request.at is None else None
        pack = kept.pack if kept is not None and kept.request == request else slice_vault(self.vault, request,
                                                                                         count_use=False)
        world = pack.setup.world
        text = render_markdown(pack)
        return {"facts": len(facts), "by_status": dict(sorted(by_status.items())),
                "by_actor": dict(sorted(by_actor.items())), "by_week": dict(sorted(by_week.items())),
                "worlds": worlds, "worlds_left_out": left_out,
                "pack": {"repo": world.repo, "branch": world.branch, "commit": world.commit, "facts": pack.shown_facts,
                         "tokens": pack.tokens, "bytes": len(text.encode("utf-8")),
                         "command": request.argv() + " --max-tokens 0"},
                "cache": self.cache_health()}

    def cache_health(self) -> dict[str, Any]:
        """Return what ``am index status`` says, or why the cache cannot be used."""
        try:
            cache = self.vault.cache()
        except Exception as err:  # noqa: BLE001 -- the cache is disposable: its failure is a finding, not an error of the view
            return {"ok": False, "error": str(err)}
        if cache is None:
            return {"ok": False, "error": "the cache cannot be opened (am index rebuild)"}
        st = cache.status()
        return {"ok": not st.invalid and not st.duplicates, "head": st.head, "records": st.counts,
                "files": st.files, "bytes": st.bytes, "schema": st.schema, "uncommitted": list(st.dirty),
                "invalid": [{"path": p, "error": e} for p, e in st.invalid], "duplicate_ids": list(st.duplicates),
                "fresh": st.head == self.vault.store.head()}

    # ------------------------------------------------------------ worlds

    def worlds(self) -> dict[str, Any]:
        """Return the code repos this vault knows and the branches of each registered clone."""
        from am.worlds.ancestry import open_clone

        repos = []
        for name in sorted(self.vault.known_repos()):
            store, why = open_clone(name)
            branches = _branches(store)
            repos.append({"name": name, "branches": branches, "note": why})
        return {"vault": self.vault.name, "commit": self.vault.store.head(), "repos": repos}


def _decisions(fact_id: str, choices: tuple[str, ...], world: list[str]) -> list[str]:
    """Return the `am review` command of each decision offered (confirm and supersede in the item's world)."""
    forms = {"accept": "", "confirm": " ".join(["", *world]), "supersede": " ".join([" --text '...'", *world]),
             "expire": " --reason '...'", "reject": " --reason '...'"}
    return [f"am review {choice} {fact_id}{forms[choice]}" for choice in choices]


def _branches(store: Any) -> list[str]:
    """Return the local branch names of a code clone (none when it is not registered here)."""
    if store is None:
        return []
    prefix = "refs/heads/"
    return sorted(name[len(prefix):] for name in store.ref_names() if name.startswith(prefix))
