"""`am assert`, `am due`, `am coverage`: memory in CI and upkeep, read against the code's history.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

from typing import Any

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault


@click.command("assert")
@click.option("--repo", default=None, metavar="NAME", help="The world's code repository (default: .am/checks.yml).")
@click.option("--branch", default=None, help="The world's branch (default: the clone's current branch).")
@click.option("--no-contested", is_flag=True, help="Fail if a contested fact holds there.")
@click.option("--max-stale-days", type=click.IntRange(0), default=None, metavar="N",
              help="Fail if a fact has been stale there for more than N days.")
@click.option("--holds", "holds", multiple=True, metavar="ID", help="Fail unless fact ID holds there (repeatable).")
@click.option("--no-orphan-paths", is_flag=True, help="Fail if a holding fact watches a path the commit lacks.")
@FORMAT_OPTION
@click.pass_context
def assert_(ctx: click.Context, repo: str | None, branch: str | None, no_contested: bool,
            max_stale_days: int | None, holds: tuple[str, ...], no_orphan_paths: bool, fmt: str) -> None:
    """Check what memory says in a world, for CI: exit 1 naming each offending fact, 0 when all hold.

    With --repo, the flags name the checks of that world; without, the checks
    come from .am/checks.yml (a list of worlds and their rules; docs/ci.md).
    Exit 2 is a usage error, never a failed check.

    Example: am assert --repo project-alpha --branch main --no-contested --max-stale-days 30
    """
    from am.clock import now
    from am.errors import UsageError
    from am.packs.asserts import CHECKS_FILE, Check, load_checks, run_check

    vault = open_vault(ctx)
    flags = Check(repo or "", branch, no_contested, max_stale_days, holds, no_orphan_paths)
    if repo is not None:
        if not flags.asks():
            raise UsageError("am assert with --repo needs a rule to check",
                             hint="add --no-contested, --max-stale-days N, --holds ID or --no-orphan-paths")
        checks = [flags]
    else:
        if flags.asks() or branch is not None:
            raise UsageError("the rules of a world need its --repo", hint="add --repo NAME")
        checks = load_checks(vault.root)
        if not checks:
            raise UsageError(f"nothing to check: no --repo given and no {CHECKS_FILE}",
                             hint="am assert --repo NAME --no-contested, or write checks in " + CHECKS_FILE)
    moment = now()
    outcomes = [run_check(vault, check, moment) for check in checks]
    failures = [f for o in outcomes for f in o.failures]
    if fmt == "json":
        emit_json({"ok": not failures, "checks": [{"world": o.check.label, "judged": o.judged,
                                                   "failures": [f.to_json() for f in o.failures]}
                                                  for o in outcomes]})
    else:
        for o in outcomes:
            state = "ok" if not o.failures else f"{len(o.failures)} failed"
            click.echo(f"{o.check.label}: {state} ({o.judged} facts hold)")
            for f in o.failures:
                click.echo(f"  FAIL {f.rule}: {f.fact}" + (f"  {f.text[:70]}" if f.text else ""))
                click.echo(f"       {f.why}")
    if failures:
        ctx.exit(1)


@click.command("due")
@click.option("--repo", default=None, metavar="NAME", help="Only this code repository's world.")
@click.option("--branch", default=None, help="The world's branch (default: the clone's current branch).")
@click.option("--days", type=click.IntRange(0), default=30, show_default=True,
              help="An observation or a pending proposal older than this is due.")
@FORMAT_OPTION
@click.pass_context
def due(ctx: click.Context, repo: str | None, branch: str | None, days: int, fmt: str) -> None:
    """List the facts to look at again, each with the command that settles it (in place of decay).

    Stale facts; facts watching paths that are gone since they were observed; facts
    packs use often but last observed more than --days ago; proposals waiting
    longer than --days. Without --repo: every registered clone the vault names, on
    its current branch.

    Example: am due --repo project-alpha --branch main
    """
    from am.clock import now
    from am.packs.due import due_in_world, pending_due

    vault = open_vault(ctx)
    moment = now()
    items = []
    for name, b in _worlds(vault, repo, branch):
        items += due_in_world(vault, name, b, moment, days)
    items += pending_due(vault, moment, days)
    if fmt == "json":
        emit_json({"due": [i.to_json() for i in items]})
        return
    if not items:
        click.echo("nothing is due")
        return
    for i in items:
        click.echo(f"{i.kind:<12} {i.fact}  [{i.world}]  {i.text[:60]}")
        click.echo(f"{'':<12} {i.why}")
        click.echo(f"{'':<12} settle: {i.settle}")


def _worlds(vault: Any, repo: str | None, branch: str | None) -> list[tuple[str, str | None]]:
    """The worlds am due looks at: the one given, else each registered clone the vault names."""
    if repo is not None:
        return [(repo, branch)]
    from am.registry import Registry

    registered = Registry.load().repos
    return [(name, branch) for name in sorted(vault.known_repos()) if name in registered]


@click.command("coverage")
@click.option("--repo", required=True, metavar="NAME", help="The registered clone to read.")
@click.option("--branch", default=None, help="The world's branch (default: the clone's current branch).")
@click.option("--commit", "commit_", default=None, help="The world's commit.")
@click.option("--depth", type=click.IntRange(1, 8), default=1, show_default=True, help="Folder depth of the counts.")
@FORMAT_OPTION
@click.pass_context
def coverage(ctx: click.Context, repo: str, branch: str | None, commit_: str | None, depth: int, fmt: str) -> None:
    """Show which files of a clone the facts holding there watch, per folder, and which watched paths are gone.

    Example: am coverage --repo project-alpha --branch main --depth 2
    """
    from am.packs.coverage import coverage_of

    found = coverage_of(open_vault(ctx), repo, branch, commit_, depth=depth)
    if fmt == "json":
        emit_json(found.to_json())
        return
    share = f"{100 * len(found.covered) / found.files:.0f}%" if found.files else "-"
    click.echo(f"{found.label}: {len(found.covered)} of {found.files} files watched ({share}) "
               f"by {found.facts_watching} facts")
    for folder, n, c in found.folders:
        click.echo(f"  {folder:<40} {c:>5} / {n:<5}" + ("  not watched" if c == 0 else ""))
    for fid, paths in found.orphans:
        click.echo(f"  gone: {fid} watches {', '.join(paths)}")


COMMANDS: list[Any] = [assert_, due, coverage]
