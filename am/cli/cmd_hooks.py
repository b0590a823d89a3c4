"""`am hooks install|uninstall`, and the hidden `am hook NAME` that the installed shims run.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault


@click.group("hooks")
def hooks() -> None:
    """Git hooks that make hand commits (Obsidian, git CLI) part of memory.

    Example: am hooks install
    """


def _report(actions: list, fmt: str) -> None:  # type: ignore[type-arg]
    if fmt == "json":
        emit_json([{"name": a.name, "path": a.path, "action": a.action} for a in actions])
        return
    for a in actions:
        click.echo(f"{a.action:<9} {a.name}  ({a.path})")
    if not actions:
        click.echo("nothing to do")


@hooks.command("install")
@click.option("--code-repo", "code_repo", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Install in this code repository instead: its commits say which facts they make stale.")
@click.option("--repo", default=None, help="The code repository's name in the vault (with --code-repo).")
@FORMAT_OPTION
@click.pass_context
def install(ctx: click.Context, code_repo: Path | None, repo: str | None, fmt: str) -> None:
    """Install am's hooks in the vault (or a code repository), chaining hooks already there.

    Vault: pre-commit refuses invalid records and secrets; post-commit prints the
    lint warnings of what it committed; post-merge, post-checkout and post-rewrite
    update the cache and print lint warnings.
    Code repository: post-commit and post-merge warm the staleness cache and say
    which facts the commit made stale on its branch (the vault is not written).

    Example: am hooks install --code-repo ~/src/alpha --repo project-alpha
    """
    from am.upkeep.hookfiles import CODE_HOOKS, install_hooks

    vault = open_vault(ctx)
    if code_repo is None:
        if repo:
            raise click.UsageError("--repo goes with --code-repo")
        # The hooks, and the record merge for git merge / git pull / obsidian-git (am/upkeep/merges.py).
        from am.upkeep.merges import install_vault_hooks

        actions = install_vault_hooks(vault)
    else:
        from am.errors import UsageError
        from am.records.ids import check_id
        from am.registry import Registry

        if not repo:
            raise UsageError("--code-repo needs --repo NAME", hint="the name the vault's facts use in 'repo:'")
        check_id(repo, field="repo")
        root = code_repo.expanduser().resolve()
        linked = Registry.load().name_of(vault.root, vault.name)  # before anything is installed
        vault_root = str(vault.root)
        actions = install_hooks(
            root, names=CODE_HOOKS,
            args_for=lambda name: ["--vault", vault_root, "hook", f"code-{name}", "--repo", repo],
        )
        Registry.load().add_repo(repo, root, vault=linked)
    _report(actions, fmt)


@hooks.command("uninstall")
@click.option("--code-repo", "code_repo", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Uninstall from this code repository instead of the vault.")
@FORMAT_OPTION
@click.pass_context
def uninstall(ctx: click.Context, code_repo: Path | None, fmt: str) -> None:
    """Remove am's hooks and restore the hooks they replaced.

    In a vault, the clone's merge driver setting (merge.am.driver) is removed
    too; the committed .gitattributes lines stay, and without the setting Git
    merges those files as text.

    Example: am hooks uninstall
    """
    from am.upkeep.hookfiles import CODE_HOOKS, VAULT_HOOKS, uninstall_hooks

    if code_repo is None:
        from am.upkeep.hookfiles import HookAction
        from am.upkeep.merges import unregister_merge_driver

        root = open_vault(ctx).root
        actions = uninstall_hooks(root, names=VAULT_HOOKS)
        # The clone's merge.am settings go too; the committed .gitattributes lines stay (every clone shares them).
        actions += [HookAction("merge-driver", what, "removed") for what in unregister_merge_driver(root)]
    else:
        actions = uninstall_hooks(code_repo.expanduser().resolve(), names=CODE_HOOKS)
    _report(actions, fmt)


@click.command("hook", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.option("--repo", default=None, help="The code repository's name (code-* hooks).")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def hook(ctx: click.Context, name: str, repo: str | None, args: tuple[str, ...]) -> None:
    """Run one Git hook (called by the shims that am hooks install writes).

    Example: am hook pre-commit
    """
    from am.cli.hookrun import open_vault_for_hooks
    from am.upkeep.hooks import run_code_hook, run_vault_hook

    # Only post-rewrite gets data on stdin; reading it elsewhere could block on a terminal.
    stdin = sys.stdin.buffer.read() if name == "post-rewrite" and not sys.stdin.isatty() else b""
    if name.startswith("code-"):
        if not repo:
            raise click.UsageError("code hooks need --repo NAME")
        code = run_code_hook(name[len("code-"):], args, cwd=Path.cwd(), vault_where=ctx.obj.vault_arg,
                             repo=repo, stdin=stdin, out=sys.stderr, open_vault=open_vault_for_hooks)
    else:
        code = run_vault_hook(name, args, cwd=Path.cwd(), stdin=stdin, out=sys.stderr, open_vault=open_vault_for_hooks)
    ctx.exit(code)


COMMANDS = [hooks, hook]
