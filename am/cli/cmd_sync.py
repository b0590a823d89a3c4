"""`am sync`, `am merge BRANCH` and `am merge-driver`: the doors into am/sync/ and the record merge.

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault
from am.cli.sync_text import report_lines


def _report(report: Any, fmt: str) -> None:
    if fmt == "json":
        emit_json(report.to_json())
        return
    for line in report_lines(report):
        click.echo(line)


@click.command("sync")
@click.argument("remote", required=False)
@click.option("--dry-run", is_flag=True, help="Fetch and say what would be merged and contested; change nothing.")
@click.option("--set-upstream", "set_upstream", metavar="URL", default=None,
              help="Point REMOTE (default origin) at URL and make it this branch's upstream, then sync.")
@FORMAT_OPTION
@click.pass_context
def sync(ctx: click.Context, remote: str | None, dry_run: bool, set_upstream: str | None, fmt: str) -> None:
    """Fetch the vault's remote, merge record by record, and push without force.

    A fast-forward just moves the branch; diverged histories get one merge
    commit (Am-Op: sync.merge) whose trailers name every record decided. A
    fact whose text changed on both sides is kept twice, both contested. When
    the remote moved during the push, am fetches and merges again. Credentials
    are Git's own (credential helpers, ssh agent); am stores none.

    Example: am sync --set-upstream git@github.com:me/memory.git
    """
    from am.sync import sync as run_sync

    vault = open_vault(ctx)
    report = run_sync(vault, remote, dry_run=dry_run, set_upstream=set_upstream)
    _report(report, fmt)
    _lost_by_a_reset(vault)
    if report.action != "up-to-date" or report.pushed:  # a no-op sync (am/cli/entry.py's too) says nothing more
        _no_driver(vault.root)


def _no_driver(root: Path) -> None:
    """Say so when this clone has no record merge driver: a git pull here would leave conflict markers."""
    from am.upkeep.merges import driver_missing

    if driver_missing(root):
        click.echo("note: this clone has no am merge driver (a git clone carries none): am sync merges records, but "
                   "a git pull here merges them as text and leaves conflict markers; run am hooks install once "
                   "(am doctor lists what else the clone lacks)", err=True)


def _lost_by_a_reset(vault: Any) -> None:
    """Say so when the branch was last moved by a git reset that left am commits off it (none is pushed again)."""
    from am.git.refs import reset_last

    store = vault.store
    branch = store.head_ref().removeprefix("refs/heads/")
    if not reset_last(store.gitdir, branch):
        return
    from am.upkeep.recover import find_lost

    lost = [c for c in find_lost(vault, scan_objects=False) if not c.manual]
    if lost:
        click.echo(f"warning: {len(lost)} am commit{'s' * (len(lost) != 1)} left {branch} in a git reset and "
                   f"{'are' if len(lost) != 1 else 'is'} not on the remote either (first: {lost[0].commit[:10]} "
                   f"{lost[0].subject}); am recover lists them, am recover --apply restores them", err=True)


@click.command("merge")
@click.argument("branch")
@click.option("--dry-run", is_flag=True, help="Say what would be merged and contested; change nothing.")
@FORMAT_OPTION
@click.pass_context
def merge(ctx: click.Context, branch: str, dry_run: bool, fmt: str) -> None:
    """Fold a vault branch (an agent's memory kept apart) into the current branch, record by record.

    Uses the same merge as am sync: a fast-forward, or one merge commit.

    Example: am merge agent-codex
    """
    from am.sync import merge_branch

    report = merge_branch(open_vault(ctx), branch, dry_run=dry_run)
    _report(report, fmt)


@click.command("merge-driver")
@click.argument("base", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("ours", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("theirs", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("path", required=False)
def merge_driver(base: Path, ours: Path, theirs: Path, path: str | None) -> None:
    """Merge one record file for Git (a merge driver: git passes %O %A %B %P); the result replaces OURS.

    Registered by am hooks install in .gitattributes and merge.am.driver, so
    git merge, git pull and obsidian-git merge records as am sync does. Exits
    0 when merged; 1 (OURS left as it was, Git reports a conflict) when a side
    is not a readable record; 1 with Git's conflict markers when a fact's text
    changed on both sides outside a merge or rebase (cherry-pick, revert,
    stash pop), where no hook commits the other version as a contested fact;
    1 (OURS holds Git's line merge, a conflict) when the vault on either side
    is of a format newer than this am writes.

    Example: git config merge.am.driver 'am merge-driver %O %A %B %P'
    """
    from am.errors import AmError
    from am.records.codec import decode_record_bytes
    from am.records.merge import is_record_path, merge_record
    from am.upkeep.merges import check_merge_formats

    name = path or ours.name
    if path is not None and not is_record_path(path):
        _text_merge(base, ours, theirs)  # not a record: Git's own line merge, as if no driver were set
    try:
        check_merge_formats(Path.cwd())
    except AmError as err:
        # A driver cannot stop Git's merge; a non-zero exit makes the file a conflict, and Git keeps what the
        # driver left in OURS: Git's own line merge, so the other side's change is not silently dropped.
        click.echo(f"am merge-driver: {err.message}; upgrade am to merge its records. {name} holds Git's line "
                   f"merge, marked as a conflict: check it and git add it, or git merge --abort", err=True)
        _text_merge(base, ours, theirs, conflict=True)
    try:
        old = base.read_bytes()
        result = merge_record(name, decode_record_bytes(old, path=name) if old else None,
                              decode_record_bytes(ours.read_bytes(), path=name),
                              decode_record_bytes(theirs.read_bytes(), path=name))
    except AmError as err:
        click.echo(f"am merge-driver: {err}", err=True)
        sys.exit(1)
    if (result.extra or result.rivals) and not _split_completed_by_a_hook():
        click.echo(f"am merge-driver: {name}: changed on both sides; only a git merge or rebase has a hook that "
                   "commits the other version as a contested fact, so Git's conflict markers stand: edit the "
                   "file, or use git merge", err=True)
        _text_merge(base, ours, theirs)
    ours.write_bytes(result.text.encode("utf-8"))
    for d in result.decisions:
        if d.how == "split":
            click.echo(f"am: {d.id}: {d.detail}", err=True)
    sys.exit(0)


def _text_merge(base: Path, ours: Path, theirs: Path, *, conflict: bool = False) -> None:
    """Git's own line merge into OURS (conflict markers and all), and exit as a driver does (``conflict``: 1
    even where the lines merged cleanly, so Git stops for the user)."""
    proc = subprocess.run(["git", "merge-file", "-L", "ours", "-L", "base", "-L", "theirs",
                           str(ours), str(base), str(theirs)], check=False)
    sys.exit(1 if conflict or proc.returncode != 0 else 0)


def _split_completed_by_a_hook() -> bool:
    """Whether the Git command running the driver has a hook that commits a split's other files.

    A driver writes one file; the contested copy and its relation are committed by
    post-merge / post-commit (a merge: git merge, git pull) or post-rewrite (a
    rebase). A cherry-pick, revert, stash pop, checkout -m or git am runs no such
    hook, so a split there would keep one side and lose the other's text.
    """
    if os.environ.get("GIT_REFLOG_ACTION", "").startswith(("merge", "pull")):
        return True
    found = subprocess.run(["git", "rev-parse", "--git-dir"], check=False, capture_output=True, text=True)
    gitdir = Path(found.stdout.strip()) if found.returncode == 0 else None
    if gitdir is None:
        return False
    return (gitdir / "rebase-merge").is_dir() or ((gitdir / "rebase-apply").is_dir()
                                                 and not (gitdir / "rebase-apply" / "applying").exists())


COMMANDS = [sync, merge, merge_driver]
