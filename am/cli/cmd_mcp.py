"""`am mcp` (the MCP server for agents) and `am setup` (wire an agent client to it).

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from am.cli.context import Options, emit_json, open_vault

if TYPE_CHECKING:
    from am.mcp.setup import FileChange
    from am.vault import Vault


@click.command("mcp")
@click.option("--http", "http", is_flag=True,
              help="Serve Streamable HTTP on 127.0.0.1 (default: stdio, for a client that starts the server).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="The port for --http (0: any free port; the address is printed on stderr).")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --http, require this bearer token (first line of the file; default: $AM_MCP_TOKEN if set).")
@click.option("--read-only", is_flag=True, help="Offer only the tools that read; refuse writes.")
@click.option("--actor", "actor", default=None, metavar="NAME",
              help="Record writes as NAME (default: the MCP client's name).")
@click.option("--repo", default=None, metavar="NAME",
              help="The default world's repo (default: the registered clone of the current folder).")
@click.option("--branch", default=None, help="The default world's branch (default: the clone's current branch).")
@click.option("--link-vault", "link_vaults", multiple=True, metavar="NAME",
              help="Another registered vault a slice's follow_links may read (repeatable; default: none).")
@click.pass_context
def mcp(ctx: click.Context, http: bool, port: int, token_file: Path | None, read_only: bool, actor: str | None,
        repo: str | None, branch: str | None, link_vaults: tuple[str, ...]) -> None:
    """Serve this vault to agents over the Model Context Protocol (stdio, or --http).

    Tools: slice, search, why, fact_show, topic_show, topic_list, log, check,
    review_list, and the writes fact_add, fact_supersede, fact_expire, fact_confirm,
    topic_add, relation_add, review_decide (one commit each, with the client's name
    as actor; none of them in --read-only). Started in a registered code
    clone, a tool's world defaults to that clone's branch and HEAD. Write the
    client's configuration with `am setup CLIENT`.

    Example: am --vault myproject mcp --read-only
    """
    from am.mcp.server import ServerOptions, serve_stdio

    if not http and ctx.get_parameter_source("port") is not click.core.ParameterSource.DEFAULT:
        from am.errors import UsageError

        raise UsageError(f"--port {port} is for --http",
                         hint="add --http to serve on that port; a stdio server has none")
    opts: Options = ctx.find_object(Options)  # type: ignore[assignment]
    parent = ctx.parent
    # `am --actor X mcp` overrides client names too; $AM_ACTOR only stands in when a client gives none.
    if actor is None and parent is not None and opts.actor is not None:
        source = parent.get_parameter_source("actor")
        if source == click.core.ParameterSource.COMMANDLINE:
            actor = opts.actor
    vault = _served_vault(ctx)
    if actor is not None:
        from am.writes.authorship import Authorship

        Authorship.check_actor(actor)
    options = ServerOptions(vault_root=vault.root, folder=Path.cwd(), actor=actor, read_only=read_only,
                            repo=repo, branch=branch, link_vaults=tuple(link_vaults))
    vault.close()
    if http:
        from am.mcp.http import read_token, serve_http

        serve_http(options, port=port, token=read_token(token_file))
    else:
        if token_file is not None:
            from am.errors import UsageError

            raise UsageError("--token-file is for --http", hint="a stdio server is reached only by its client")
        serve_stdio(options)


def _served_vault(ctx: click.Context) -> Vault:
    """Open the vault to serve: --vault/$AM_VAULT, else the one around this folder or its registered clone's.

    A user-global entry (Codex's) names no vault and is started in each project's folder, so a folder
    with no vault of its own gets an error that says how to register the clone.
    """
    from am.errors import NotAVaultError

    try:
        return open_vault(ctx)
    except NotAVaultError:
        opts: Options = ctx.find_object(Options)  # type: ignore[assignment]
        if opts.vault_arg or os.environ.get("AM_VAULT"):
            raise
        from am.worlds.here import find_checkout

        checkout = find_checkout(Path.cwd())
        folder = checkout.top if checkout is not None else Path.cwd().resolve()
        raise NotAVaultError(f"am mcp started in {folder}, which is no vault and no registered clone of one: "
                             "no vault to serve", hint="register the clone: am --vault VAULT repo add NAME "
                             f"{shlex.quote(str(folder))}"
                             " (or start the server with --vault VAULT)") from None


@click.command("setup")
@click.argument("client", type=click.Choice(["claude-code", "codex", "cursor", "claude-desktop"]))
@click.option("--project", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The project folder (default: the top of the Git repository around the current folder, "
                   "else the current folder).")
@click.option("--name", default="am", show_default=True, help="The server's name in the client's configuration.")
@click.option("--read-only", is_flag=True, help="Start the server read-only (agents read, people write).")
@click.option("--no-hook", is_flag=True, help="Claude Code: no SessionStart hook that puts the slice into context.")
@click.option("--no-session-end", is_flag=True,
              help="Claude Code: no SessionEnd hook that keeps each session's log in the vault (am ingest -).")
@click.option("--remove", is_flag=True, help="Take out what am setup wrote, leaving the files as they were.")
@click.option("--replace", is_flag=True,
              help="Codex, Claude Desktop: replace an entry am wrote that serves another vault.")
@click.option("--print", "print_only", is_flag=True, help="Show what would be written; change nothing.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output for people (text) or programs (json).")
@click.pass_context
def setup(ctx: click.Context, client: str, project: Path | None, name: str, read_only: bool, no_hook: bool,
          no_session_end: bool, remove: bool, replace: bool, print_only: bool, fmt: str) -> None:
    """Wire an agent client to this vault: its MCP configuration and a few lines of instructions.

    claude-code: .mcp.json (project scope), a SessionStart hook in .claude/settings.json
    that puts the slice into context, a SessionEnd hook there that keeps the session's
    log in the vault (am ingest -), and a block in CLAUDE.md. codex: [mcp_servers]
    in ~/.codex/config.toml ($CODEX_HOME) and a block in AGENTS.md. cursor:
    .cursor/mcp.json and .cursor/rules/am.mdc. claude-desktop: claude_desktop_config.json.
    Codex's entry names no vault: `am mcp` serves the vault of the registered clone
    Codex starts it in, so one entry serves every project. Running it again changes
    nothing; --remove restores the files byte for byte.

    Example: am --vault myproject setup claude-code --print
    """
    from am.mcp.setup import SetupRequest, am_command, apply, plan, server_env
    from am.registry import Registry

    vault = open_vault(ctx)
    folder = (project or _repo_top(Path.cwd())).resolve()
    registered = Registry.load().vaults.get(vault.name)
    ref = vault.name if registered and Path(registered).expanduser().resolve() == vault.root else str(vault.root)
    if ref != vault.name and registered:  # a second clone of the vault here (or another vault of its name)
        click.echo(f"warning: vault name {vault.name!r} is registered on this machine for {registered}, not for this "
                   f"clone {vault.root}; the configuration names this clone's path, which no other machine has (to "
                   f"name the vault instead: run am setup with --vault {vault.name}, or point the name here: "
                   f"am vault add {vault.name} {vault.root} --replace)", err=True)
    elif ref != vault.name:
        click.echo(f"warning: vault {vault.name!r} is not registered on this machine; the configuration names its "
                   f"path (register it with: am init {vault.root} --name {vault.name})", err=True)
    command = am_command(absolute=client == "claude-desktop")
    request = SetupRequest(client=client, project=folder, vault=ref, name=name, read_only=read_only,
                           hook=not no_hook, session_end=not no_session_end, command=command, env=server_env(),
                           replace=replace)
    changes = plan(request, remove=remove)
    if not remove and client != "claude-desktop":
        _warn_unregistered(folder, vault.root, vault.name, client)
    if not remove and client != "claude-desktop" and command[0] != "am":
        click.echo(f"note: am is not on PATH; the configuration starts {command[0]}", err=True)
    if print_only:
        _show(changes, fmt)
        return
    made = apply(changes)
    if fmt == "json":
        emit_json([{"path": str(c.path), "what": c.what, "changed": c in made} for c in changes])
        return
    for change in changes:
        click.echo(f"{'changed' if change in made else 'unchanged'}: {change.path}  ({change.what})")
    if not remove and client != "claude-desktop":
        click.echo(f"next: start the client in this project; it asks once to trust the {name!r} server")


def _warn_unregistered(folder: Path, root: Path, name: str, client: str) -> None:
    """Warn when the project is not a registered clone of this vault: no world (Codex: no vault) found there."""
    from am.registry import Registry
    from am.worlds.here import registered_here

    if folder == root or root in folder.parents:
        return  # the project is the vault itself
    registry = Registry.load()
    found = registered_here(folder, registry)
    loses = "finds no vault there" if client == "codex" else "has no repo or branch to judge facts by there"
    if found is None:
        repo = re.sub(r"[^a-z0-9]+", "-", folder.name.lower()).strip("-") or "code"
        click.echo(f"warning: {folder} is not a registered clone, so the am server {loses} (register it: "
                   f"am --vault {name} repo add {repo} {shlex.quote(str(folder))})", err=True)
        return
    # Codex's entry finds the vault through the clone's link; the other clients' entries name theirs.
    linked = registry.repo_vaults.get(found[0])
    linked_root = registry.vaults.get(linked or "")
    if client == "codex" and linked != name and (linked_root is None or Path(linked_root).resolve() != root):
        now = f"vault {linked!r}" if linked else "no vault"
        click.echo(f"warning: {folder} is registered as repo {found[0]!r} of {now}, not of {name!r}; the am server "
                   f"serves {now} there (link it to {name!r}: am --vault {name} repo add {found[0]} "
                   f"{shlex.quote(str(folder))})", err=True)


def _repo_top(start: Path) -> Path:
    return next((p for p in (start, *start.parents) if (p / ".git").exists()), start)


def _show(items: list[FileChange], fmt: str) -> None:
    if fmt == "json":
        emit_json([{"path": str(c.path), "what": c.what, "changes": c.changes,
                    "after": None if c.after is None else c.after.decode("utf-8")} for c in items])
        return
    for c in items:
        state = "would change" if c.changes else "unchanged"
        click.echo(f"== {c.path}  ({c.what}; {state})")
        if c.changes:
            click.echo("(file removed)" if c.after is None else c.after.decode("utf-8"), nl=c.after is None)


COMMANDS = [mcp, setup]
