"""`am recover`, `am doctor`, `am stale`: getting memory back and keeping it honest."""

from __future__ import annotations

from pathlib import Path

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault


@click.command("recover")
@click.option("--apply", "apply_", is_flag=True, help="Restore the lost commits (default: only list them).")
@click.option("--reflog-only", is_flag=True, help="Read only the reflogs, not every object (faster, finds less).")
@FORMAT_OPTION
@click.pass_context
def recover(ctx: click.Context, apply_: bool, reflog_only: bool, fmt: str) -> None:
    """Find am commits no branch reaches any more (after a reset or bad rebase) and restore them.

    Restoring replays each lost commit on the current branch as a new commit
    (a cherry-pick; history is never rewritten).

    Example: am recover --apply
    """
    from am.upkeep.recover import find_lost, restore

    vault = open_vault(ctx)
    lost = find_lost(vault, scan_objects=not reflog_only)
    results = restore(vault, lost) if apply_ and lost else []
    if fmt == "json":
        emit_json({"lost": [c.to_json() for c in lost], "restored": [r.to_json() for r in results]})
    else:
        for c in lost:
            click.echo(f"{c.commit[:10]}  {c.time}  {c.actor:<14} {c.op:<16} {', '.join(c.records)}  ({c.found_by})")
        if not lost:
            click.echo("no lost am commits")
        elif not apply_:
            click.echo(f"{len(lost)} lost am commits; restore them with: am recover --apply")
        for r in results:
            new = r.commit[:10] if r.commit else "-"
            click.echo(f"{r.outcome:<15} {r.lost[:10]} -> {new} {r.detail}")
    if any(r.outcome == "conflict" for r in results):
        ctx.exit(9)


@click.command("doctor")
@click.option("--fix", is_flag=True, help="Repair what is safe to repair.")
@FORMAT_OPTION
@click.pass_context
def doctor(ctx: click.Context, fix: bool, fmt: str) -> None:
    """Report (and with --fix repair) stale locks, debris of interrupted writes, the cache, lost commits.

    --fix moves stale Git locks aside, removes am's half-written temp files,
    updates Git's index for committed files, commits orphan record files a
    killed write left (only valid files in am's own form), rebuilds a bad cache
    and restores lost am commits. Other uncommitted edits are left alone.

    Example: am doctor --fix
    """
    from am.upkeep.recover import diagnose, repair

    vault = open_vault(ctx)
    done = repair(vault) if fix else []
    findings = diagnose(vault)
    if fmt == "json":
        emit_json({"fixed": done, "findings": [f.to_json() for f in findings]})
    else:
        for line in done:
            click.echo(f"fixed: {line}")
        for f in findings:
            hint = " (am doctor --fix repairs it)" if f.fixable and not fix else ""
            click.echo(f"{f.kind}: {f.path}: {f.message}{hint}")
        if not findings:
            click.echo("all good")
    ctx.exit(1 if any(f.fixable for f in findings) else 0)


@click.command("stale")
@click.option("--repo", required=True, help="The code repository's name (the facts' repo:).")
@click.option("--since", default=None, help="Code revision to diff from (default: where the last check stopped, "
                                           "else the parent of HEAD).")
@click.option("--until", default=None, help="Code revision to diff to (default: HEAD).")
@click.option("--code-repo", "code_repo", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The local clone (default: the one registered for --repo).")
@click.option("--dry-run", is_flag=True, help="Only list the facts that would be marked.")
@FORMAT_OPTION
@click.pass_context
def stale(ctx: click.Context, repo: str, since: str | None, until: str | None, code_repo: Path | None,
          dry_run: bool, fmt: str) -> None:
    """Mark facts whose watched paths changed in the code repository pending-review (one commit).

    Example: am stale --repo project-alpha --since v1.2.0
    """
    from am.worlds.stale import WATCH_ACTOR, code_root_of, mark_stale
    from am.vault import Vault

    opts = ctx.obj
    root = code_root_of(repo, str(code_repo) if code_repo else None)
    vault = ctx.with_resource(Vault.open(opts.vault_arg, actor=opts.actor or WATCH_ACTOR))
    result = mark_stale(vault, code_root=root, repo=repo, since=since, until=until, remember=not dry_run,
                        dry_run=dry_run)
    if fmt == "json":
        emit_json(result.to_json())
        return
    verb = "would mark" if dry_run else "marked"
    click.echo(f"{len(result.changed)} paths changed in {repo} "
               f"{(result.since or 'start')[:10]}..{(result.until or '')[:10]}; {verb} {len(result.marked)} facts"
               + (f" in vault commit {result.commit[:10]}" if result.commit else ""))
    for fid in result.marked:
        click.echo(f"  {fid}")
    for line in result.skipped:
        click.echo(f"  skipped {line}", err=True)


COMMANDS = [recover, doctor, stale]
