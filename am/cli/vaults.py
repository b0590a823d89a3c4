"""`am init`, `am vault`, `am demo`: creating, naming and trying vaults.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from am.cli.context import FORMAT_OPTION, emit_json

NO_HOOKS_OPTION = click.option("--no-hooks", is_flag=True,
                               help="Do not install am's Git hooks and merge driver (am hooks install does it later).")


def _install_hooks(vault: Any) -> str | None:
    """Install the vault's hooks and merge driver; return the line that says so, or None after a warning (a
    failure is one: the vault itself is ready)."""
    from am.errors import AmError
    from am.upkeep.merges import install_vault_hooks

    try:
        actions = install_vault_hooks(vault)
    except (AmError, OSError) as err:
        click.echo(f"warning: am's Git hooks were not installed ({err}); hand commits go unchecked and git pull "
                   "merges records as text until: am hooks install", err=True)
        return None
    hooks = [a.name for a in actions if a.name != "merge-driver"]
    return (f"hooks installed ({', '.join(hooks) or 'already there'}) and the record merge driver registered; "
            "am hooks uninstall removes them")


@click.command()
@click.argument("path", type=click.Path(file_okay=False, path_type=Path), default=".", required=False)
@click.option("--name", default=None, help="The vault's name in the registry (default: the folder's name; for a "
              "vault adopted, such as a clone, its own name in .am/vault.yml, which stays).")
@click.option("--obsidian", "for_obsidian", is_flag=True,
              help="Also add Obsidian templates and settings (as am obsidian setup does).")
@click.option("--replace", is_flag=True, help="Point the name at PATH even if it is registered for another vault.")
@click.option("--nested", is_flag=True, help="Make the vault even inside another vault's folder.")
@NO_HOOKS_OPTION
@click.pass_context
def init(ctx: click.Context, path: Path, name: str | None, for_obsidian: bool, replace: bool, nested: bool,
         no_hooks: bool) -> None:
    """Create a vault in PATH (default: here), or adopt the Git repository there.

    Registers the vault by name in $AM_HOME (default ~/.am), and installs am's
    Git hooks and record merge driver (as am hooks install does), so hand
    commits are checked and git pull merges record by record.

    Example: am init ~/vaults/alpha --name alpha --obsidian
    """
    from am.vault import Vault

    _refuse_vault_option(ctx)
    _refuse_nested(path, nested)
    vault = Vault.init(path, name=name, actor=ctx.obj.actor, replace=replace)
    if for_obsidian:
        vault.setup_obsidian()
    registered = name or vault.name  # an adopted clone's own name (vault.yml) may differ from --name
    click.echo(f"vault {registered} ready at {vault.root}")
    if not no_hooks and (said := _install_hooks(vault)):
        click.echo(said)
    click.echo(f"next: am --vault {registered} topic add project-x --title 'Project X'")
    if registered != vault.name:
        _clone_notes(registered, vault.root)


def _refuse_nested(path: Path, nested: bool) -> None:
    """Refuse a new vault inside another vault's folder (its files would be the outer vault's notes too)."""
    from am.errors import UsageError
    from am.registry import find_vault_root

    target = path.expanduser().resolve()
    outer = find_vault_root(target.parent)
    if outer is not None and not nested and not (target / ".am" / "vault.yml").is_file():
        raise UsageError(f"{target} is inside the vault at {outer}: a vault there would nest in it",
                         hint="make it elsewhere (am init ~/vaults/NAME), or pass --nested to mean it")


def _refuse_vault_option(ctx: click.Context) -> None:
    """Refuse ``am --vault X init`` without PATH: it made the current folder a vault (a commit, hooks), not X."""
    from click.core import ParameterSource

    given = ctx.obj.vault_arg
    if given is None or ctx.get_parameter_source("path") != ParameterSource.DEFAULT \
            or ctx.find_root().get_parameter_source("vault") != ParameterSource.COMMANDLINE:
        return
    from am.errors import UsageError

    example = f"am init {given}" if any(c in given for c in "/~.\\") else f"am init PATH --name {given}"
    raise UsageError(f"am init makes a vault of PATH (default: this folder, {Path.cwd()}), not of --vault {given!r}",
                     hint=f"give the folder: {example}; nothing was written")


@click.group()
def vault() -> None:
    """The registry of vaults on this machine.

    Example: am vault list
    """


@vault.command("list")
@FORMAT_OPTION
def list_(fmt: str) -> None:
    """List registered vaults.

    Example: am vault list --format json
    """
    from am.registry import Registry, find_vault_root

    registry = Registry.load()
    if fmt == "json":
        emit_json([{"name": n, "path": p} for n, p in sorted(registry.vaults.items())])
        return
    for name, path in sorted(registry.vaults.items()):
        click.echo(f"{name:<24} {path}")
    here = find_vault_root(Path.cwd().resolve())
    if here is not None and not any(Path(p).expanduser().resolve() == here for p in registry.vaults.values()):
        # Standing in a vault this machine does not know: a fresh clone.
        click.echo(f"note: the vault at {here} is not registered on this machine (a clone is not); adopt it with: "
                   f"am init {here} (it registers the clone and installs its hooks)", err=True)
    elif not registry.vaults:
        click.echo("no vaults registered; create one with: am init PATH", err=True)


@vault.command("add")
@click.argument("name")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--replace", is_flag=True, help="Point a name already registered elsewhere at PATH.")
def add(name: str, path: Path, replace: bool) -> None:
    """Register an existing vault under NAME (a taken name needs --replace).

    Example: am vault add alpha ~/vaults/alpha
    """
    from am.errors import NotAVaultError
    from am.registry import Registry

    root = path.resolve()
    if not (root / ".am" / "vault.yml").is_file():
        raise NotAVaultError(f"{root} is not an am vault", hint=f"create or adopt it with: am init {path}")
    Registry.load().add_vault(name, root, replace=replace)
    click.echo(f"registered {name} -> {root}")
    _clone_notes(name, root)


def _clone_notes(name: str, root: Path) -> None:
    """Say what a vault registered on this machine still lacks: a clone's hooks and merge driver, its own name."""
    from am.upkeep.health import hook_findings
    from am.upkeep.merges import driver_missing

    driver = driver_missing(root)
    if driver or any(f.kind == "hook-missing" for f in hook_findings(root)):
        why = ("a git pull here merges records as text (conflict markers)" if driver
               else "hand commits here go unchecked")
        click.echo(f"note: this clone lacks am's {'merge driver and ' if driver else ''}git hooks (a git clone "
                   f"carries neither): {why}; run: am --vault {name} hooks install", err=True)
    try:
        import yaml

        own = yaml.safe_load((root / ".am" / "vault.yml").read_text(encoding="utf-8")).get("name")
    except Exception:  # noqa: BLE001 - a note only: am check reports a broken vault.yml
        own = None
    if not isinstance(own, str) or not own or own == name:
        return
    from am.registry import Registry

    elsewhere = Registry.load().vaults.get(own)
    if elsewhere is not None and Path(elsewhere).expanduser().resolve() == root:
        return  # this clone holds its own name too
    said = (f"on this machine {own!r} is another folder ({elsewhere}), so they reach that one, not this clone"
            if elsewhere is not None else f"register this clone under it as well: am vault add {own} {root}")
    click.echo(f"note: the vault calls itself {own!r} (.am/vault.yml), the name the project files am setup writes "
               f"pass to am --vault; {said}", err=True)


@vault.command("remove")
@click.argument("name")
def remove(name: str) -> None:
    """Forget vault NAME on this machine (its files and history stay where they are).

    Example: am vault remove alpha
    """
    from am.registry import Registry

    old = Registry.load().remove_vault(name)
    click.echo(f"removed vault {name} (was {old})")


@click.command()
@click.argument("path", type=click.Path(file_okay=False, path_type=Path), default="am-demo", required=False)
@click.option("--code", "code", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to build the demo's code repository (default: PATH-code).")
@click.option("--replace", is_flag=True, help="Re-point the names demo and project-alpha at this new demo.")
@NO_HOOKS_OPTION
def demo(path: Path, code: Path | None, replace: bool, no_hooks: bool) -> None:
    """Create the example vault in PATH (default: ./am-demo) with a short history.

    Also builds the code repository its facts are about (project-alpha, beside
    the vault as PATH-code) and registers both, so slices follow real branches.

    Example: am demo /tmp/am-demo && cd /tmp/am-demo && git log --oneline
    """
    from am.demo import materialise_demo

    v = materialise_demo(path, code=code, replace_names=replace)
    said = None if no_hooks else _install_hooks(v)  # its commit is counted with the rest
    commits = sum(1 for _ in v.store.walk())
    code_path = (code or path.with_name(path.name + "-code")).resolve()
    click.echo(f"demo vault ready at {v.root} ({commits} commits)")
    if said:
        click.echo(said)
    click.echo(f"code repository project-alpha at {code_path} (branches main, feat-batch, feat-rate-limit)")
    click.echo("try:")
    for line in (
        f"cd {v.root}",
        "am slice --repo project-alpha --branch main",
        "am slice --repo project-alpha --branch feat-rate-limit",
        "am search 限流",
        "am fact list",
        "git log --format='%h %an %s'",
    ):
        click.echo(f"  {line}")
