"""`am recover`, `am doctor`: getting memory back and keeping it honest.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations


import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault


@click.command("recover")
@click.option("--apply", "apply_", is_flag=True, help="Restore the lost commits (default: only list them).")
@click.option("--reflog-only", is_flag=True, help="Read only the reflogs, not every object (faster, finds less).")
@FORMAT_OPTION
@click.pass_context
def recover(ctx: click.Context, apply_: bool, reflog_only: bool, fmt: str) -> None:
    """Find am commits no branch reaches any more (after a reset or bad rebase) and restore them.

    Restoring replays the lost am commits on the current branch in order, each
    as a new commit (a cherry-pick; history is never rewritten). Commits made
    by hand in the same lost history are listed and reported, not replayed,
    except a git revert of a lost am commit, which is replayed after it.

    Example: am recover --apply
    """
    from am.upkeep.recover import find_lost, restore

    vault = open_vault(ctx)
    lost = find_lost(vault, scan_objects=not reflog_only, include_manual=True)
    results = restore(vault, lost) if apply_ and lost else []
    if fmt == "json":
        emit_json({"lost": [c.to_json() for c in lost], "restored": [r.to_json() for r in results]})
    else:
        for c in lost:
            by_hand = ("" if not c.manual else "  by hand: not replayed" if c.reverts is None
                       else f"  by hand: git revert of {c.reverts[:10]}, replayed after it")
            by_hand += f"  rewritten by {c.rewritten}" if c.rewritten else ""
            click.echo(f"{c.commit[:10]}  {c.time}  {c.actor:<14} {c.op:<16} {', '.join(c.records)}  "
                       f"({c.found_by}){by_hand}")
        mine = sum(not c.manual for c in lost)
        reverts = sum(c.manual and c.replayed for c in lost)
        if not mine:
            click.echo("no lost am commits")
        elif not apply_:
            also = f" (and {reverts} git revert{'s' if reverts > 1 else ''} of them)" if reverts else ""
            them = "them" if mine + reverts > 1 else "it"
            click.echo(f"{mine} lost am commit{'s' * (mine != 1)}{also}; restore {them} with: am recover --apply")
        for r in results:
            new = r.commit[:10] if r.commit else "-"
            click.echo(f"{r.outcome:<15} {r.lost[:10]} -> {new} {r.detail}")
    if any(r.outcome == "conflict" for r in results):
        ctx.exit(9)


# What --fix does for a finding, where "repairs it" would not say: an orphan is a write that was never
# acknowledged, which --fix commits (the killed command may have been run again since).
_FIXES = {"orphan": "am doctor --fix commits it; delete the file instead if the write was made again since"}


@click.command("doctor")
@click.option("--fix", is_flag=True, help="Repair what is safe to repair.")
@FORMAT_OPTION
@click.pass_context
def doctor(ctx: click.Context, fix: bool, fmt: str) -> None:
    """Report (and with --fix repair) stale locks, debris of interrupted writes, the cache, lost commits.

    It also reports every error am check finds (kind `check`): those are
    files to fix by hand, and doctor is never "all good" while check fails.

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
        trouble = None
        if not fix and any(f.fixable for f in findings):
            from am.errors import storage_trouble

            trouble = storage_trouble(vault.root)  # a repair writes: on a full disk it would fail
        for f in findings:
            hint = ""
            if f.fixable and not fix:
                hint = f" ({_FIXES.get(f.kind, 'am doctor --fix repairs it')})"
                if trouble:
                    hint = f" ({trouble}: make room, then {_FIXES.get(f.kind, 'am doctor --fix repairs it')})"
            click.echo(f"{f.kind}: {f.path}: {f.message}{hint}")
        if not findings:
            click.echo("all good")
    ctx.exit(1 if any(f.fixable or f.kind in ("check", "lost-conflict") for f in findings) else 0)


COMMANDS = [recover, doctor]
