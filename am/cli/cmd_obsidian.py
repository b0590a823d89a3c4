"""`am obsidian setup`: templates and settings that make a vault work well in Obsidian.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault


@click.group("obsidian")
def obsidian() -> None:
    """Obsidian: the app people read and fix memory in.

    Example: am obsidian setup
    """


@obsidian.command("setup")
@FORMAT_OPTION
@click.pass_context
def setup(ctx: click.Context, fmt: str) -> None:
    """Add Obsidian templates (topic, fact, relation) and settings the vault lacks, in one commit.

    Writes templates/am-*.md, turns on the core Templates plugin, hides .am/
    from search and graph, and sets property_links and readable_names in
    .am/vault.yml. Settings a person made are never changed; missing keys are added.

    Example: am obsidian setup
    """
    commit, paths = open_vault(ctx).setup_obsidian()
    if fmt == "json":
        emit_json({"commit": commit, "paths": paths})
        return
    for path in paths:
        click.echo(f"wrote {path}")
    click.echo(f"in commit {commit[:10]}" if commit else "nothing to do: the vault is set up for Obsidian")


COMMANDS = [obsidian]
