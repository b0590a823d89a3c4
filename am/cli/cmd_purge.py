"""`am purge`: take facts' text out of the vault's local history, and prune what still holds it.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from typing import Any

import click

from am.cli.context import emit_json, open_vault


@click.command("purge")
@click.argument("fact_ids", nargs=-1, metavar="ID...")
@click.option("--reason", default=None, help="Why (kept in the audit line .am/purges.jsonl; never the text).")
@click.option("--published", is_flag=True, help="Rewrite history a remote already has (every clone must follow).")
@click.option("--prune", is_flag=True,
              help="Delete the backup refs of earlier purges, expire reflogs and drop unreachable objects.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output for people (text) or programs (json).")
@click.pass_context
def purge(ctx: click.Context, fact_ids: tuple[str, ...], reason: str | None, published: bool, prune: bool,
          fmt: str) -> None:
    """Remove facts' text from the vault's history: a pasted secret, personal data, an outright falsehood.

    Each fact is forgotten (its file becomes a tombstone) and every local branch's
    history is rewritten so that no commit holds its text; the old tips are kept
    under refs/am/purged/ until --prune. History a remote has is refused unless
    --published; then this command prints what the remote and every clone must do.

    Example: am purge f-20261012-1100-07bb3e --reason "an API token pasted by mistake"
    """
    from am.clock import now
    from am.errors import UsageError

    vault = open_vault(ctx)
    if prune and not fact_ids:
        from am.git.rewrite import prune_purged

        gone = prune_purged(vault.store)
        if fmt == "json":
            emit_json({"pruned": gone})
        else:
            click.echo(f"pruned: {len(gone)} backup ref(s) deleted, reflogs expired, unreachable objects dropped")
        return
    if not fact_ids:
        raise UsageError("name the facts to purge", hint='am purge ID... --reason "..." (or am purge --prune)')
    if reason is None:
        raise UsageError("a purge needs a reason", hint='pass --reason "..."')
    from am.upkeep.purge import purge as run

    result = run(vault, list(fact_ids), reason=reason, published=published, when=now().isoformat())
    if prune:
        from am.git.rewrite import prune_purged

        prune_purged(vault.store)
    if fmt == "json":
        emit_json({**result.to_json(), "pruned": prune})
        return
    click.echo(f"purged {', '.join(result.ids)}: {result.rewritten} commit(s) rewritten")
    for ref, (old, new) in result.branches.items():
        click.echo(f"  {ref.removeprefix('refs/heads/')}: {old[:10]} -> {new[:10]}")
    if result.audit_commit:
        click.echo(f"  audit line in .am/purges.jsonl, commit {result.audit_commit[:10]} (ids and reason, no text)")
    for line in next_steps(result, pruned=prune):
        click.echo(line)


def next_steps(result: Any, *, pruned: bool) -> list[str]:
    """What the user, the remote and every other clone must do after a purge."""
    out = []
    if not pruned:
        out.append("this clone still holds the text in the backup refs and reflogs until: am purge --prune")
    if result.remotes:
        branches = " ".join(ref.removeprefix("refs/heads/") for ref in result.branches)
        remote = result.remotes[0].removeprefix("refs/remotes/").split("/", 1)[0]
        out += [
            f"the remote {remote} still has the text. To finish:",
            f"  1. here: git push --force-with-lease {remote} {branches}   (a server that denies non-fast-forward "
            "pushes must allow this one)",
            "  2. on every other clone: am sync (it stops and says the history was purged), keep what only it has "
            f"(git log {remote}/{branches.split()[0]}..HEAD), then git reset --keep {remote}/{branches.split()[0]} "
            "and am purge --prune",
            "  3. on the server: expire its reflogs and run git gc (a hosted forge: ask its support to drop "
            "cached views of the old commits)",
        ]
    return out


COMMANDS: list[Any] = [purge]
