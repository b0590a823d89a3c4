"""The MCP tools that read: slice, search, why, the shows and lists, log, check, the review queue.

Each is the same library call as its CLI command, in the same world.

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from am.mcp.toolkit import DATA_NOTE, Call, ToolOutput, as_data, json_text, limit_arg, record_dict, time_arg


def slice_tool(call: Call, args: dict[str, Any]) -> ToolOutput:
    from am.packs.slice import SliceRequest, render_json, render_markdown, slice_vault
    from am.worlds.ancestry import DETACHED_HEAD

    typed = any(args.get(k) is not None for k in ("repo", "branch", "commit"))
    repo, branch, commit = call.world(args)
    request = SliceRequest(
        repo=repo, branch=branch, commit=commit, at=time_arg(args.get("at"), "at"), at_label=args.get("at") or "now",
        as_of=time_arg(args.get("as_of"), "as_of"), as_of_label=args.get("as_of"), topic=args.get("topic"),
        depth=args.get("depth", 1), query=args.get("query"), max_tokens=args.get("max_tokens", 8000),
        include_pending=args.get("include_pending", False), follow_links=args.get("follow_links", False),
        link_vaults=call.link_vaults, commit_source=None if typed or commit is None else DETACHED_HEAD,
    )
    fmt = args.get("format", "md")
    if args.get("since"):  # what changed since an earlier pack: the delta am slice --since prints
        from am.packs.delta import render_delta_json, render_delta_markdown, slice_since

        delta = slice_since(call.vault, request, args["since"])
        text = render_delta_json(delta) if fmt == "json" else render_delta_markdown(delta)
        w = delta.setup.world
        return ToolOutput(text, {"note": DATA_NOTE, "format": fmt, "pack": text, "vault_commit": delta.until,
                                 "world": {"repo": w.repo, "branch": w.branch, "commit": w.commit}})

    def make() -> ToolOutput:
        pack = slice_vault(call.vault, request)
        text = render_json(pack) if fmt == "json" else render_markdown(pack)
        world = pack.setup.world
        return ToolOutput(text, {
            "note": DATA_NOTE, "format": fmt, "pack": text,
            "world": {"repo": world.repo, "branch": world.branch, "commit": world.commit},
            "vault_commit": pack.vault_commit, "tokens": pack.tokens,
            "left_out": {k: v for k, v in pack.left_out.items() if v},
        })

    key = _pack_key(call, request, fmt)
    if key is None or call.memo is None:
        return make()
    index = call.vault.cache()
    assert index is not None  # _pack_key opened it
    from am.clock import now

    out: ToolOutput = call.memo.get_or_make((key, index.content_token()), now(), make, index.valid_time_bounds)
    return out


def _pack_key(call: Call, request: Any, fmt: str) -> tuple[Any, ...] | None:
    """Return what a pack depends on besides the cache's content (None: do not keep this pack)."""
    if call.memo is None or request.as_of is not None or request.follow_links:
        return None
    if request.query:
        from am.packs.embedding import is_embedder, load_backend

        backend = load_backend(call.vault.settings)[0]
        if backend is not None and not is_embedder(backend):
            return None  # a search backend may answer differently from one call to the next (vectors in the
            # cache do not: a pack is kept against the cache's content, which their writes change)
    if call.vault.cache() is None:
        return None
    from am.worlds.ancestry import refs_stamp, setup_world

    setup = setup_world(request.repo, request.branch, request.commit, at=request.at,
                        include_pending=request.include_pending, commit_source=request.commit_source)
    world = setup.world
    # A fetched or deleted branch changes where a commit outside the world's history landed (the pack id's
    # last part), with the world's commit unchanged.
    refs = refs_stamp(Path(setup.oracle.store.gitdir)) if setup.oracle is not None else ()
    return (fmt, request.repo, request.branch, request.commit, request.at, request.at_label, request.topic,
            request.depth, request.query, request.max_tokens, request.include_pending,
            world.repo, world.branch, world.commit, setup.rule, setup.notes, setup.clone, setup.commit_source, refs)


def search_tool(call: Call, args: dict[str, Any]) -> ToolOutput:
    from am.packs.worldsearch import SearchQuery, search_embedder, search_json, search_world

    cache = call.vault.cache()
    if cache is None:
        from am.errors import AmError

        raise AmError("the search cache cannot be opened", hint="check that .am/cache/ is writable, then run: am index rebuild")
    sort = args.get("sort", "rank")
    embedder, note = search_embedder(call.vault.settings, sort)
    # The world and its marks through the code am search runs, filled from the server's clone as it fills its own.
    query = SearchQuery(args["query"], topic=args.get("topic"), status=args.get("status"), repo=args.get("repo"),
                        branch=args.get("branch"), since=args.get("since"), until=args.get("until"),
                        include_superseded=args.get("include_superseded", False), limit=args.get("limit", 20),
                        sort=sort)
    found = search_world(call.vault, cache, query, embedder=embedder, vector_note=note, fill=call.fill,
                         judge=lambda request: _world_marks(call, request))
    return as_data(search_json(found, call.vault.root, sort))


def _world_marks(call: Call, request: Any) -> Any:
    """Judge the vault in a search's world, kept (as packs are) while nothing it depends on changes.

    A judgement is a slice of the whole vault without a budget: ~0.2 s warm on the demo, paid by every search
    from a server in a clone if it were not kept.
    """
    from am.packs.why import world_marks

    key = _pack_key(call, request, "world-marks")
    if key is None or call.memo is None:
        return world_marks(call.vault, request)
    index = call.vault.cache()
    assert index is not None  # _pack_key opened it
    from am.clock import now

    return call.memo.get_or_make((key, index.content_token()), now(), lambda: world_marks(call.vault, request),
                                 index.valid_time_bounds)


def show_tool(kind: str) -> Callable[[Call, dict[str, Any]], ToolOutput]:
    def run(call: Call, args: dict[str, Any]) -> ToolOutput:
        from am.records.model import Fact, Topic

        path, record = call.vault.get_typed(args["id"], Fact if kind == "fact" else Topic, kind)
        shown = record_dict(record, path)
        if kind == "fact":  # as am fact show: its valid time against now, and where it holds
            from am.clock import now
            from am.packs.factview import holds_in, time_note

            shown.update(valid_now=time_note(record, now()) is None, holds_in=holds_in(call.vault, record))
        return as_data({"record": shown})
    return run



def topic_list(call: Call, args: dict[str, Any]) -> ToolOutput:
    topics = call.vault.list_topics(kind=args.get("kind"))
    return as_data({"total": len(topics),
                     "topics": [{"id": t.id, "kind": t.kind, "title": t.title, "aliases": list(t.aliases)}
                                for t in topics[:limit_arg(args, 100)]]})


def log_tool(call: Call, args: dict[str, Any]) -> ToolOutput:
    from am.upkeep.audit import log_entries, parse_since

    since = args.get("since")
    entries = log_entries(call.vault, actor=args.get("actor"), op=args.get("op"), record=args.get("record"),
                          since=parse_since(since) if since else None, limit=args.get("limit", 20))
    # Subjects hold statements and reasons an agent wrote (hand commits' subjects, anything): data, as records are.
    return as_data({"entries": [e.to_json() for e in entries]})


def check_tool(call: Call, args: dict[str, Any]) -> ToolOutput:
    from am.upkeep.check import check_vault

    report = check_vault(call.vault)
    data = report.to_json(strict=args.get("strict", False))
    data["total"] = len(data["issues"])
    data["issues"] = data["issues"][:limit_arg(args, 100)]  # the first in the report's order: errors, warnings, notes
    return ToolOutput(json_text(data) + "\n", data)


def why_tool(call: Call, args: dict[str, Any]) -> ToolOutput:
    from am.packs.pack import SliceRequest
    from am.packs.why import why_fact

    repo, branch, commit = call.world(args)
    request = SliceRequest(repo=repo, branch=branch, commit=commit, at=time_arg(args.get("at"), "at"),
                           at_label=args.get("at") or "now", include_pending=args.get("include_pending", False),
                           max_tokens=0)
    explanation = why_fact(call.vault, args["id"], request)
    return ToolOutput(explanation.render(), explanation.to_json())



def review_list(call: Call, args: dict[str, Any]) -> ToolOutput:
    from am.upkeep.review import CHOICES, review_queue

    repo, branch, commit = call.world(args)
    queue = review_queue(call.vault, repo=repo, branch=branch, commit=commit, diff=args.get("diff", True),
                         kinds=tuple(args.get("kinds") or CHOICES), limit=limit_arg(args, 20))
    return as_data(queue.to_json())

