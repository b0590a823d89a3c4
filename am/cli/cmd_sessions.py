"""`am ingest` (agents' session logs, kept byte for byte) and `am propose` (the clerk's proposed facts).

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from am.cli.context import FORMAT_OPTION, emit_json, open_vault


@click.command("ingest")
@click.argument("target", metavar="FILE|DIR|-", type=click.Path(exists=True, allow_dash=True, path_type=Path))
@click.option("--log-format", "log_format", type=click.Choice(["claude-code", "codex", "jsonl"]), default=None,
              help="The log's format (default: recognised from its first lines).")
@click.option("--format", "formats", type=click.Choice(["text", "json", "claude-code", "codex", "jsonl"]),
              multiple=True, help="Output for people (text, the default) or programs (json). A log format here "
                                  "(claude-code, codex, jsonl) is still read as --log-format, as before.")
@click.option("--propose", "then_propose", is_flag=True,
              help="Then run the default clerk over each session ingested (am propose), one commit a session.")
@click.pass_context
def ingest(ctx: click.Context, target: Path, log_format: str | None, formats: tuple[str, ...],
           then_propose: bool) -> None:
    """Keep an agent's session log in the vault, byte for byte, with a session topic: one commit a session.

    FILE is a Claude Code transcript (~/.claude/projects/<project>/<id>.jsonl),
    a Codex rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl) or plain
    {ts, role, text} JSON lines; DIR ingests every *.jsonl under it; - reads a
    client hook's JSON from stdin and ingests its transcript_path (Claude
    Code's SessionEnd hook: command "am ingest -"; a session that wrote no
    transcript is noted in one line, exit 0). The log
    is stored under sessions/YYYY/MM/DD/<session-id>.jsonl with credentials
    masked ([redacted:<family>]; the topic counts them). The same log again
    writes nothing; a log that grew is appended in a new commit. A last line
    still being written (no newline, not JSON) is held back until it is.
    --propose then proposes facts from each session ingested (the SessionEnd
    hook's "am ingest --propose -"); the clerk reads a session again only when
    its log grew.

    Example: am ingest --log-format codex --format json ~/.codex/sessions/2026/11/29/rollout-2026-11-29T08-22-53-019a2d7a.jsonl
    """
    from am.sessions.ingest import ingest as run

    log_format, fmt = _split_formats(formats, log_format)
    if str(target) == "-":
        target = _hook_transcript(sys.stdin.read(_HOOK_LIMIT + 1))
        if not target.exists():
            # Claude Code ends sessions that never wrote a transcript (`claude mcp list`, a session quit at
            # once) and runs the SessionEnd hook all the same: nothing to keep is no error to show the user.
            note = f"nothing to keep: the session wrote no log ({target} does not exist)"
            if fmt == "json":
                emit_json({"sessions": [], "skipped": [note]})
            else:
                click.echo(note)
            return
    vault = open_vault(ctx)
    results, skipped = run(vault, target, fmt=log_format)
    reports = _proposed(vault, {r.topic for r in results}) if then_propose else []
    if fmt == "json":
        emit_json({"sessions": [r.to_json() for r in results], "skipped": skipped,
                   **({"proposed": [r.to_json() for r in reports]} if then_propose else {})})
        return
    for r in results:
        note = f", {sum(r.redacted.values())} secret(s) masked" if r.redacted else ""
        where = f" ({r.commit[:10]})" if r.commit else ""
        held = f"; 1 unfinished line held back ({r.held_back} bytes) until it is written" if r.held_back else ""
        click.echo(f"{r.action}: {r.session} -> {r.path}, {r.lines} line{'' if r.lines == 1 else 's'}, {r.bytes} bytes{note}{where}{held}")
    for line in skipped:
        click.echo(f"skipped: {line}")
    for report in reports:
        click.echo("\n".join(report.lines()[:2]) + (f" (commit {report.commit[:10]})" if report.commit else ""))


def _proposed(vault: Any, topics: set[str]) -> list[Any]:
    """Run the default clerk over the ingested sessions whose logs it has not read as they are (am/sessions/clerk.py)."""
    from am.sessions.clerk import propose, unproposed

    return [propose(vault, t.id) for t in unproposed(vault) if t.id in topics]


_HOOK_LIMIT = 1 << 20  # a hook's JSON is a few hundred bytes; standard input is read no further than this


def _hook_transcript(text: str) -> Path:
    """Return the transcript a client hook's JSON names (``transcript_path``, as Claude Code's hooks send it)."""
    import json

    from am.errors import UsageError

    if len(text) > _HOOK_LIMIT:
        raise UsageError(f"standard input holds more than {_HOOK_LIMIT >> 20} MiB; a hook's JSON is a few hundred bytes",
                         hint='send {"transcript_path": "..."} (Claude Code hooks do), or pass the file')
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python reads
        data = None
    path = data.get("transcript_path") if isinstance(data, dict) else None
    if not isinstance(path, str) or not path:
        raise UsageError("standard input holds no hook JSON with a transcript_path",
                         hint='send {"transcript_path": "..."} (Claude Code hooks do), or pass the file')
    return Path(path).expanduser()


def _split_formats(formats: tuple[str, ...], log_format: str | None = None) -> tuple[str | None, str]:
    """Return (log format or None, output format) from --log-format and --format (once or twice, as before)."""
    from am.errors import UsageError

    logs = list(dict.fromkeys([*([log_format] if log_format else []), *(f for f in formats if f not in ("text", "json"))]))
    outs = [f for f in formats if f in ("text", "json")]
    if len(logs) > 1 or len(outs) > 1:
        raise UsageError(f"two log or two output formats given: {', '.join(logs if len(logs) > 1 else outs)}",
                         hint="give one --log-format (claude-code, codex, jsonl) and one --format (text, json)")
    return (logs[0] if logs else None), (outs[0] if outs else "text")


@click.command("propose")
@click.argument("session", metavar="SESSION", required=False)
@click.option("--all", "every", is_flag=True,
              help="Every session not proposed from yet (or whose log grew since): one commit a session.")
@click.option("--extractor", default=None, metavar="CMD",
              help="A program that reads the session as JSON on stdin and prints proposals as JSON "
                   "(docs/sessions.md); default: the deterministic clerk.")
@click.option("--topic", "topics", multiple=True, metavar="ID", help="Also file every proposal under this topic.")
@click.option("--repo", default=None, metavar="NAME", help="The world the proposals are about: a code repository.")
@click.option("--branch", default=None, help="The world's branch (its tip is recorded as the commit).")
@click.option("--commit", "commit_", default=None, help="The world's commit.")
@click.option("--unverified", is_flag=True, help="Record the world as given, unchecked.")
@click.option("--timeout", default=300.0, show_default=True, type=click.FloatRange(1), help="Seconds the extractor may take.")
@click.option("--dry-run", is_flag=True, help="Report what would be proposed; write nothing.")
@FORMAT_OPTION
@click.pass_context
def propose(ctx: click.Context, session: str | None, every: bool, extractor: str | None, topics: tuple[str, ...], repo: str | None,
            branch: str | None, commit_: str | None, unverified: bool, timeout: float, dry_run: bool,
            fmt: str) -> None:
    """Turn an ingested session into proposed facts (pending-review), with a report of what was read and why.

    SESSION is a session id or its topic id. The default clerk proposes the
    lines said as "remember: ..." or "fact: ..." and the decisions ("Decision:
    ...") in the agent's final message; --extractor CMD asks any program. A
    proposal cites its session lines and reaches no pack until accepted in
    `am review`. One commit holds the proposals and the report; running the
    clerk again proposes nothing twice. --all runs it over every session not
    proposed from yet, or whose log grew since (one commit each; run again, it
    finds none).

    Example: am propose 5f0c3e2a-1b7d-4c1e-9a31-2d6f0e8b7c11 --topic project-alpha
    """
    from am.errors import UsageError
    from am.sessions.clerk import propose as run
    from am.sessions.clerk import propose_all

    if every == (session is not None):
        raise UsageError("name one SESSION or pass --all", hint="am propose SESSION, or am propose --all")
    options: dict[str, Any] = {"extractor": extractor, "topics": topics, "repo": repo, "branch": branch,
                               "commit": commit_, "unverified": unverified, "dry_run": dry_run, "timeout": timeout}
    vault = open_vault(ctx)
    reports = propose_all(vault, **options) if session is None else [run(vault, session, **options)]
    if fmt == "json":
        emit_json(reports[0].to_json() if session is not None else {"sessions": [r.to_json() for r in reports]})
        return
    if not reports:
        click.echo("every session is proposed from already")
    for report in reports:
        for line in report.lines():
            click.echo(line)
        if report.commit:
            click.echo(f"commit {report.commit[:10]}; review with: am review")


def print_session_search(vault: Any, query: str, *, role: str | None, session: str | None, limit: int,
                         fmt: str, sort: str = "rank", around: int | None = None, turns: bool = False) -> None:
    """Run `am search --session` and print its hits: session, line, role, time, excerpt.

    ``turns``: with each hit, the ``around`` turns before and after it (None: its whole session).
    """
    from am.sessions.around import turn_json, turns_around
    from am.sessions.search import search_sessions

    result = search_sessions(vault, query, role=role, session=session, limit=limit, sort=sort)
    context = turns_around(vault, result.hits, around) if turns else None
    if fmt == "json":
        hits = [h.to_json() for h in result.hits]
        if context is not None:
            for hit, said in zip(hits, context):
                hit["turns"] = [turn_json(m) for m in said]
        emit_json({"terms": list(result.terms), "total": result.total, "sessions_read": result.sessions_read,
                   "ranked": result.ranked, "sort": sort,
                   "range": None if result.range is None else result.range.describe(),
                   "hits": hits})
        return
    if result.range is not None:
        click.echo(f"range: {result.range.describe()}")
    if not result.hits:
        click.echo(f"no session lines found ({result.sessions_read} session log(s) read)")
        return
    for i, h in enumerate(result.hits):
        how = f"  (matched {h.matched} of {h.terms} terms)" if 0 <= h.matched < h.terms else ""
        click.echo(f"{click.style(h.session, bold=True)}  line {h.line}  {h.role}  {h.ts or ''}".rstrip() + how)
        if context is None:
            click.echo(f"  {h.snippet}")
        else:
            for m in context[i]:
                mark = ">" if (m.line, m.role) == (h.line, h.role) else " "
                text = " ".join(m.text.split())
                click.echo(f"  {mark} {m.line:>5}  {m.role:<9} {text[:200] + ('…' if len(text) > 200 else '')}")
        click.echo(f"  {h.path}:{h.line}")
    if result.total > len(result.hits):
        click.echo(f"{result.total - len(result.hits)} more (raise --limit)")


COMMANDS = [ingest, propose]
