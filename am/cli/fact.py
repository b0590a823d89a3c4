"""`am fact`: add, supersede, edit, expire, change status, show and list facts.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from am.cli.context import (FORMAT_OPTION, describe, emit_json, open_vault, read_text_arg, record_dict, report_write,
                            unreadable_note)
from am.records.codec import conflict_marker_line
from am.records.writes import FactDraft


def _fact_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--topic", "topics", multiple=True, metavar="ID", help="A topic the fact is about (repeatable)."),
        click.option("--confidence", type=click.Choice(["high", "medium", "low"]), default=None,
                     help="How sure the writer is (default: medium, or the old fact's)."),
        click.option("--provenance", default=None,
                     help="Where it comes from: human, session:<id>, commit:<sha>, a URL ... (default: "
                          "session:ACTOR for --actor/AM_ACTOR, else human)"),
        click.option("--repo", default=None, help="World: the code repository it holds in (registered name)."),
        click.option("--branch", default=None, help="World: the branch or tag where it was observed."),
        click.option("--commit", "commit_", default=None, help="World: the commit where it was observed."),
        click.option("--here", is_flag=True,
                     help="Fill --repo, --branch and --commit from the Git repository of the current folder."),
        click.option("--path", "paths", multiple=True, help="Code path the fact is about, watched for staleness."),
        click.option("--valid-from", default=None, help="Valid time: holds from (ISO date or date-time)."),
        click.option("--valid-until", default=None, help="Valid time: holds until (exclusive)."),
        click.option("--axis", type=click.Choice(["subject", "time", "timeless"]), default=None,
                     help="Which axis decides validity (default: subject when a repo or commit is set)."),
        click.option("--tag", "tags", multiple=True, help="A tag (repeatable)."),
        click.option("--pin", is_flag=True, help="Always keep this fact first in a slice."),
        click.option("--id", "fact_id", default=None, help="A readable id instead of a generated one."),
        click.option("--create-topic", is_flag=True, help="Create topics that do not exist yet."),
        click.option("--allow-secret", is_flag=True, help="Write even if the text looks like a credential."),
        click.option("--unverified", is_flag=True,
                     help="Record --repo/--branch/--commit as given, without checking the registered clone."),
        FORMAT_OPTION,
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _world(here: bool, repo: str | None, branch: str | None,
           commit: str | None) -> tuple[str | None, str | None, str | None]:
    if not here:
        return repo, branch, commit
    from am.worlds.here import world_here

    found = world_here()
    return repo or found[0], branch or found[1], commit or found[2]


def _draft(text: str, confidence: str | None, kw: dict[str, Any]) -> FactDraft:
    repo, branch, commit = _world(kw.pop("here"), kw.pop("repo"), kw.pop("branch"), kw.pop("commit_"))
    return FactDraft(
        text=read_text_arg(text), topics=kw.pop("topics"), id=kw.pop("fact_id"), confidence=confidence,
        provenance=kw.pop("provenance"), repo=repo, branch=branch, commit=commit, paths=kw.pop("paths"),
        valid_from=kw.pop("valid_from"), valid_until=kw.pop("valid_until"), tags=kw.pop("tags"),
        pin=kw.pop("pin"), axis=kw.pop("axis"),
    )


@click.group()
def fact() -> None:
    """Facts: one statement each, with status, confidence, provenance and world.

    Example: am fact add "Alpha uses Redis for sessions" --topic project-alpha --confidence high
    """


@fact.command("add")
@click.argument("text")
@_fact_options
@click.option("--if-similar", type=click.Choice(["warn", "refuse", "allow"]), default=None,
              help="What a holding fact that looks like this one does (default: the vault's similar:, else warn): "
                   "warn writes a likely update beside it and names it, refuse writes nothing, allow does not look. "
                   "A restatement is never written twice, except under allow.")
@click.pass_context
def add(ctx: click.Context, /, text: str, confidence: str | None, fmt: str, if_similar: str | None,
        **kw: Any) -> None:
    """Add a fact (one commit). TEXT is 1-3 sentences, or - to read standard input.

    The same fact already recorded (the same text up to whitespace, the same topics, repo and
    branch, and still active, contested or pending review) writes nothing: its id is printed, with
    the command that records it still holds at a newer commit (am fact confirm ID --commit C); exit 0.
    So does a restatement of a holding fact of the same world sharing a topic (other case, punctuation,
    stop words). A likely update or contradiction of one (another number, date, weekday, name, or a
    negation) is written and the holding fact named, with the command that supersedes it instead.

    Example: am fact add "Alpha on main only offers getUser(id)" --topic project-alpha --repo project-alpha --branch main
    """
    from dataclasses import replace

    vault = open_vault(ctx)
    draft = replace(_draft(text, confidence, kw), if_similar=if_similar)
    result = vault.add_fact(draft, create_topics=kw.pop("create_topic"), allow_secrets=kw.pop("allow_secret"),
                            unverified=kw.pop("unverified"))
    report_write(result, fmt, "added", adds=True)


@fact.command("supersede")
@click.argument("old_id", metavar="OLD")
@click.argument("text")
@click.option("--reason", required=True, help="What changed.")
@_fact_options
@click.pass_context
def supersede(ctx: click.Context, /, old_id: str, text: str, reason: str, confidence: str | None, fmt: str,
              **kw: Any) -> None:
    """Replace fact OLD with a new fact (one commit touching both files).

    The new fact inherits OLD's topics and world unless you give new ones. When
    another holding fact already says TEXT (same topics, repo and branch), OLD
    is superseded by that fact instead and no second copy is written. Run again
    (a retry) once OLD is superseded by a fact saying TEXT, it writes nothing and
    says so (exit 0); another TEXT is an error.

    Example: am fact supersede fact-alpha-getuser-main "Alpha offers getUsers(ids) too" --reason "batch API merged"
    """
    vault = open_vault(ctx)
    draft = _draft(text, confidence, kw)
    result = vault.supersede_fact(old_id, draft, reason=reason, create_topics=kw.pop("create_topic"),
                                  allow_secrets=kw.pop("allow_secret"), unverified=kw.pop("unverified"))
    report_write(result, fmt, "superseded by")


@fact.command("expire")
@click.argument("fact_id", metavar="ID")
@click.option("--reason", required=True, help="Why it no longer holds.")
@FORMAT_OPTION
@click.pass_context
def expire(ctx: click.Context, fact_id: str, reason: str, fmt: str) -> None:
    """Mark a fact expired: it no longer holds anywhere, and stays in the vault.

    Example: am fact expire f-20260923-1630-3f0e99 --reason "service retired"
    """
    report_write(open_vault(ctx).expire_fact(fact_id, reason=reason), fmt, "expired")


@fact.command("edit")
@click.argument("fact_id", metavar="ID")
@click.argument("text")
@click.option("--allow-secret", is_flag=True, help="Write even if the text looks like a credential.")
@FORMAT_OPTION
@click.pass_context
def edit(ctx: click.Context, fact_id: str, text: str, allow_secret: bool, fmt: str) -> None:
    """Fix a typo in a fact's text, keeping its id (one commit). TEXT - reads standard input.

    A change of meaning is a new fact: use am fact supersede.

    Example: am fact edit f-20260923-1630-3f0e99 "Alpha on main offers getUser(id)."
    """
    result = open_vault(ctx).edit_fact(fact_id, read_text_arg(text), allow_secrets=allow_secret)
    report_write(result, fmt, "edited")


@fact.command("status")
@click.argument("fact_id", metavar="ID")
@click.argument("status", type=click.Choice(["active", "contested", "pending-review", "expired", "superseded"]))
@click.option("--reason", default=None, help="Why the status changed.")
@FORMAT_OPTION
@click.pass_context
def status(ctx: click.Context, fact_id: str, status: str, reason: str | None, fmt: str) -> None:
    """Set a fact's status.

    Example: am fact status f-20260923-1630-3f0e99 contested --reason "two sessions disagree"
    """
    report_write(open_vault(ctx).set_fact_status(fact_id, status, reason=reason), fmt, "updated")


@fact.command("unpin")
@click.argument("fact_id", metavar="ID")
@FORMAT_OPTION
@click.pass_context
def unpin(ctx: click.Context, fact_id: str, fmt: str) -> None:
    """Unpin a fact (one commit; the same as am fact pin ID --off): it is ranked and fades like any other.

    Example: am fact unpin f-20260923-1630-3f0e99
    """
    report_write(open_vault(ctx).pin_fact(fact_id, pinned=False), fmt, "unpinned")


@fact.command("show")
@click.argument("fact_id", metavar="ID")
@FORMAT_OPTION
@click.pass_context
def show(ctx: click.Context, fact_id: str, fmt: str) -> None:
    """Show one fact.

    Example: am fact show fact-alpha-getuser-main --format json
    """
    from am.records.model import Fact

    vault = open_vault(ctx)
    path, record = vault.get_typed(fact_id, Fact, "fact")
    vault.note_uses([record.id])  # showing a fact is a use of it (am now, ranking)
    if fmt == "json":
        emit_json(record_dict(record, path))
    else:
        click.echo(describe(record, path))


@fact.command("confirm")
@click.argument("fact_id", metavar="ID")
@click.option("--commit", "commit_", default=None,
              help="The commit it was re-observed at (default: the tip of the fact's branch).")
@click.option("--unverified", is_flag=True, help="Record --commit as given, without checking the clone.")
@FORMAT_OPTION
@click.pass_context
def confirm(ctx: click.Context, fact_id: str, commit_: str | None, unverified: bool, fmt: str) -> None:
    """Re-confirm a fact at a newer commit (one commit): it is no longer stale where the code changed before.

    The commit must descend from the fact's and be on the fact's branch (or that
    branch be gone from the clone: delete a merged one); a fact of another branch made stale on
    yours is superseded there instead: am fact supersede ID TEXT --branch B.

    Example: am fact confirm f-20261002-0915-c4f1a5 --commit 743299d
    """
    result = open_vault(ctx).confirm_fact(fact_id, commit=commit_, unverified=unverified)
    report_write(result, fmt, "confirmed")


@fact.command("pin")
@click.argument("fact_id", metavar="ID")
@click.option("--off", is_flag=True, help="Unpin it instead.")
@FORMAT_OPTION
@click.pass_context
def pin(ctx: click.Context, fact_id: str, off: bool, fmt: str) -> None:
    """Pin a fact (one commit): pinned facts come first in every pack and are the last a budget gives up.

    Example: am fact pin f-20260924-1400-b31f07
    """
    report_write(open_vault(ctx).pin_fact(fact_id, pinned=not off), fmt, "unpinned" if off else "pinned")


_STATUSES = ["active", "contested", "pending-review", "expired", "superseded"]


def world_of(fact: Any) -> str:
    """Return a fact's world in short form: repo@branch@commit, or 'any' when it names none."""
    if not (fact.repo or fact.version or fact.commit):
        return "any"
    where = fact.repo or "any-repo"
    if fact.version:
        where += f"@{fact.version}"
    if fact.commit:
        where += f"@{fact.commit[:7]}"
    return where


@fact.command("list")
@click.option("--topic", default=None, help="Only facts about this topic.")
@click.option("--status", default=None, type=click.Choice(_STATUSES), help="Only facts with this status (default: all).")
@click.option("--repo", default=None, help="Only facts of this code repository (its repo: field).")
@click.option("--branch", default=None, help="Only facts recorded on this branch (their branch: field).")
@click.option("--limit", default=None, type=click.IntRange(1), help="At most this many (the newest).")
@FORMAT_OPTION
@click.pass_context
def list_(ctx: click.Context, topic: str | None, status: str | None, repo: str | None, branch: str | None,
          limit: int | None, fmt: str) -> None:
    """List facts, oldest first, each with its status and world (repo@branch@commit).

    Example: am fact list --topic project-alpha --status active --repo project-alpha --branch main
    """
    facts = open_vault(ctx).list_facts(topic=topic, status=status, repo=repo)
    if branch is not None:
        facts = [f for f in facts if f.version == branch]
    if limit is not None:
        facts = facts[-limit:]
    if fmt == "json":
        emit_json([record_dict(f) for f in facts])
        _unreadable_note(ctx)
        return
    worlds = [world_of(f) for f in facts]
    id_width = max([28, *(len(f.id) for f in facts)])  # a long id or world widens its column, never breaks it
    world_width = max([32, *(len(w) for w in worlds)])
    for f, world in zip(facts, worlds):
        first = f.body.strip().split("\n", 1)[0]
        if conflict_marker_line(f.body) is not None:  # committed by a driverless merge: the first side's text, marked
            first = "[conflict markers: am check] " + next(
                (t for t in f.body.splitlines() if t.strip() and not t.startswith(("<<<<<<<", "=======", ">>>>>>>"))), "")
        if len(first) > 72:
            first = first[:71] + "…"
        click.echo(f"{f.id:<{id_width}} {f.status:<14} {world:<{world_width}} {first}")
    if not facts:
        click.echo("no facts match", err=True)
    _unreadable_note(ctx)


def _unreadable_note(ctx: click.Context) -> None:
    """Name the record files that do not parse, committed or not (a git pull's conflict markers): they are not listed."""
    index = open_vault(ctx).cache()
    unreadable_note(index.unreadable_paths() if index is not None else [], "listed")
