"""`am import` (memory kept by other systems) and `am export` (the vault, or one world of it).

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

from am.cli.context import check_output, emit_json, open_vault, progress_bar

_SYSTEMS = ("openchronicle", "openclaw", "lossless", "supermemory", "basic-memory", "mcp-memory", "markdown", "jsonl")


def _bar(label: str) -> Callable[[int, int], None] | None:
    """A progress bar on a terminal's stderr, shown once the work passes a second; none otherwise."""
    return progress_bar(label) if sys.stderr.isatty() else None


@click.command("import")
@click.argument("system", type=click.Choice(_SYSTEMS))
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--batch-size", default=1000, show_default=True, type=click.IntRange(1),
              help="Records per commit.")
@click.option("--redact-secrets", is_flag=True,
              help="Mask suspected credentials and import the record (default: leave such records aside).")
@click.option("--allow-secret", is_flag=True, help="Import text that looks like a credential as it is.")
@click.option("--dry-run", is_flag=True, help="Read and plan only: say what would be written, write nothing.")
@click.option("--map", "maps", multiple=True, metavar="NAME=ID",
              help="The source's topic NAME is the vault's topic ID (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="The summary for people (text) or programs (json).")
@click.pass_context
def import_(ctx: click.Context, system: str, path: Path, batch_size: int, redact_secrets: bool,
            allow_secret: bool, dry_run: bool, maps: tuple[str, ...], fmt: str) -> None:
    """Import memory kept by another system: one commit per batch, provenance import:SYSTEM.

    SYSTEM is the source's format: openchronicle (a memory folder), openclaw
    (a memory folder of entity folders, or one items.json), lossless (its
    day files, JSONL), supermemory (the skill's V1.3 export, or the API's
    JSON), basic-memory (a folder of notes), mcp-memory (memory.jsonl),
    markdown (CLAUDE.md, AGENTS.md or an ADR folder: proposals to review) or
    jsonl (am's own export, session logs and settings too).
    Importing the same source again writes nothing new; an interrupted import
    finishes when run again. Every entry not imported is listed, with why. A
    link target the source does not define is the vault's topic of that
    name; a topic the source defines whose name the vault uses is left aside
    (map it with --map NAME=ID).

    Example: am import mcp-memory ~/.mcp/memory.jsonl
    """
    from am.errors import UsageError
    from am.io import ImportOptions, import_source

    if redact_secrets and allow_secret:
        raise UsageError("--redact-secrets and --allow-secret contradict each other", hint="give one of them")
    vault = open_vault(ctx)
    policy = "redact" if redact_secrets else "allow" if allow_secret else "refuse"
    from am.io.names import parse_map

    options = ImportOptions(batch_size=batch_size, secrets=policy, dry_run=dry_run,
                            topic_map=tuple(parse_map(maps).items()))
    summary = import_source(vault, system, path, options=options, progress=_bar("importing"))
    if fmt == "json":
        emit_json(summary.to_json())
        return
    for line in summary.lines():
        click.echo(line)


@click.command("export")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "json", "mcp-memory", "markdown"]), default="jsonl",
              show_default=True, help="am's own records (jsonl, json; lossless), or another tool's format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (default: standard output).")
@click.option("--repo", default=None, metavar="NAME", help="World: only what holds in this code repository.")
@click.option("--branch", default=None, help="World: only what holds on this branch.")
@click.option("--commit", "commit_", default=None, help="World: only what holds at this commit.")
@click.option("--at", default=None, metavar="TIME", help="World: only what holds at this moment (valid time).")
@click.option("--as-of", "as_of", default=None, metavar="TIME",
              help="Record time: export the vault as it was at its last commit at or before TIME.")
@click.option("--include-pending", is_flag=True, help="With a world: also facts waiting for review.")
@click.pass_context
def export(ctx: click.Context, fmt: str, output: Path | None, repo: str | None, branch: str | None,
           commit_: str | None, at: str | None, as_of: str | None, include_pending: bool) -> None:
    """Export the vault, or what holds in one world of it, as am's JSONL or another format.

    jsonl and json keep every record whole (frontmatter, body, path), and for
    a whole vault its session logs and settings: `am import jsonl` reads them
    back, and export -> import -> export gives the same bytes.
    mcp-memory writes topics as entities and facts that hold as observations;
    markdown writes one document for people.

    Example: am export --repo project-alpha --branch main -o alpha.jsonl
    """
    from am.cli.cmd_slice import _time
    from am.io import ExportWorld, export_pairs, render_export
    from am.io.export import export_file_items

    if output is not None:
        check_output(output)
    vault = open_vault(ctx)
    at_moment, _ = _time(at, "--at")
    as_of_moment, _ = _time(as_of, "--as-of")
    world = ExportWorld(repo=repo, branch=branch, commit=commit_, at=at_moment,  # type: ignore[arg-type]
                        as_of=as_of_moment, include_pending=include_pending)  # type: ignore[arg-type]
    pairs = export_pairs(vault, world)
    files = export_file_items(vault, world) if fmt in ("jsonl", "json") else []  # session logs, settings
    pieces = render_export(pairs, fmt, vault_name=vault.name, files=files)
    if output is None:
        out = getattr(sys.stdout, "buffer", None)
        for piece in pieces:
            if out is None:
                click.echo(piece, nl=False)
            else:
                out.write(piece.encode("utf-8"))
        sys.stdout.flush()
        return
    tmp = output.with_name(f".{output.name}.am-tmp")
    with open(tmp, "wb") as handle:
        for piece in pieces:
            handle.write(piece.encode("utf-8"))
    tmp.replace(output)
    click.echo(f"exported {len(pairs)} records" + (f" and {len(files)} files" if files else "") + f" to {output}",
               err=True)


COMMANDS = [import_, export]
