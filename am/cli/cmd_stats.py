"""`am stats`, `am today`, `am day`: the vault's numbers, and one day's writes as a readable page.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from typing import Any

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault, unreadable_note


@click.command("stats")
@click.option("--no-actors", is_flag=True, help="Skip who wrote each fact (it reads the whole history).")
@FORMAT_OPTION
@click.pass_context
def stats(ctx: click.Context, no_actors: bool, fmt: str) -> None:
    """Count records: facts by status, confidence, provenance, actor and week; pins; topics and relations.

    Example: am stats --format json
    """
    from am.upkeep.stats import vault_stats

    numbers = vault_stats(open_vault(ctx), actors=not no_actors)
    if fmt == "json":
        emit_json(numbers)
        return
    facts = numbers["facts"]
    click.echo(f"facts: {facts['total']}  (pinned: {facts['pinned']})")
    for title, key in (("status", "by_status"), ("confidence", "by_confidence"), ("provenance", "by_provenance"),
                       ("actor", "by_actor"), ("week", "by_week")):
        if key in facts:
            _counts_line(f"  by {title}", facts[key])
    topics, relations = numbers["topics"], numbers["relations"]
    click.echo(f"topics: {topics['total']}")
    _counts_line("  by kind", topics["by_kind"])
    click.echo(f"relations: {relations['total']}")
    _counts_line("  by type", relations["by_type"])
    unreadable_note(numbers["unreadable"], "counted")


def _counts_line(title: str, counts: dict[str, int]) -> None:
    if counts:
        click.echo(f"{title}: " + ", ".join(f"{name} {n}" for name, n in counts.items()))


@click.command("today")
@FORMAT_OPTION
@click.pass_context
def today(ctx: click.Context, fmt: str) -> None:
    """Print today's writes as one page: facts written and superseded, proposals, sessions, reviews, hand edits.

    The day is the user's (the machine's time zone; $AM_NOW in tests).

    Example: am today --format json
    """
    _print_day(ctx, "today", fmt)


@click.command("day")
@click.argument("when", metavar="DATE")
@FORMAT_OPTION
@click.pass_context
def day(ctx: click.Context, when: str, fmt: str) -> None:
    """Print one day's writes as one page (DATE: 2026-10-05, yesterday, '3 days ago', 'last Friday', 上周五).

    Example: am day 2026-10-05
    """
    _print_day(ctx, when, fmt)


def _print_day(ctx: click.Context, when: str, fmt: str) -> None:
    from am.clock import now
    from am.upkeep.daylog import day_log, parse_day

    moment = now()
    log = day_log(open_vault(ctx), parse_day(when, moment), moment.tzinfo)
    if fmt == "json":
        emit_json(log.to_json())
        return
    click.echo(f"{log.day.isoformat()} ({log.day:%A}): {_writes(log.count)}")
    for title, entries in log.sections:
        click.echo("")
        click.echo(f"{title} ({len(entries)})")
        for entry in entries:
            clock = entry.time[11:16]
            shown = entry.records or ("-",)
            for i, record_id in enumerate(shown[:8]):
                lead = f"  {clock}  {entry.actor:<14}" if i == 0 else " " * (4 + 5 + 2 + 14)
                text = log.texts.get(record_id, "")
                click.echo(f"{lead} {record_id}" + (f"  {_short(text)}" if text else ""))
            if len(shown) > 8:
                click.echo(" " * 26 + f"+{len(shown) - 8} more (am log --since {log.day.isoformat()})")


def _writes(n: int) -> str:
    return "no writes" if n == 0 else f"{n} write" + ("" if n == 1 else "s")


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


COMMANDS: list[Any] = [stats, today, day]
