"""`am topic`: add, rename, show and list topics.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

import click

from am.cli.context import FORMAT_OPTION, describe, emit_json, open_vault, read_text_arg, record_dict, report_write


@click.group()
def topic() -> None:
    """Topics: the projects, tools, people, decisions and concepts facts are about.

    Example: am topic add tool-redis --title Redis --kind tool
    """


@topic.command("add")
@click.argument("topic_id", metavar="[ID]", required=False)
@click.option("--title", required=True, help="The topic's name, in any language.")
@click.option("--kind", default=None, help="project, tool, person, org, decision, session, concept or event "
              "(default: the id's prefix, else concept).")
@click.option("--alias", "aliases", multiple=True, help="Another name (repeatable); Obsidian links by it too.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--body", default="", help="Text of the note, or - to read it from standard input.")
@FORMAT_OPTION
@click.pass_context
def add(ctx: click.Context, topic_id: str | None, title: str, kind: str | None, aliases: tuple[str, ...],
        tags: tuple[str, ...], body: str, fmt: str) -> None:
    """Add a topic (one commit). The id defaults to <kind>-<slug of title>.

    Example: am topic add project-alpha --title "Alpha service" --alias Alpha
    """
    from am.records.model import TOPIC_KINDS

    if kind is None:
        prefix = (topic_id or "").split("-", 1)[0]
        kind = prefix if prefix in TOPIC_KINDS else "concept"
    vault = open_vault(ctx)
    result = vault.add_topic(title=title, kind=kind, id=topic_id, aliases=aliases, tags=tags,
                             body=read_text_arg(body))
    report_write(result, fmt, "added")


@topic.command("rename")
@click.argument("old_id", metavar="OLD")
@click.argument("new_id", metavar="NEW")
@click.option("--title", default=None, help="A new title too (the old one becomes an alias).")
@FORMAT_OPTION
@click.pass_context
def rename(ctx: click.Context, old_id: str, new_id: str, title: str | None, fmt: str) -> None:
    """Rename a topic: move its file and rewrite every reference to it, in one commit.

    Facts' topics, relations' ends (and their ids) and [[wikilinks]] in bodies
    follow; each file keeps its own form.

    Example: am topic rename project-alpha project-alpha-api --title "Alpha API"
    """
    report_write(open_vault(ctx).rename_topic(old_id, new_id, title=title), fmt, f"renamed {old_id} to")


@topic.command("show")
@click.argument("topic_id", metavar="ID")
@FORMAT_OPTION
@click.pass_context
def show(ctx: click.Context, topic_id: str, fmt: str) -> None:
    """Show one topic, named by its id, its title or an alias.

    Example: am topic show project-alpha
    """
    vault = open_vault(ctx)
    from am.records.model import Topic

    from am.writes.lookup import topic_named

    path, record = vault.get_typed(topic_named(vault.files, topic_id), Topic, "topic")  # an id, title or alias
    if fmt == "json":
        emit_json(record_dict(record, path))
    else:
        click.echo(describe(record, path))


_KINDS = ["project", "tool", "person", "org", "decision", "session", "concept", "event"]


@topic.command("list")
@click.option("--kind", default=None, type=click.Choice(_KINDS), help="Only topics of this kind.")
@FORMAT_OPTION
@click.pass_context
def list_(ctx: click.Context, kind: str | None, fmt: str) -> None:
    """List topics, sorted by id.

    Example: am topic list --kind tool
    """
    vault = open_vault(ctx)
    topics = vault.list_topics(kind=kind)
    if fmt == "json":
        emit_json([record_dict(t) for t in topics])
        return
    for t in topics:
        aliases = f"  ({', '.join(t.aliases)})" if t.aliases else ""
        click.echo(f"{t.id:<32} {t.kind:<9} {t.title}{aliases}")
    if not topics:
        click.echo("no topics yet; add one with: am topic add ID --title TITLE", err=True)
