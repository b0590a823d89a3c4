"""`am relation`: typed edges between topics and facts.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault, read_text_arg, record_dict, report_write


@click.group()
def relation() -> None:
    """Relations: typed edges, exactly seven types.

    depends-on, part-of, belongs-to, authored-by, references, conflicts-with, supersedes.

    Example: am relation add project-alpha depends-on tool-redis --note "sessions are cached there"
    """


@relation.command("add")
@click.argument("from_id", metavar="FROM")
@click.argument("rel", metavar="REL")
@click.argument("to_id", metavar="TO")
@click.option("--note", default="", help="Why the edge holds (the file's body), or - for standard input.")
@click.option("--allow-secret", is_flag=True, help="Write even if the note looks like a credential.")
@FORMAT_OPTION
@click.pass_context
def add(ctx: click.Context, from_id: str, rel: str, to_id: str, note: str, allow_secret: bool, fmt: str) -> None:
    """Add a relation FROM REL TO (one commit).

    Example: am relation add project-alpha depends-on tool-redis
    """
    vault = open_vault(ctx)
    result = vault.add_relation(from_id, rel, to_id, note=read_text_arg(note), allow_secrets=allow_secret)
    report_write(result, fmt, "added")


@relation.command("list")
@click.option("--topic", default=None, help="Only relations from or to this record.")
@click.option("--all", "show_all", is_flag=True, help="Include expired relations.")
@FORMAT_OPTION
@click.pass_context
def list_(ctx: click.Context, topic: str | None, show_all: bool, fmt: str) -> None:
    """List relations.

    Example: am relation list --topic project-alpha
    """
    vault = open_vault(ctx)
    found = vault.list_relations(topic=topic)
    if topic is not None and not found:  # a typo would read as "no relations"
        from am.writes.lookup import check_record_named

        check_record_named(vault.files, topic)
    rels = [r for r in found if show_all or r.status != "expired"]
    if fmt == "json":
        emit_json([record_dict(r) for r in rels])
        return
    for r in rels:
        flag = "" if r.status == "active" else f"  [{r.status}]"
        click.echo(f"{r.from_} --{r.rel}--> {r.to}{flag}")


@relation.command("expire")
@click.argument("relation_id", metavar="ID")
@click.option("--reason", default=None, help="Why the edge no longer holds.")
@FORMAT_OPTION
@click.pass_context
def expire(ctx: click.Context, relation_id: str, reason: str | None, fmt: str) -> None:
    """Mark a relation expired (it stays in the vault and in history).

    Example: am relation expire project-alpha--depends-on--tool-redis --reason "moved to memcached"
    """
    vault = open_vault(ctx)
    report_write(vault.expire_relation(relation_id, reason=reason), fmt, "expired")
