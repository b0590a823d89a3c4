"""`am check`: validate the whole vault against the format."""

from __future__ import annotations

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault


@click.command("check")
@click.option("--strict", is_flag=True, help="Count warnings (dangling links, unknown topics) as errors.")
@FORMAT_OPTION
@click.pass_context
def check(ctx: click.Context, strict: bool, fmt: str) -> None:
    """Check every record: schemas, relation types, ids, links, supersessions.

    Errors make the exit code non-zero; warnings do too with --strict; notes
    (a file kept in an unusual folder) never do.

    Example: am check --strict --format json
    """
    from am.upkeep.check import check_vault

    report = check_vault(open_vault(ctx))
    if fmt == "json":
        emit_json(report.to_json(strict=strict))
    else:
        for issue in report.issues:
            click.echo(issue.describe())
        summary = (f"{report.files} files, {report.records} records: {len(report.errors)} errors, "
                   f"{len(report.warnings)} warnings, {len(report.notes)} notes")
        click.echo(("ok: " if report.is_ok(strict=strict) else "failed: ") + summary,
                   err=not report.is_ok(strict=strict))
    ctx.exit(report.exit_code(strict=strict))


COMMANDS = [check]
