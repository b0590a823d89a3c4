"""`am check`: validate the whole vault against the format.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault


@click.command("check")
@click.option("--strict", is_flag=True, help="Count warnings (dangling links, unknown topics) as errors.")
@click.option("--all", "show_all", is_flag=True,
              help="List every unresolved-world warning, not one line per repo or branch with a count.")
@FORMAT_OPTION
@click.pass_context
def check(ctx: click.Context, strict: bool, show_all: bool, fmt: str) -> None:
    """Check every record: schemas, relation types, ids, links, supersessions.

    Errors make the exit code non-zero; warnings do too with --strict; notes
    (a file kept in an unusual folder) never do. Records whose world cannot be
    resolved here (a repo not registered on this machine, a branch or commit
    its clone lacks) are counted on one line per repo or branch with the fix;
    --all (and --format json) lists each.

    Example: am check --strict --format json
    """
    from am.upkeep.check import check_vault

    report = check_vault(open_vault(ctx))
    if fmt == "json":
        emit_json(report.to_json(strict=strict))
    else:
        if show_all:
            lines = [issue.describe() for issue in report.issues]
        else:
            from am.upkeep.worldcheck import group_world_issues

            lines = group_world_issues(report.issues)
        for line in lines:
            click.echo(line)
        summary = (f"{report.files} files, {report.records} records: {len(report.errors)} errors, "
                   f"{len(report.warnings)} warnings, {len(report.notes)} notes")
        click.echo(("ok: " if report.is_ok(strict=strict) else "failed: ") + summary,
                   err=not report.is_ok(strict=strict))
    ctx.exit(report.exit_code(strict=strict))


COMMANDS = [check]
