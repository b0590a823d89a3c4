"""`am slice` (the context pack) and `am repo` (code repositories and their clones).

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

from pathlib import Path

import click

from am.cli.context import FORMAT_OPTION, emit_json, here_world, open_vault, unreadable_note


def _time(value: str | None, flag: str) -> tuple[object, str | None]:
    if value is None:
        return None, None
    from am.worlds.ancestry import now
    from am.cache.timephrases import parse_time

    from am.errors import UsageError

    try:
        moment = parse_time(value, now=now())
    except UsageError as err:
        raise UsageError(f"{flag}: {err.message}", hint=err.hint) from None
    return moment, value


@click.command("slice")
@click.option("--repo", default=None, metavar="NAME",
              help="The code repository of the world (default: the registered repo of the current folder).")
@click.option("--branch", default=None, help="The branch of the world (default: the clone's current branch).")
@click.option("--commit", "commit_", default=None, help="The commit of the world (default: the branch tip).")
@click.option("--at", default=None, metavar="TIME",
              help="Valid time: what holds at this moment (ISO date, date-time or a phrase; default: now).")
@click.option("--as-of", "as_of", default=None, metavar="TIME",
              help="Record time: read the vault as it was at its last commit at or before TIME.")
@click.option("--topic", default=None, metavar="ID", help="Only the neighbourhood of this topic (id, title or alias).")
@click.option("--depth", default=1, show_default=True, type=click.IntRange(0, 10),
              help="How many hops of relations and [[links]] --topic reaches.")
@click.option("--query", default=None, metavar="TEXT", help="Only records about this query (vector, full text, graph).")
@click.option("--max-tokens", default=8000, show_default=True, type=click.IntRange(0),
              help="Token budget; the lowest-ranked records are left out and counted (0: no budget).")
@click.option("--compact", is_flag=True, help="One line a fact, provenance shortened (for small prompts).")
@click.option("--include-pending", is_flag=True, help="Also show facts waiting for review.")
@click.option("--follow-links", is_flag=True, help="Follow [[vault:id]] links to other vaults, one hop.")
@click.option("--path", "paths", multiple=True, metavar="FILE",
              help="Only the facts that watch or mention FILE (repeatable), and their topics' neighbours.")
@click.option("--since", "since", default=None, metavar="REF",
              help="Only what changed in this world since REF: an earlier pack's id (p-...), a vault commit, "
                   "or a time (yesterday, 上周五); the whole world's, so not with --topic, --query or --path.")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True,
              help="Markdown for an agent's context, or JSON for programs.")
@click.pass_context
def slice_(ctx: click.Context, repo: str | None, branch: str | None, commit_: str | None, at: str | None,
           as_of: str | None, topic: str | None, depth: int, query: str | None, max_tokens: int,
           compact: bool, include_pending: bool, follow_links: bool, paths: tuple[str, ...], since: str | None, fmt: str) -> None:
    """Print the context pack: what holds in a world (repo, branch, commit, time), grouped by topic.

    Facts are ranked (pinned, confidence, recency) and cut to --max-tokens, which
    caps the whole pack, header included; the pack says how many were left out
    and how to get them. The same vault commit and arguments give byte-identical
    output. Inside a registered clone or any worktree of it, the world is its
    repo, branch and HEAD. A repo, branch or commit that does not exist exits 13.

    Every pack names itself (``Pack: p-...``); ``--since`` that id lists only the facts added,
    edited, superseded, expired, made stale or contested in this world since, for an agent's next session.

    Example: am slice --repo project-alpha --branch main --max-tokens 2000
    """
    from am.packs.slice import SliceRequest, render_json, render_markdown, slice_vault

    from am.worlds.ancestry import DETACHED_HEAD

    vault = open_vault(ctx)
    typed = (repo, branch, commit_) != (None, None, None)
    repo, branch, commit_ = here_world(repo, branch, commit_)
    at_moment, at_label = _time(at, "--at")
    as_of_moment, as_of_label = _time(as_of, "--as-of")
    if topic is not None:
        from am.writes.lookup import topic_named

        topic = topic_named(vault.files, topic)  # an id, a title or an alias
    request = SliceRequest(
        repo=repo, branch=branch, commit=commit_, at=at_moment, at_label=at_label or "now",  # type: ignore[arg-type]
        as_of=as_of_moment, as_of_label=as_of_label, topic=topic, depth=depth, query=query,  # type: ignore[arg-type]
        max_tokens=max_tokens, include_pending=include_pending, follow_links=follow_links, compact=compact,
        commit_source=None if typed or commit_ is None else DETACHED_HEAD,  # here_world's detached HEAD
    )
    from am.errors import UsageError

    if paths:
        for flag, value in (("--topic", topic), ("--query", query)):
            if value is not None:
                raise UsageError(f"--path and {flag} choose the scope in two ways; give one of them")
        if since is not None:
            raise UsageError("--path and --since: what changed since is listed for the whole world, not for "
                             "the files at hand; give one of them")
    if since is not None:  # slice_since refuses --topic and --query (every door): a delta is the whole world's
        from am.packs.delta import render_delta_json, render_delta_markdown, slice_since

        delta = slice_since(vault, request, since)
        click.echo(render_delta_json(delta) if fmt == "json" else render_delta_markdown(delta), nl=False)
        return
    if paths:
        from am.packs.paths import slice_paths

        pack = slice_paths(vault, request, paths)
    else:
        pack = slice_vault(vault, request)
    text = render_json(pack) if fmt == "json" else render_markdown(pack)
    click.echo(text, nl=False)
    unreadable_note(pack.unreadable, "in this pack")


@click.group()
def repo() -> None:
    """Code repositories: names that records' `repo` uses, mapped to local clones.

    Example: am repo add project-alpha ~/src/alpha
    """


@repo.command("add")
@click.argument("name")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--replace", is_flag=True, help="Point a name already registered elsewhere at PATH.")
@click.pass_context
def repo_add(ctx: click.Context, name: str, path: Path, replace: bool) -> None:
    """Register the local clone at PATH as code repository NAME, belonging to this vault.

    Slices then judge facts of NAME by the clone's commit graph, and any command
    run inside the clone (or a worktree of it) finds this vault, the repo and
    the world with no flags. The clone's remote URL is recorded in the vault's
    .am/vault.yml (one commit), so another machine can be told which clone NAME
    means; a URL the vault names already stays (the file is every machine's).

    Example: am repo add project-alpha ~/src/alpha
    """
    from am.errors import NotAVaultError
    from am.git import GitStore
    from am.records.ids import check_id
    from am.registry import Registry

    check_id(name, field="repo name")
    store = GitStore.open_code(path.expanduser().resolve())
    try:
        vault = open_vault(ctx)
    except NotAVaultError:
        vault = None
    if vault is not None:
        vault.writer.check_writable(())  # its .am/vault.yml gets the repo: refused before the registry changes
    registry = Registry.load()
    linked = registry.name_of(vault.root, vault.name) if vault is not None else None
    registry.add_repo(name, store.root, vault=linked, replace=replace)
    click.echo(f"registered repo {name} -> {store.root}")
    if vault is None:
        click.echo("note: no vault here, so the repo names none; run it in a vault (or with --vault) to link them",
                   err=True)
        return
    remote = store.config_value("remote.origin.url")
    commit = vault.record_repo(name, remote)
    if commit is not None:
        click.echo(f"recorded {name}" + (f" ({remote})" if remote else "") + f" in .am/vault.yml in commit {commit[:10]}")
    else:
        from am.records.vaultfile import repos_of

        known = repos_of(vault.settings).get(name)
        if known and known != (remote or ""):
            click.echo(f"note: .am/vault.yml names {known} as {name}'s remote (this clone's origin is "
                       f"{remote or 'not set'}); it stays, as every machine shares it: edit .am/vault.yml to change "
                       "it", err=True)


@repo.command("remove")
@click.argument("name")
def repo_remove(name: str) -> None:
    """Forget code repository NAME on this machine (the clone and the vault's records stay).

    Example: am repo remove project-alpha
    """
    from am.registry import Registry

    old = Registry.load().remove_repo(name)
    click.echo(f"removed repo {name} (was {old})")


@repo.command("list")
@FORMAT_OPTION
def repo_list(fmt: str) -> None:
    """List the registered code repositories and their clones.

    Example: am repo list --format json
    """
    from am.registry import Registry

    registry = Registry.load()
    repos = registry.repos
    if fmt == "json":
        emit_json([{"name": n, "path": p, "vault": registry.repo_vaults.get(n)} for n, p in sorted(repos.items())])
        return
    for name, path in sorted(repos.items()):
        vault = registry.repo_vaults.get(name)
        click.echo(f"{name:<24} {path}" + (f"  (vault {vault})" if vault else ""))
    if not repos:
        click.echo("no code repositories registered; add one with: am repo add NAME PATH", err=True)


COMMANDS = [slice_, repo]
