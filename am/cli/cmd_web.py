"""`am graph` (the topic graph as text to paste) and `am serve` (the read-only web view).

Decisions: docs/decisions/web.md.
"""

from __future__ import annotations

from pathlib import Path

import click

from am.cli.context import check_output, here_world, open_vault, world_options


@click.command("graph")
@world_options
@click.option("--topic", default=None, metavar="ID", help="Only the neighbourhood of this topic.")
@click.option("--depth", default=1, show_default=True, type=click.IntRange(0, 10),
              help="How many hops of relations and [[links]] --topic reaches.")
@click.option("--format", "fmt", type=click.Choice(["mermaid", "dot", "html", "json"]), default="mermaid",
              show_default=True, help="Mermaid (GitHub, Obsidian), DOT (Graphviz), one self-contained HTML file, or JSON.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file instead of standard output.")
@click.pass_context
def graph(ctx: click.Context, repo: str | None, branch: str | None, commit_: str | None, at: str | None,
          include_pending: bool, topic: str | None, depth: int, fmt: str, output: Path | None) -> None:
    """Print the topic graph of a world: topics coloured by kind, relations and [[links]] as edges.

    The nodes are the topics `am slice` shows for the same world and scope
    (every topic, or --topic ID --depth N), each with the count of its facts
    that hold there; edges are the active relations among them (solid) and
    wikilinks (dashed). Mermaid renders inside GitHub and Obsidian, DOT in
    Graphviz, and the HTML file opens offline, its facts shown on a click. The
    same vault commit and arguments give byte-identical output.

    Example: am graph --repo project-alpha --branch main --format mermaid
    """
    from am.packs.graph import render_dot, render_json, render_mermaid, world_graph
    from am.web.views import world_request

    if output is not None:
        check_output(output)
    vault = open_vault(ctx)
    repo, branch, commit_ = here_world(repo, branch, commit_)
    request = world_request(repo=repo, branch=branch, commit=commit_, at=at, topic=topic, depth=depth,
                            include_pending=include_pending)
    if topic is not None:
        vault.get_topic(topic)
    found = world_graph(vault, request)
    if fmt == "html":
        from am.web.export import render_html

        text = render_html(found)
    else:
        text = {"mermaid": render_mermaid, "dot": render_dot, "json": render_json}[fmt](found)
    if output is None:
        click.echo(text, nl=False)
        return
    from am.errors import storage_error

    try:
        output.write_text(text, encoding="utf-8")
    except OSError as err:
        raise storage_error(err, f"write {output}") from None
    click.echo(f"wrote the graph of {len(found.nodes)} topics and {len(found.edges)} edges to {output}", err=True)


@click.command("serve")
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535),
              help="The port on 127.0.0.1 (0: any free port; the address is printed on stderr).")
@click.option("--open", "open_browser", is_flag=True, help="Open the view in the default browser.")
@click.option("--repo", default=None, metavar="NAME",
              help="The world the page starts with (default: the registered clone of the current folder).")
@click.option("--branch", default=None, help="The branch the page starts with (default: the clone's current branch).")
@click.pass_context
def serve(ctx: click.Context, port: int, open_browser: bool, repo: str | None, branch: str | None) -> None:
    """Serve a read-only web view of this vault on 127.0.0.1: graph, activity, review queue, numbers.

    The topic graph of a world (pick repo, branch, commit, a topic's
    neighbourhood); a click shows the topic's facts as `am slice --topic`
    does. The activity timeline is `am log` with the `am undo` command of each
    write; the review queue lists stale, contested and pending-review facts
    with their evidence; the numbers count facts by status, actor and week,
    the facts that hold per branch, the full pack size of the picked world and
    the cache's health. Every route is a GET and
    nothing writes; a foreign Host or Origin is refused (DNS rebinding). The
    page uses no asset from the network.

    Example: am serve --open
    """
    from am.web.server import serve as run

    vault = open_vault(ctx)  # the vault branch of --vault-branch too: its own worktree root
    repo, branch, commit = here_world(repo, branch, None)
    defaults = {"repo": repo, "branch": branch, "commit": commit}
    root = vault.root
    vault.close()
    run(root, port=port, open_browser=open_browser, defaults=defaults,
        announce=lambda line: click.echo(line, err=True))


COMMANDS = [graph, serve]
