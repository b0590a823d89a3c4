"""`am search` and `am index`: full-text search, and the cache behind it.

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import click

from am.cli.context import FORMAT_OPTION, emit_json, fact_filter, open_vault, progress_bar, search_filter_options
from am.errors import UsageError


def _cache(ctx: click.Context) -> Any:
    from am.errors import AmError

    vault = open_vault(ctx)  # which also has a rebuild show a bar (am.cache.progress.progress_hook)
    cache = vault.cache()
    if cache is None:
        from am.errors import storage_trouble

        trouble = storage_trouble(vault.root / ".am" / "cache")
        hint = ("check that .am/cache/ is writable, then run: am index rebuild" if trouble is None else
                f"{trouble}: make room (or raise the limit), then retry; am rebuilds the cache by itself")
        raise AmError("the search cache cannot be opened (see the warning above)", hint=hint)
    return cache


@click.command("search")
@click.argument("query", nargs=-1, metavar="QUERY...")  # required but for session lines (a --role alone)
@click.option("--topic", metavar="ID", help="Only records about this topic (a fact's topics, a relation's ends).")
@click.option("--status", default=None, help="Only records with this status (default: all but superseded/expired).")
@click.option("--repo", metavar="NAME",
              help="Only records of this code repository (and those with no repo); one that does not exist exits 13.")
@click.option("--branch", metavar="NAME", default=None,
              help="Only records that hold in this world (with --repo, or the clone here); marks superseded/stale.")
@click.option("--since", metavar="WHEN", help="Created at or after: ISO date/time or a phrase (yesterday, 上周).")
@click.option("--until", metavar="WHEN", help="Created before: ISO date/time or a phrase.")
@click.option("--include-superseded", is_flag=True, help="Also show superseded and expired records.")
@click.option("--limit", type=int, default=20, show_default=True, help="At most this many hits.")
@click.option("--sort", type=click.Choice(["rank", "time", "oldest"]), default="rank", show_default=True,
              help="rank: best match first; time: newest first; oldest: session lines in the order said.")
@click.option("--session", "sessions", is_flag=True, help="Search what was said in the ingested session logs instead.")
@click.option("--in-session", metavar="ID", default=None, help="Only this session's log (implies --session).")
@click.option("--role", type=click.Choice(["user", "assistant", "tool", "system"]), default=None,
              help="Only session lines said by this role (implies --session).")
@click.option("--around", type=click.IntRange(0, 1000), default=None, metavar="N",
              help="With each session hit, the N turns before and after it, in order (implies --session).")
@click.option("--full", is_flag=True, help="With each session hit, its whole session, in order (implies --session).")
@search_filter_options
@FORMAT_OPTION
@click.pass_context
def search(ctx: click.Context, /, query: tuple[str, ...], topic: str | None, status: str | None, repo: str | None,
           branch: str | None, since: str | None, until: str | None, include_superseded: bool, limit: int,
           sort: str, sessions: bool, in_session: str | None, role: str | None, around: int | None, full: bool,
           fmt: str, **filters: Any) -> None:
    """Search facts, topics and relations (English, Chinese, Japanese; ranked).

    Words are matched in any form (hook finds hooks) and stop words (how, the,
    的, 怎么) are left out; records with the words as a phrase come first, then
    those with every word, then those with some, by how many. Time phrases
    narrow the date range and are not searched for: yesterday, last Friday,
    last night, Nov 17, 2 hours ago, since Monday, between Monday and Wednesday;
    昨天, 上周五, 昨晚, 11月17日, 3小时前; 昨日, 先週の金曜日, 今朝, 3時間前. A word
    that looks like an id (f-2026, project-alpha) also matches ids starting with it.
    With --session, --in-session or --role: the lines of the ingested session
    logs (am ingest), ranked the same way, each hit naming its session and line.
    With the am[semantic] extra, records are also found by meaning (vectors,
    offline), fused with the word matches; AM_EMBEDDINGS=off turns that off.

    Example: am search how do I run tests last week --topic project-alpha
    """
    from am.packs.worldsearch import SearchQuery, search_json, search_world

    limit = min(limit, 1 << 32)  # more than any vault holds: "all", and within SQLite's integers (2**63)
    if sessions or in_session or role or around is not None or full:
        from am.cli.cmd_sessions import print_session_search

        if sort == "time":
            raise UsageError("--sort time orders records; session lines sort by rank or oldest",
                             hint="use --sort oldest to read session lines in the order they were said")
        print_session_search(open_vault(ctx), " ".join(query), role=role, session=in_session, limit=limit, fmt=fmt,
                             sort=sort, around=None if full else around, turns=full or around is not None)
        return
    if sort == "oldest":
        raise UsageError("--sort oldest orders session lines (with --session)",
                         hint="use --sort time for records, newest first")

    if not query:
        raise click.MissingParameter(ctx=ctx, param=ctx.command.params[0])
    cache = _cache(ctx)
    vault = open_vault(ctx)
    embedder, vector_note = _embedder(vault, sort)
    chosen = fact_filter(filters)
    # The world (--branch, or the registered clone here) through the code the MCP search tool runs too.
    found = search_world(vault, cache, SearchQuery(" ".join(query), topic=topic, status=status, repo=repo,
                                                   branch=branch, since=since, until=until,
                                                   include_superseded=include_superseded,
                                                   limit=max(limit * 5, 200) if chosen else limit, sort=sort),
                         embedder=embedder, vector_note=vector_note, vector_once=True)
    if chosen:  # only facts pass a fact filter; the first --limit of those that do, in rank order
        found = replace(found, result=replace(found.result, hits=_filtered(vault, found.result.hits, chosen, limit)))
    result, marks = found.result, found.marks
    vault.note_uses([h.id for h in result.hits if h.type == "fact"], repo=found.repo,
                    branch=None if marks is None else marks.setup.world.branch)
    if fmt == "json":
        emit_json(search_json(found, vault.root, sort))
        return
    if result.range is not None:
        click.echo(f"range: {result.range.describe()}")
    for message in result.notes():
        click.echo(f"note: {message}")
    for level in result.levels:
        if " failed" in level or level.startswith("vector: failed"):  # the extra is there and could not answer
            click.echo(f"note: {level}")
    if not result.hits:
        hidden = "" if status or include_superseded else " (superseded and expired are hidden; --include-superseded)"
        click.echo(f"no results{hidden}")
        return
    for h in result.hits:
        day = (h.created or "")[:10]
        about = h.title if h.type in ("topic", "note") else "topics: " + ", ".join(h.topics)
        click.echo(f"{click.style(h.id, bold=True)}  {h.type}  {h.status}  {day}  {about}")
        click.echo(f"  {h.snippet}" + (f"  ({h.explain()})" if (h.terms > 1 and h.tier == 2) or h.tier == 3 else ""))
        click.echo(f"  {h.path}")
        note = None if marks is None else marks.mark(h.id)
        if note:
            click.echo(f"  {note}")


def _filtered(vault: Any, hits: Any, chosen: Any, limit: int) -> tuple[Any, ...]:
    """The fact hits whose records pass the filter, at most ``limit``."""
    from am.errors import AmError

    facts = []
    for hit in hits:
        if hit.type != "fact":
            continue
        try:
            facts.append((hit, vault.get_fact(hit.id)))
        except AmError:
            continue
    kept = {f.id for f in chosen.apply(vault, [f for _, f in facts])}
    return tuple(h for h, f in facts if f.id in kept)[:limit]


def _embedder(vault: Any, sort: str) -> tuple[Any, str]:
    """Return the embedder this machine configured (loaded once a process) and the vector level's note."""
    from am.packs.worldsearch import search_embedder

    return search_embedder(vault.settings, sort)


@click.group("index")
def index() -> None:
    """The cache behind search and lookups (.am/cache/index.sqlite; safe to delete).

    Example: am index status
    """


@index.command("rebuild")
@FORMAT_OPTION
@click.pass_context
def rebuild(ctx: click.Context, fmt: str) -> None:
    """Rebuild the cache from the files (it normally updates itself), and its vectors.

    With a vector level (the am[semantic] extra), every fact and topic is embedded.

    Example: am index rebuild
    """
    began = time.perf_counter()
    cache = _cache(ctx)
    # Opening a missing or damaged cache has just built it from the files: once is enough.
    files = cache.built_files if cache.rebuilt is not None else None
    if files is None:
        files = cache.rebuild(progress=progress_bar("rebuilding"))
    vectors, note = _vectors(open_vault(ctx), cache)
    seconds = time.perf_counter() - began
    if fmt == "json":
        emit_json({"files": files, "seconds": round(seconds, 3), "vectors": vectors, "vector": note})
    else:
        made = f" and {vectors} vectors" if vectors is not None else ""
        click.echo(f"rebuilt the cache from {files} files{made} in {seconds:.1f} s ({note})")


def _vectors(vault: Any, cache: Any) -> tuple[int | None, str]:
    """Embed every fact and topic with this machine's embedder, if one is configured; (count, note)."""
    from am.cache import vectors

    embedder, note = _embedder(vault, "rank")
    if embedder is None:
        return None, note
    try:
        status = vectors.ensure(cache, embedder, progress=progress_bar("embedding"))
        vectors.prepare_once(cache, embedder)  # the file `am search` ranks from without numpy
    except Exception as err:  # noqa: BLE001 - the optional level fails, the cache stands; searches retry
        return None, f"vector: failed ({type(err).__name__}: {err})"
    return status.total - status.missing, note


@index.command("status")
@FORMAT_OPTION
@click.pass_context
def status(ctx: click.Context, fmt: str) -> None:
    """Show what the cache holds: counts, the commit it reflects, files it could not read.

    Example: am index status --format json
    """
    cache = _cache(ctx)
    st = cache.status()
    data = {
        "path": str(st.path), "schema": st.schema, "head": st.head, "records": st.counts, "files": st.files,
        "invalid": [{"path": p, "error": e} for p, e in st.invalid], "uncommitted": st.dirty,
        "duplicate_ids": st.duplicates, "bytes": st.bytes, "rebuilt": cache.rebuilt, "notes": st.notes,
    }
    if fmt == "json":
        emit_json(data)
        return
    counts = ", ".join(f"{n} {t}{'s' * (n != 1)}" for t, n in sorted(st.counts.items())) or "no records"
    click.echo(f"{st.path}  ({st.bytes / 1048576:.1f} MiB, schema {st.schema})")
    click.echo(f"reflects commit {st.head[:10] if st.head else '(none)'} plus the working tree: {counts}")
    if cache.rebuilt:
        click.echo(f"rebuilt just now: {cache.rebuilt}")
    for path in st.dirty:
        click.echo(f"  uncommitted: {path}")
    for path, error in st.invalid:
        click.echo(f"  not a record: {error}")
    if st.notes:
        click.echo(f"  notes (no am frontmatter; searched as notes, never records): {st.notes}")
    for rid in st.duplicates:
        click.echo(f"  duplicate id: {rid}")


COMMANDS = [search, index]
