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
@click.option("--secrets", "secrets", is_flag=True,
              help="Scan every version of every record in history for credentials (and say how to purge them).")
@FORMAT_OPTION
@click.pass_context
def check(ctx: click.Context, strict: bool, show_all: bool, secrets: bool, fmt: str) -> None:
    """Check every record: schemas, relation types, ids, links, supersessions.

    Errors make the exit code non-zero; warnings do too with --strict; notes
    (a file kept in an unusual folder) never do. Records whose world cannot be
    resolved here (a repo not registered on this machine, a branch or commit
    its clone lacks) are counted on one line per repo or branch with the fix;
    --all (and --format json) lists each.

    Example: am check --strict --format json
    """
    if secrets:
        _secrets(ctx, fmt)
        return
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


def _secrets(ctx: click.Context, fmt: str) -> None:
    """am check --secrets: exit 1 when a version in history holds a suspected credential."""
    from am.upkeep.historysecrets import secrets_in_history

    found = secrets_in_history(open_vault(ctx))
    if fmt == "json":
        emit_json({"secrets": [s.to_json() for s in found]})
    else:
        for s in found:
            now = "still in the record" if s.current else "in history only"
            click.echo(f"{s.record}: {s.kind} ({s.excerpt}), written in {s.commit[:10]}, {now}")
        if found:
            ids = " ".join(sorted({s.record for s in found}))
            click.echo(f"to take them out of history: am purge {ids} --reason \"...\" (docs/forget.md)", err=True)
        else:
            click.echo("ok: no record version in history looks like it holds a credential")
    ctx.exit(1 if found else 0)


COMMANDS = [check]
