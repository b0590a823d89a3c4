"""`am fact`: add, supersede, edit, expire, change status, show and list facts.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from am.cli.context import (FORMAT_OPTION, describe, emit_json, fact_filter, fact_filter_options, open_vault,
                            read_text_arg, record_dict, report_write, unreadable_note)
from am.records.codec import conflict_marker_line
from am.records.writes import FactDraft


def _fact_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--topic", "topics", multiple=True, metavar="ID", help="A topic the fact is about (repeatable)."),
        click.option("--confidence", type=click.Choice(["high", "medium", "low", "auto"]), default=None,
                     help="How sure the writer is (default: medium, or the old fact's, or the vault's "
                          "confidence: setting); auto: read from the words (docs/format/fact.md)."),
        click.option("--provenance", default=None,
                     help="Where it comes from: human, session:<id>, commit:<sha>, a URL ... (default: "
                          "session:ACTOR for --actor/AM_ACTOR, else human)"),
        click.option("--repo", default=None, help="World: the code repository it holds in (registered name)."),
        click.option("--branch", default=None, help="World: the branch or tag where it was observed."),
        click.option("--commit", "commit_", default=None, help="World: the commit where it was observed."),
        click.option("--here", is_flag=True,
                     help="Fill --repo, --branch and --commit from the Git repository of the current folder "
                          "(with uncommitted changes in the --path files, or anywhere without --path: a warning, "
                          "and dirty: true in the fact)."),
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


def _say_observed_at(draft: FactDraft, result: Any) -> None:
    """Say on stderr which commit a fact with --repo and --path but no --branch or --commit was recorded at."""
    from am.writes.worldwrites import observed_at_head

    said = observed_at_head(draft, result.records[0]) if result.created else None
    if said:
        click.echo(f"note: {said}", err=True)


def _draft(text: str, confidence: str | None, kw: dict[str, Any]) -> FactDraft:
    here = kw.pop("here")
    draft = FactDraft(
        text=read_text_arg(text), topics=kw.pop("topics"), id=kw.pop("fact_id"), confidence=confidence,
        provenance=kw.pop("provenance"), repo=kw.pop("repo"), branch=kw.pop("branch"), commit=kw.pop("commit_"),
        paths=kw.pop("paths"), valid_from=kw.pop("valid_from"), valid_until=kw.pop("valid_until"),
        tags=kw.pop("tags"), pin=kw.pop("pin"), axis=kw.pop("axis"),
    )
    if not here:
        return draft
    from am.writes.worldwrites import draft_here

    draft, warning = draft_here(draft)  # the world of the clone around us; dirty: true over uncommitted work
    if warning:
        click.echo(f"warning: {warning}", err=True)
    return draft


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
    _say_observed_at(draft, result)


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
    if fmt == "json" or not result.created or len(result.records) < 2:
        report_write(result, fmt, "superseded by")
        return
    new, old = result.records[0], result.records[1]  # said in the order it happened: OLD is replaced by NEW
    click.echo(f"superseded fact {old.id} with fact {new.id} ({result.paths[0]}) in commit {result.commit[:10]}")
    _say_observed_at(draft, result)


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
@click.option("--provenance", default=None,
              help="Where the new text comes from (default: session:ACTOR for --actor/AM_ACTOR, else human).")
@FORMAT_OPTION
@click.pass_context
def edit(ctx: click.Context, fact_id: str, text: str, allow_secret: bool, provenance: str | None, fmt: str) -> None:
    """Fix a typo in a fact's text, keeping its id (one commit). TEXT - reads standard input.

    The text is then yours: the fact's provenance becomes --provenance, else
    yours (session:ACTOR for --actor/AM_ACTOR, else human), and the commit's
    reason names the one it was. A change of meaning is a new fact: use am fact supersede.

    Example: am fact edit f-20260923-1630-3f0e99 "Alpha on main offers getUser(id)."
    """
    result = open_vault(ctx).edit_fact(fact_id, read_text_arg(text), allow_secrets=allow_secret,
                                       provenance=provenance)
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
    """Show one fact: its fields, its valid time read against now, and where it holds.

    Where it holds is judged as am why judges it, on the fact's own branch and on
    its repository's main (stale, superseded there, or cannot tell without a clone).

    Example: am fact show fact-alpha-getuser-main --format json
    """
    from am.clock import now
    from am.packs.factview import holds_in, render_holds, time_note
    from am.records.model import Fact

    vault = open_vault(ctx)
    path, record = vault.get_typed(fact_id, Fact, "fact")
    vault.note_uses([record.id])  # showing a fact is a use of it (am now, ranking)
    note = time_note(record, now())
    found = holds_in(vault, record)
    if fmt == "json":
        emit_json({**record_dict(record, path), "valid_now": note is None, "holds_in": found})
        return
    click.echo(describe(record, path))
    click.echo("")
    if note is not None:
        click.echo(f"note: status {record.status} as written, but {note}")
    click.echo("where it holds:")
    for line in render_holds(found):
        click.echo(line)


@fact.command("confirm")
@click.argument("fact_id", metavar="ID")
@click.option("--commit", "commit_", default=None,
              help="The commit it was re-observed at (default: the tip of the fact's branch).")
@click.option("--unverified", is_flag=True, help="Record --commit as given, without checking the clone.")
@click.option("--here", is_flag=True,
              help="Confirm it at the HEAD of the registered clone (or worktree) of its repo around this folder.")
@FORMAT_OPTION
@click.pass_context
def confirm(ctx: click.Context, fact_id: str, commit_: str | None, unverified: bool, here: bool, fmt: str) -> None:
    """Re-confirm a fact at a newer commit (one commit): it is no longer stale where the code changed before.

    The commit must descend from the fact's and be on the fact's branch (or that
    branch be gone from the clone: delete a merged one); a fact of another branch made stale on
    yours is superseded there instead: am fact supersede ID TEXT --branch B.

    Example: am fact confirm f-20261002-0915-c4f1a5 --commit 743299d
    """
    vault = open_vault(ctx)
    if here:
        commit_ = _here_commit(vault, fact_id, commit_)
    result = vault.confirm_fact(fact_id, commit=commit_, unverified=unverified)
    report_write(result, fmt, "confirmed")


def _here_commit(vault: Any, fact_id: str, given: str | None) -> str:
    """The HEAD of the registered clone around this folder, which must be a clone of the fact's repo."""
    from am.errors import UsageError
    from am.worlds.here import registered_here

    if given is not None:
        raise UsageError("--here and --commit both say where it was confirmed", hint="give one of them")
    fact = vault.get_fact(fact_id)
    found = registered_here()
    if found is None:
        raise UsageError("--here: this folder is not in a registered clone",
                         hint=f"cd into the clone of {fact.repo or 'its repo'}, or register it: am repo add NAME PATH")
    name, checkout = found
    if fact.repo != name:
        raise UsageError(f"--here: this folder is a clone of {name}, and {fact_id} is about {fact.repo or 'no repo'}",
                         hint=f"cd into the clone of {fact.repo}, or pass --commit C")
    _, commit = checkout.head()
    if commit is None:
        raise UsageError(f"--here: the clone of {name} has no commit", hint="commit first, or pass --commit C")
    return str(commit)


@fact.command("forget")
@click.argument("fact_id", metavar="ID")
@click.option("--reason", required=True, help="Why it is forgotten (kept in the tombstone and the commit).")
@FORMAT_OPTION
@click.pass_context
def forget(ctx: click.Context, fact_id: str, reason: str, fmt: str) -> None:
    """Forget a fact on purpose (one commit): its text becomes a tombstone naming who and why, and it is expired.

    Packs, search and the cache no longer hold the text; Git's history still does.
    To take it out of history too (a pasted secret, personal data): am purge ID.

    Example: am fact forget f-20261012-1100-07bb3e --reason "customer data pasted by mistake"
    """
    from am.clock import now
    from am.writes.forget import forget_fact

    vault = open_vault(ctx)
    result = forget_fact(vault.writer, fact_id, reason=reason, actor=vault.actor, when=now().isoformat())
    report_write(result, fmt, "forgot")
    if fmt != "json":
        click.echo(f"note: history still holds the text; to remove it from history: am purge {fact_id} "
                   f"--reason \"...\"", err=True)


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
@fact_filter_options
@FORMAT_OPTION
@click.pass_context
def list_(ctx: click.Context, /, topic: str | None, status: str | None, repo: str | None, branch: str | None,
          limit: int | None, fmt: str, **filters: Any) -> None:
    """List facts, oldest first, each with its status and world (repo@branch@commit).

    A --repo, --branch or --topic that names nothing (a typo) is refused, with the
    closest name, as am slice refuses it (exit 13, or 4 for a topic).

    Example: am fact list --topic project-alpha --status active --repo project-alpha --branch main
    """
    vault = open_vault(ctx)
    facts = vault.list_facts(topic=topic, status=status, repo=repo)
    if branch is not None:
        facts = [f for f in facts if f.version == branch]
    chosen = fact_filter(filters)
    facts = chosen.apply(vault, facts)
    if not facts and (repo or branch or topic):  # a filter that matched something names something
        from am.writes.lookup import check_filters

        check_filters(vault.files, repo=repo, topic=topic, branch=branch)
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
        click.echo("no facts match" + (f" {chosen.describe()}" if chosen else ""), err=True)
    _unreadable_note(ctx)


def _unreadable_note(ctx: click.Context) -> None:
    """Name the record files that do not parse, committed or not (a git pull's conflict markers): they are not listed."""
    index = open_vault(ctx).cache()
    unreadable_note(index.unreadable_paths() if index is not None else [], "listed")
