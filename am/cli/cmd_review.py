"""`am review`: the one queue of proposals, pending, stale and contested facts, and the decisions on them.

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from am.cli.context import (
    FORMAT_OPTION,
    emit_json,
    here_world,
    open_vault,
    report_write,
)
from am.errors import UsageError

_KINDS = ("proposal", "pending", "stale", "contested", "similar", "due")


def _world(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed([
        click.option("--repo", default=None, metavar="NAME",
                     help="The world's code repository (default: the registered repo of the current folder)."),
        click.option("--branch", default=None, help="The world's branch (default: the clone's current branch)."),
        click.option("--commit", "commit_", default=None, help="The world's commit (default: the branch tip)."),
    ]):
        func = option(func)
    return func


@click.group("review", invoke_without_command=True)
@_world
@click.option("--interactive", "-i", is_flag=True,
              help="One item at a time: single keys in a terminal; from a pipe, one answer a line.")
@click.pass_context
def review(ctx: click.Context, repo: str | None, branch: str | None, commit_: str | None, interactive: bool) -> None:
    """Work the queue of what waits on judgement: proposals, pending, stale and contested facts.

    Without a subcommand, in a terminal: one item at a time with its evidence
    (the session lines, the code diff since the fact's commit, both texts) and
    single-key choices; on a pipe: the list. With -i and stdin not a terminal,
    the answers are read from stdin, one a line (a key or its word, then any
    text or reason asked for); the end of input quits. Each decision is one
    commit whose author is the reviewer (--actor / AM_ACTOR).

    Example: printf 'a\\nq\\n' | am review -i
    """
    if ctx.invoked_subcommand is not None:
        given = [f"--{k}" for k, v in (("repo", repo), ("branch", branch), ("commit", commit_)) if v is not None]
        if given:  # a subcommand has its own world options (list, confirm) or takes none: never ignore them
            raise UsageError(f"{'/'.join(given)} before {ctx.invoked_subcommand!r} is the queue's world, not the "
                             f"decision's", hint=f"put it after the subcommand: am review {ctx.invoked_subcommand} ... "
                             f"{' '.join(given)} (list, confirm and supersede take a world)")
        return
    if interactive or (sys.stdin is not None and sys.stdin.isatty() and sys.stdout.isatty()):
        _interactive(ctx, _Answers(), *here_world(repo, branch, commit_))
    else:
        ctx.invoke(list_, repo=repo, branch=branch, commit_=commit_, kinds=(), no_diff=False, limit=None, fmt="text")


@review.command("list")
@_world
@click.option("--kind", "kinds", type=click.Choice(_KINDS), multiple=True, help="Only items of this kind (repeatable).")
@click.option("--no-diff", is_flag=True, help="Do not compute the code diff of stale facts.")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=None,
              help="At most this many items, the first in the queue's order (default: all).")
@FORMAT_OPTION
@click.pass_context
def list_(ctx: click.Context, repo: str | None, branch: str | None, commit_: str | None, kinds: tuple[str, ...],
          no_diff: bool, limit: int | None, fmt: str) -> None:
    """List everything waiting on judgement, with its evidence and the decisions it takes.

    Stale facts are those of the world (the current clone's branch, or --repo
    and --branch); proposals, pending and contested facts are the vault's.
    With --limit, the last line says how many more wait.

    Example: am review list --limit 20 --format json
    """
    from am.upkeep.review import review_queue

    repo, branch, commit_ = here_world(repo, branch, commit_)
    queue = review_queue(open_vault(ctx), repo=repo, branch=branch, commit=commit_, diff=not no_diff,
                         kinds=kinds or _KINDS, limit=limit)
    if fmt == "json":
        emit_json(queue.to_json())
        return
    unchecked = "" if queue.world or "stale" not in (kinds or _KINDS) else \
        " (no world given: stale facts not checked; give --repo R --branch B, or run in a code clone)"
    if not queue.items:
        click.echo("nothing waits for review" + unchecked)
        return
    for item in queue.items:
        click.echo("\n".join(item.render()))
        click.echo("")
    more = queue.total - len(queue.items)
    shown = f"{len(queue.items)} of {queue.total} items ({more} more: raise --limit)" if more else \
        f"{queue.total} item{'s' * (queue.total != 1)}"
    click.echo(f"{shown}{unchecked}; decide with: am review accept|confirm|supersede|expire|reject ID")


def _decision(name: str, doc: str, *, reason: bool = False, text: bool = False,
              world: bool = False, fill: bool = True) -> click.Command:
    def run(ctx: click.Context, /, fact_id: str, fmt: str, **kw: Any) -> None:
        from am.upkeep.review import decide

        repo, branch, commit = kw.get("repo"), kw.get("branch"), kw.get("commit_")
        if world and fill:  # confirm: the current clone's world; supersede: only the one given
            repo, branch, commit = here_world(repo, branch, commit)
        result = decide(open_vault(ctx), name, fact_id, reason=kw.get("reason"), text=kw.get("text"),
                        repo=repo, branch=branch, commit=commit)
        report_write(result, fmt, {"accept": "accepted", "confirm": "confirmed", "supersede": "superseded",
                                   "expire": "expired", "reject": "rejected", "keep-both": "kept both of"}[name])

    run.__doc__ = doc
    command = click.pass_context(run)
    command = FORMAT_OPTION(command)
    if world:
        command = _world(command)
    if text:
        command = click.option("--text", help="The corrected text (required, except for the newer fact of a similar "
                                              "pair: then its older fact is superseded by it).")(command)
    if reason:
        command = click.option("--reason", required=name == "expire", help="Why (kept in the fact and the commit).")(
            command)
    command = click.argument("fact_id", metavar="ID")(command)
    return review.command(name)(command)


_decision("accept", """Accept a proposal or pending fact (it becomes active), or one fact of a contested pair.

    Of a contested pair, the accepted fact stays and supersedes the other.

    Example: am review accept f-20261130-1000-3f0e99
    """, reason=True)
_decision("confirm", """Re-observe a fact at the world's commit: no longer stale there (a pending fact becomes active).

    The world is the current clone's branch, or --repo/--branch/--commit; the
    new commit must descend from the fact's and be on the fact's branch (or that
    branch be gone from the clone): a fact of another branch is superseded on yours
    instead (am fact supersede ID TEXT --branch B).

    Example: am review confirm fact-alpha-getuser-main --branch feat-batch
    """, world=True)
_decision("supersede", """Replace a fact with a corrected text (it inherits topics, and world unless given).

    For a stale fact, give the world where the code is now (--branch B, or
    --repo/--commit): the new fact inherits the old one's commit otherwise, and
    is stale at once. Another branch than the fact's supersedes it there only.

    Example: am review supersede f-20261130-1000-3f0e99 --text "getUser allows 200 requests a minute"
    """, reason=True, text=True, world=True, fill=False)
_decision("keep-both", """Keep both facts of a similar pair (ID: the newer, as am review list shows it).

    Recorded in .am/kept-similar.txt in one commit, so no machine asks about the pair again.

    Example: am review keep-both f-20261130-1000-3f0e99 --reason "staging and production differ"
    """, reason=True)
_decision("expire", """Expire a fact: it no longer holds anywhere (it stays in the vault).

    Example: am review expire fact-alpha-getuser-main --reason "the endpoint was removed"
    """, reason=True)
_decision("reject", """Reject a proposal or pending fact: it is expired, with the reason.

    Example: am review reject f-20261130-1000-3f0e99 --reason "a guess, not a decision"
    """, reason=True)


_NO_INPUT = ("run it in a terminal, or pipe one answer a line: printf 'a\\nq\\n' | am review -i; "
             "am review list prints the queue and am review accept|confirm|supersede|expire|reject ID decides one")


class _Answers:
    """Where ``am review -i`` reads answers: single keys from a terminal, else one line each from stdin.

    click's single-key read opens /dev/tty when stdin is not a terminal: a pipe
    was never read, and without a terminal the command failed on /dev/tty. So a
    stdin that is not a terminal is read line by line (the first letter of a
    line is its key: ``a`` or ``accept``); the end of input quits. No stdin at
    all, or one that ends before the first answer, is refused with what to do.
    """

    def __init__(self) -> None:
        if sys.stdin is None or sys.stdin.closed:
            raise UsageError("am review -i has no terminal and no stdin to read answers from", hint=_NO_INPUT)
        self.lines = not sys.stdin.isatty()
        self.answered = False

    def key(self) -> str | None:
        """The next choice (a lower-case letter), or None at the end of input."""
        if not self.lines:
            return click.getchar().lower()
        while True:
            line = sys.stdin.readline()
            if not line:
                if not self.answered:
                    raise UsageError("am review -i read no answers: stdin is not a terminal and is empty",
                                     hint=_NO_INPUT)
                return None
            self.answered = True
            if line.strip():
                return line.strip()[0].lower()

    def text(self, prompt: str, **kw: Any) -> str | None:
        """A line of text (click's prompt, which reads stdin when it is no terminal), or None at the end of input."""
        try:
            answer: str = click.prompt(prompt, **kw)
        except click.Abort:
            if not self.lines:
                raise
            click.echo("")
            return None
        if self.lines:
            click.echo(answer)  # a pipe's line is not echoed: the transcript shows what was answered
        return answer


def _interactive(ctx: click.Context, answers: _Answers, repo: str | None, branch: str | None,
                 commit: str | None) -> None:
    """One item at a time, single-key choices (or one answer a line from a pipe); each decision is one commit."""
    from am.errors import AmError
    from am.upkeep.review import decide, review_queue

    vault = open_vault(ctx)
    queue = review_queue(vault, repo=repo, branch=branch, commit=commit)
    if not queue.items:
        click.echo("nothing waits for review")
        return
    keys = {"a": "accept", "c": "confirm", "s": "supersede", "e": "expire", "r": "reject", "k": "keep-both"}
    done = 0
    for n, item in enumerate(queue.items, start=1):
        click.echo(f"\n({n}/{len(queue.items)}) " + "\n".join(item.render()))
        offered = {k: v for k, v in keys.items() if v in item.choices}
        prompt = " ".join(f"[{k}]{v[1:]}" for k, v in offered.items()) + " [n]ext [q]uit "
        while True:
            click.echo(prompt, nl=False)
            key = answers.key()
            click.echo(key or "")
            if key in ("q", None):
                click.echo(f"{done} decision(s) made" + (" (end of input)" if key is None else ""))
                return
            if key == "n":
                break
            if key not in offered:
                continue
            decision = offered[key]
            target = item.id
            asked: dict[str, str | None] = {}
            if item.kind == "contested" and len(item.facts) > 1 and decision == "accept":
                ids = click.Choice([f.id for f in item.facts])
                asked["keep which fact"] = answers.text("keep which fact", type=ids)
            if decision == "supersede" and item.kind != "similar":  # a similar pair's: the older ends, no text
                asked["corrected text"] = answers.text("corrected text")
            if decision in ("expire", "reject", "supersede"):
                asked["reason"] = answers.text("reason", default="" if decision != "expire" else None)
            if None in asked.values():
                missing = next(k for k, v in asked.items() if v is None)
                click.echo(f"{done} decision(s) made")
                raise UsageError(f"the input ended before the answer to {missing!r}: {item.id} is not decided",
                                 hint="give what a decision asks for on lines of its own after its key "
                                      "(printf 'e\\nthe endpoint was removed\\n' | am review -i)")
            target = asked.get("keep which fact") or target
            text, reason = asked.get("corrected text"), asked.get("reason") or None
            try:
                # Confirm at the queue's world; a stale fact's supersede is observed there too (it is stale there).
                kept = decision == "confirm" or (decision == "supersede" and item.kind == "stale")
                world = (repo, branch, commit) if kept else (None, None, None)
                result = decide(vault, decision, target, reason=reason, text=text, repo=world[0], branch=world[1],
                                commit=world[2])
            except AmError as err:
                click.echo(f"error: {err.message}" + (f" ({err.hint})" if err.hint else ""))
                continue
            click.echo(f"{decision}: commit {result.commit[:10]}")
            done += 1
            break
    click.echo(f"{done} decision(s) made")


COMMANDS = [review]
