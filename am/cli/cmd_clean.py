"""`am clean`: expire every holding fact (or a topic's) in one commit, after asking.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from am.cli.context import FORMAT_OPTION, open_vault, report_write


@click.command("clean")
@click.option("--reason", required=True, help="Why memory is wiped (kept in every fact and the commit).")
@click.option("--topic", default=None, metavar="ID", help="Only the facts about this topic.")
@click.option("--yes", is_flag=True, help="Do not ask (a script, CI); without it, am asks on a terminal.")
@FORMAT_OPTION
@click.pass_context
def clean(ctx: click.Context, reason: str, topic: str | None, yes: bool, fmt: str) -> None:
    """Expire every fact that holds (active, contested, pending review), in one commit: memory wiped, nothing deleted.

    Undo it whole with git revert COMMIT (or am undo COMMIT). Topics and relations stay.

    Example: am clean --topic project-alpha --reason "the service was rewritten from scratch"
    """
    from am.errors import UsageError
    from am.writes.clean import clean_facts, holding_facts

    vault = open_vault(ctx)
    if topic is not None:
        vault.get_topic(topic)  # an unknown topic is refused with its did-you-mean, not "nothing to clean"
    facts = holding_facts(vault.list_facts(), topic)
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"am clean would expire {len(facts)} facts and asks first; no terminal to ask on",
                             hint="pass --yes to confirm")
        scope = f"on topic {topic}" if topic else "in the vault"
        click.confirm(f"expire all {len(facts)} facts that hold {scope}? (one commit; git revert undoes it)",
                      abort=True)
    result = clean_facts(vault.writer, [f.id for f in facts], reason=reason, topic=topic)
    if fmt == "json":
        report_write(result, fmt, "cleaned")
        return
    click.echo(f"expired {len(facts)} facts in commit {result.commit[:10]}; undo it with: am undo {result.commit[:10]}")


COMMANDS: list[Any] = [clean]
