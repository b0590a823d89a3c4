"""`am now`: what is hot in a world (pinned, most used, recent topics, review items, the last session).

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

import click

from am.cli.context import open_vault


@click.command("now")
@click.option("--repo", default=None, metavar="NAME",
              help="The code repository of the world (default: the registered repo of the current folder).")
@click.option("--branch", default=None, help="The branch of the world (default: the clone's current branch).")
@click.option("--commit", "commit_", default=None, help="The commit of the world (default: the branch tip).")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True,
              help="Markdown for an agent's context, or JSON for programs.")
@click.pass_context
def now(ctx: click.Context, repo: str | None, branch: str | None, commit_: str | None, fmt: str) -> None:
    """Print what is hot in a world in at most 50 lines: pinned facts, the facts most used this
    week, topics touched recently, open review items and the last session.

    The same vault state, use counts and day give the same bytes; reading it counts no use.

    Example: am now --repo project-alpha --branch main
    """
    from am.cli.context import here_world
    from am.packs.now import render_now_json, render_now_markdown, what_now

    vault = open_vault(ctx)
    repo, branch, commit_ = here_world(repo, branch, commit_)
    report = what_now(vault, repo=repo, branch=branch, commit=commit_)
    click.echo(render_now_json(report) if fmt == "json" else render_now_markdown(report), nl=False)


COMMANDS = [now]
