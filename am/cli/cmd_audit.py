"""`am log`, `am history`, `am blame`, `am undo`: the audit trail is Git's own history.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import json

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault


@click.command("log")
@click.option("--actor", default=None, help="Only commits by this actor (the Am-Actor trailer, else the author).")
@click.option("--op", default=None, help="Only this operation, e.g. fact.supersede, or a prefix such as fact.")
@click.option("--record", "record_id", default=None, metavar="ID", help="Only commits that wrote this record.")
@click.option("--since", default=None,
              help="Only commits since this time (ISO date, or 'yesterday', 'last Friday', '2 hours ago', '上周五').")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=None, help="At most this many commits.")
@FORMAT_OPTION
@click.pass_context
def log(ctx: click.Context, actor: str | None, op: str | None, record_id: str | None, since: str | None,
        limit: int | None, fmt: str) -> None:
    """List the vault's writes, newest first, from the commits' trailers.

    Hand commits (Obsidian, git CLI) show as op 'manual' with the records they changed.

    Example: am log --actor claude-code --op fact.supersede --since "last week"
    """
    from am.upkeep.audit import log_entries, parse_since

    when = parse_since(since) if since else None
    entries = log_entries(open_vault(ctx), actor=actor, op=op, record=record_id, since=when, limit=limit)
    if fmt == "json":
        emit_json([e.to_json() for e in entries])
        _shallow(ctx, cut=limit is not None and len(entries) >= limit)
        return
    for e in entries:
        records = ", ".join(e.records[:4]) + (f" +{len(e.records) - 4}" if len(e.records) > 4 else "")
        click.echo(f"{e.commit[:10]}  {e.time}  {e.actor:<14} {e.op:<16} {records}")
    _shallow(ctx, cut=limit is not None and len(entries) >= limit)
    if not entries:
        read = f" since {when.isoformat()} (read from {since!r})" if when is not None else ""
        click.echo(f"no commits match{read}" + (": nothing was committed in that range" if when else ""), err=True)


def _shallow(ctx: click.Context, *, cut: bool) -> None:
    """Say on stderr where a shallow clone's history stops, unless the listing ended before it."""
    from am.upkeep.audit import shallow_note

    note = None if cut else shallow_note(open_vault(ctx))
    if note:
        click.echo(f"note: {note}", err=True)


@click.command("history")
@click.argument("record_id", metavar="ID")
@FORMAT_OPTION
@click.pass_context
def history(ctx: click.Context, record_id: str, fmt: str) -> None:
    """Show every version of a record across Git history, and its supersede chain.

    Example: am history fact-alpha-getuser-main
    """
    from am.upkeep.audit import record_history

    h = record_history(open_vault(ctx), record_id)
    if h.shallow:
        click.echo(f"note: {h.shallow}", err=True)
    if fmt == "json":
        emit_json(h.to_json())
        return
    if len(h.chain) > 1:
        click.echo("supersede chain: " + " -> ".join(h.chain))
    for v in h.versions:
        state = "deleted" if v.deleted else str(v.meta.get("status", ""))
        click.echo(f"{v.commit[:10]}  {v.time}  {v.actor:<14} {v.op:<16} {state:<14} {v.path}")


@click.command("blame")
@click.argument("record_id", metavar="ID")
@FORMAT_OPTION
@click.pass_context
def blame(ctx: click.Context, record_id: str, fmt: str) -> None:
    """Show which actor and commit set each field of a record.

    Example: am blame f-20261002-0915-c4f1a5
    """
    from am.upkeep.audit import blame as blame_fields

    from am.upkeep.audit import SHALLOW_OP

    lines = blame_fields(open_vault(ctx), record_id)
    if any(b.op == SHALLOW_OP for b in lines):
        _shallow(ctx, cut=False)
    if fmt == "json":
        emit_json([b.to_json() for b in lines])
        return
    for b in lines:
        value = json.dumps(b.value, ensure_ascii=False)
        if len(value) > 60:
            value = value[:59] + "…"
        click.echo(f"{b.commit[:10]}  {b.actor:<14} {b.field:<14} {value}")


@click.command("undo")
@click.argument("commit")
@FORMAT_OPTION
@click.pass_context
def undo(ctx: click.Context, commit: str, fmt: str) -> None:
    """Undo one write: revert COMMIT as a new commit; refuse if later changes conflict.

    Undoing an add removes the record from the tree (Git history keeps it);
    undoing a supersede makes the old fact active again.

    Example: am undo 3f0e99a
    """
    from am.upkeep.audit import AlreadyUndoneError
    from am.upkeep.audit import undo as undo_commit

    try:
        result = undo_commit(open_vault(ctx), commit)
    except AlreadyUndoneError as done:  # what was asked already holds: not a failure a script should stop on
        if fmt == "json":
            emit_json({"undone": False, "already": True, "note": done.message})
        else:
            click.echo(f"note: {done.message}; nothing to do")
        return
    if fmt == "json":
        emit_json(result.to_json())
        return
    click.echo(f"undid {result.reverted[:10]} in commit {result.commit[:10]}: {', '.join(result.paths)}")


COMMANDS = [log, history, blame, undo]
