"""`am why` and `am stale`: why a fact is (not) in a world, and which facts are stale in one.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

from typing import Any

import click

from am.cli.context import (
    FORMAT_OPTION,
    emit_json,
    here_world,
    open_vault,
    world_options,
)


def _request(repo: str | None, branch: str | None, commit: str | None, at: str | None,
             include_pending: bool) -> Any:
    from am.cli.cmd_slice import _time
    from am.packs.pack import SliceRequest

    repo, branch, commit = here_world(repo, branch, commit)
    moment, label = _time(at, "--at")
    return SliceRequest(repo=repo, branch=branch, commit=commit, at=moment, at_label=label or "now",  # type: ignore[arg-type]
                        include_pending=include_pending, max_tokens=0)


@click.command("why")
@click.argument("fact_id", metavar="ID")
@world_options
@FORMAT_OPTION
@click.pass_context
def why(ctx: click.Context, fact_id: str, repo: str | None, branch: str | None, commit_: str | None,
        at: str | None, include_pending: bool, fmt: str) -> None:
    """Explain why fact ID is or is not in a world: every rule, with its evidence.

    The rules are a slice's (status, repo, commit ancestry or branch name, valid
    time, supersession in this world, staleness), in that order; the verdict is
    the one `am slice` reaches for the same world. Inside a registered clone or
    worktree the world is its branch and HEAD.

    Example: am why fact-alpha-getuser-main --repo project-alpha --branch main
    """
    from am.packs.why import why_fact

    explanation = why_fact(open_vault(ctx), fact_id, _request(repo, branch, commit_, at, include_pending))
    if fmt == "json":
        emit_json(explanation.to_json())
    else:
        click.echo(explanation.render(), nl=False)


@click.command("stale")
@world_options
@FORMAT_OPTION
@click.pass_context
def stale(ctx: click.Context, repo: str | None, branch: str | None, commit_: str | None, at: str | None,
          include_pending: bool, fmt: str) -> None:
    """List the facts stale in one world: they hold there, and code they watch changed since their commit.

    Staleness is derived from the code repository's graph per world (a commit on
    another branch never makes main's facts stale) and never written to the
    vault; re-confirm a fact of this branch (or of one the clone no longer has) with
    `am fact confirm ID --commit C`; one of another branch (main's, seen on an
    experiment branch) that no longer holds here is superseded on this branch:
    `am fact supersede ID TEXT --branch B --reason R`. A fact that
    holds and watches code but cannot be judged (no readable registered clone,
    no commit, or one the clone lacks) is listed apart, with why ("cannot tell";
    `cannot_tell` in JSON), never counted as fresh. The exit code is 0 either way.

    Example: am stale --repo project-alpha --branch main
    """
    from am.errors import UsageError
    from am.packs.why import stale_in_world

    report = stale_in_world(open_vault(ctx), _request(repo, branch, commit_, at, include_pending))
    world = report.setup.world
    if world.repo is None:  # staleness is judged against a code repository's graph: no repo, nothing to say
        raise UsageError("am stale needs a code repository, and none was given or found here",
                         hint="pass --repo NAME (see: am repo list), or run it in a registered clone")
    if fmt == "json":
        emit_json({"world": {"repo": world.repo, "branch": world.branch, "commit": world.commit,
                             "rule": report.setup.rule},
                   "stale": [{"id": s.fact.id, "commit": s.fact.commit, "paths": list(s.fact.paths),
                              **{f"changed_{k}": v for k, v in s.mark.to_json().items()}} for s in report.facts],
                   "cannot_tell": [{"id": f.id, "commit": f.commit, "paths": list(f.paths), "why": why}
                                   for f, why in report.cannot_tell]})
        return
    where = f"{world.repo or 'no repo'}" + (f" @ {world.branch}" if world.branch else "") + (
        f" ({world.commit[:10]})" if world.commit else "")
    if not report.facts and report.setup.oracle is None and world.repo is not None:
        # Staleness is derived from the registered clone's graph: without it nothing can be said.
        click.echo(f"cannot tell which facts are stale in {where}: " + "; ".join(report.setup.notes))
        for f, _ in report.cannot_tell:
            click.echo(f"  {f.id}  watches {', '.join(f.paths)}")
        return
    if not report.facts and not report.cannot_tell:
        click.echo(f"no stale facts in {where}")
        return
    if report.facts:
        click.echo(f"{len(report.facts)} stale fact{'s' * (len(report.facts) != 1)} in {where}:")
    for s in report.facts:
        click.echo(f"  {s.fact.id}  observed at {(s.fact.commit or '?')[:10]}; {s.mark.describe()}")
    if report.cannot_tell:
        n = len(report.cannot_tell)
        click.echo(f"cannot tell whether {n} fact{'s' * (n != 1)} {'is' if n == 1 else 'are'} stale in {where}:")
        for f, why in report.cannot_tell:
            click.echo(f"  {f.id}  {why}")

COMMANDS = [why, stale]
