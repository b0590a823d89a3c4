"""`am diff`: what memory says differently in two worlds, or on a branch once another is merged into it.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

import re
from typing import Any

import click

from am.cli.context import emit_json, open_vault

_HEX = re.compile(r"[0-9a-fA-F]{4,40}")
_SAY = {"holds": "holds only in", "superseded": "superseded only in", "stale": "stale only in",
        "contested": "contested only in"}


def _request(repo: str, name: str, include_pending: bool) -> Any:
    """A side of the diff: a branch of the clone, else (when it looks like one) a commit."""
    from am.errors import UnknownWorldError
    from am.packs.pack import SliceRequest
    from am.packs.slice import world_of
    from am.worlds.ancestry import now

    branch = SliceRequest(repo=repo, branch=name, include_pending=include_pending, max_tokens=0)
    try:
        world_of(open_vault(click.get_current_context()), branch, at=now())
        return branch
    except UnknownWorldError:
        if not _HEX.fullmatch(name):
            raise
    return SliceRequest(repo=repo, commit=name, include_pending=include_pending, max_tokens=0)


@click.command("diff")
@click.argument("world_a", metavar="A")
@click.argument("world_b", metavar="B")
@click.option("--repo", required=True, metavar="NAME", help="The code repository whose worlds are compared.")
@click.option("--merge-preview", is_flag=True,
              help="Compare A now with A once B is merged into it (the merge is computed, not made).")
@click.option("--include-pending", is_flag=True, help="Count pending-review facts as holding.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True,
              help="text and markdown are the same Markdown, fit for a pull-request comment.")
@click.pass_context
def diff(ctx: click.Context, world_a: str, world_b: str, repo: str, merge_preview: bool, include_pending: bool,
         fmt: str) -> None:
    """Show what memory says differently in world A and world B, by topic.

    A and B are branches (or commits) of --repo. A fact is listed where it holds in one
    world only, or is superseded, stale or contested in one only. With --merge-preview,
    B is merged into A as Git would merge it (no ref, index or file changes) and A is
    compared with A after the merge, facts made stale by the merge included.

    Example: am diff --repo project-alpha main feat-rate-limit --merge-preview --format markdown
    """
    from am.packs import worlddiff

    vault = open_vault(ctx)
    if merge_preview:
        before, after, notes = worlddiff.merge_preview(vault, repo, world_a, world_b, include_pending=include_pending)
        result = worlddiff.diff_states(vault, before, after, notes)
    else:
        a, b = _request(repo, world_a, include_pending), _request(repo, world_b, include_pending)
        first, second = worlddiff.state_of(vault, a), worlddiff.state_of(vault, b)
        worlddiff.refuse_same(first.world, second.world)
        result = worlddiff.diff_states(vault, first, second)
    if fmt == "json":
        emit_json(result.to_json())
        return
    click.echo(render_markdown(result), nl=False)


def render_markdown(result: Any) -> str:
    """Return a diff as Markdown: a heading, the counts, then each topic's changes."""
    a, b = result.a.label, result.b.label
    lines = [f"## Memory: {a} → {b}", ""]
    if not result.changes:
        lines.append(f"No fact holds, is superseded, stale or contested differently ({len(result.a.facts)} facts "
                     f"hold in {a}, {len(result.b.facts)} in {b}).")
    else:
        counts = result.counts()
        said = [f"{kind}: {c['a']} in {a} only, {c['b']} in {b} only" for kind, c in counts.items()
                if c["a"] or c["b"]]
        lines.append(f"{len({c.id for c in result.changes})} facts differ ({'; '.join(said)}).")
        for topic, changes in result.by_topic().items():
            lines += ["", f"### {topic}", ""]
            for change in changes:
                where = a if change.side == "a" else b
                detail = f" ({change.detail})" if change.detail else ""
                lines.append(f"- **{_SAY[change.kind]} {where}** `{change.id}`{detail}: {change.text}")
    for note in result.notes:
        lines += ["", f"> note: {note}"]
    return "\n".join(lines) + "\n"


COMMANDS: list[Any] = [diff]
