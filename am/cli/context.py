"""Shared plumbing of the commands: the vault of this invocation, output helpers.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from am.records.model import Record
    from am.vault import Vault, WriteResult

FORMAT_OPTION = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="Output for people (text) or programs (json).",
)


def world_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the world flags of a command that reads one world (am stale, am why, am graph)."""
    options = [
        click.option("--repo", default=None, metavar="NAME",
                     help="The code repository of the world (default: the registered repo of the current folder)."),
        click.option("--branch", default=None, help="The branch of the world (default: the clone's current branch)."),
        click.option("--commit", "commit_", default=None, help="The commit of the world (default: the branch tip)."),
        click.option("--at", default=None, metavar="TIME", help="Valid time (ISO date, date-time or a phrase)."),
        click.option("--include-pending", is_flag=True, help="Let pending-review facts hold, as a slice with it does."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


class Options:
    """Global options given before the command."""

    def __init__(self, vault: str | None, actor: str | None, vault_branch: str | None = None) -> None:
        self.vault_arg = vault
        self.actor = actor
        self.vault_branch = vault_branch
        self._vault: Vault | None = None


def open_vault(ctx: click.Context) -> Vault:
    """Open the vault of this invocation once, closing it when the command ends."""
    from am.vault import Vault

    opts: Options = ctx.find_object(Options)  # type: ignore[assignment]
    if opts._vault is None:
        import am.cache.progress

        am.cache.progress.progress_hook = progress_bar  # any command that rebuilds the cache shows a bar after 1 s
        opts._vault = ctx.with_resource(Vault.open(opts.vault_arg, actor=opts.actor,
                                                           branch=opts.vault_branch))
    return opts._vault


def progress_bar(label: str = "indexing") -> Callable[[int, int], None]:
    """Return a progress callback: a bar with count, rate and time left on a terminal's stderr, nothing on a pipe."""
    from am.cli.progress import ProgressBar

    return ProgressBar(label)


def read_text_arg(value: str) -> str:
    """Return the argument, or standard input when it is '-' (which must be UTF-8 text)."""
    if value != "-":
        return value
    try:
        text = sys.stdin.read()
    except UnicodeDecodeError:
        text = "\udcff"  # a strict stream refuses the bytes; a surrogateescape one passes them on
    if any("\udc80" <= ch <= "\udcff" for ch in text):
        from am.errors import UsageError

        raise UsageError("standard input is not valid UTF-8 text",
                         hint="save it as UTF-8, or pass the text as an argument")
    return text


def check_output(path: Path) -> None:
    """Refuse an --output whose folder does not exist, before any work (an editor's "save as" does not make folders)."""
    folder = path.expanduser().absolute().parent
    if not folder.is_dir():
        from am.errors import UsageError

        what = "is not a folder" if folder.exists() else "does not exist"
        raise UsageError(f"--output {path}: the folder {folder} {what}",
                         hint=f"create it first (mkdir -p '{folder}'), or write the file elsewhere")


def record_dict(record: Record, path: PurePosixPath | None = None) -> dict[str, Any]:
    """Return the stable JSON shape of a record: its frontmatter, body and path."""
    from am.records import codec  # imported on use: commands that print no record never load it

    return codec.record_dict(record, path)


def emit_json(data: Any) -> None:
    """Print JSON, sorted and indented, as UTF-8."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True))


def unreadable_note(paths: list[str] | tuple[str, ...], where: str) -> None:
    """Say on stderr how many record files could not be read (they are not ``where``: listed, in this pack), and which."""
    if paths:
        named = ", ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")
        click.echo(f"note: {len(paths)} record file{'s' * (len(paths) != 1)} could not be read and "
                   f"{'are' if len(paths) != 1 else 'is'} not {where} ({named}: am check says why)", err=True)


def report_write(result: WriteResult, fmt: str, verb: str, *, adds: bool = False) -> None:
    """Tell the user what a write did, or that a fact add found the fact already recorded (exit 0).

    ``adds``: the write may find its record already there (fact add); its JSON says ``created``.
    """
    first = result.records[0]
    if fmt == "json":
        emit_json({
            "commit": result.commit or None,
            **({"created": result.created} if adds or not result.created else {}),
            "records": [record_dict(r, p) for r, p in zip(result.records, result.paths)],
            **({} if result.created else {"id": first.id, "note": result.note}),
            **result.similar_json(),
        })
        return
    if not result.created:  # a supersede by a fact that already said it wrote the two files, no twin
        done = f"{verb} it in commit {result.commit[:10]}, no new fact written" if result.commit else "nothing written"
        click.echo(f"already recorded as {first.type} {first.id} ({result.paths[0]}); {done}")
        click.echo(f"  {result.note}")
        return
    click.echo(f"{verb} {first.type} {first.id} ({result.paths[0]}) in commit {result.commit[:10]}")
    for record, path in zip(result.records[1:], result.paths[1:]):
        click.echo(f"  also wrote {record.type} {record.id} ({path})")
    click.echo(result.similar_text(), nl=False)  # holding facts it may update or contradict (am/writes/judge.py)


def describe(record: Record, path: PurePosixPath | None = None) -> str:
    """Return a record as a short block for people."""
    from am.records.model import Fact, Relation, Topic

    lines = []
    if isinstance(record, Topic):
        lines.append(f"{record.id}  [{record.kind}]  {record.title}")
        if record.aliases:
            lines.append(f"  aliases: {', '.join(record.aliases)}")
    elif isinstance(record, Fact):
        world = " ".join(
            f"{k}={v}" for k, v in (("repo", record.repo), ("branch", record.version), ("commit", record.commit)) if v
        )
        lines.append(f"{record.id}  {record.status}  {record.confidence}  topics: {', '.join(record.topics)}")
        lines.append(f"  provenance: {record.provenance}" + (f"  world: {world}" if world else ""))
        if record.supersedes:
            lines.append(f"  supersedes: {', '.join(record.supersedes)}")
        if record.superseded_by:
            lines.append(f"  superseded by: {record.superseded_by}")
        if record.valid_from or record.valid_until:
            lines.append(f"  valid: from {record.valid_from or 'always'} until {record.valid_until or 'further notice'}")
        if record.reason:
            lines.append(f"  reason: {record.reason}")
        if record.paths:
            lines.append(f"  watches: {', '.join(record.paths)}")
    elif isinstance(record, Relation):
        lines.append(f"{record.id}  {record.status}  {record.from_} --{record.rel}--> {record.to}")
    if path is not None:
        lines.append(f"  file: {path}")
    if record.body.strip():
        lines.append("")
        lines.extend("  " + line for line in record.body.rstrip("\n").split("\n"))
    return "\n".join(lines)


def here_world(repo: str | None, branch: str | None,
               commit: str | None) -> tuple[str | None, str | None, str | None]:
    """Fill the world from the registered clone (or worktree) around the current folder, where not given."""
    from am.worlds.here import fill_world  # the MCP server's tools fill theirs through it too

    return fill_world(repo, branch, commit)


# The fact filters (--tag, --confidence, --pinned, --provenance, --session, --actor) of list and search: here,
# not in a module of their own, so that a read command imports no module beyond its own (tests/test_startup.py).

def fact_filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the fact filters to a command (as keyword arguments named filter_*)."""
    return _with_filters(func, session=True)


def search_filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The fact filters but --session: am search's --session searches the session logs (there, --provenance
    session:ID filters facts by session)."""
    return _with_filters(func, session=False)


def _with_filters(func: Callable[..., Any], *, session: bool) -> Callable[..., Any]:
    options = [
        click.option("--tag", "filter_tags", multiple=True, metavar="TAG",
                     help="Only facts with this tag (repeatable: all)."),
        click.option("--confidence", "filter_confidence", multiple=True, type=click.Choice(["high", "medium", "low"]),
                     help="Only facts of this confidence (repeatable: any)."),
        click.option("--pinned/--not-pinned", "filter_pinned", default=None, help="Only pinned (or unpinned) facts."),
        click.option("--provenance", "filter_provenance", default=None, metavar="P",
                     help="Only facts of this provenance (a prefix ending in ':' matches, e.g. session:)."),
    ]
    if session:
        options.append(click.option("--session", "filter_session", default=None, metavar="ID",
                                    help="Only facts from this session (provenance session:ID)."))
    options.append(click.option("--actor", "filter_actor", default=None, metavar="NAME",
                                help="Only facts whose first commit is this actor's (as am log names it)."))
    for option in reversed(options):
        func = option(func)
    return func


def fact_filter(values: dict[str, Any]) -> Any:
    """Build the filter from a command's filter_* arguments."""
    from am.upkeep.factfilter import FactFilter

    return FactFilter(tags=tuple(values.get("filter_tags") or ()), confidence=tuple(values.get("filter_confidence") or ()),
                      pinned=values.get("filter_pinned"), provenance=values.get("filter_provenance"),
                      session=values.get("filter_session"), actor=values.get("filter_actor"))
