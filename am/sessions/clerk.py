"""The clerk: `am propose` turns a stored session into proposed facts, and says what it did (DESIGN §11).

A clerk proposes; a person (or a trusted agent) decides in `am review`. A
proposal is a fact with ``status: pending-review`` (so it reaches no pack
unasked), ``provenance: session:<id>``, the session's topic among its topics,
and ``source_lines`` citing the log lines it came from.

Two extractors:

* the **default**, deterministic: explicit markers said by the user or the
  agent (``remember: ...`` or ``fact: ...`` where a sentence starts: a line's
  start, or after a sentence's ``.``/``!``/``?``), and decisions stated in the
  agent's final message (``Decision: ...``, ``Decided: ...``), to the line's end;
* ``--extractor CMD``: any program speaking the JSON protocol of
  docs/sessions.md on stdin/stdout (an LLM of the user's choice).

Every run leaves a report: what it read, what it proposed, what it skipped and
why. It is printed, written into the commit message of the run's one commit
(the proposals and the session topic's ``clerk`` entry), and returned as JSON.
Proposal ids are drawn from the session and the text, so running the clerk
again proposes nothing twice.

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from am.clock import now as _now
from am.errors import AmError, InvalidRecordError, NotFoundError, UsageError
from am.records.ids import format_timestamp, record_path, stored_moment
from am.records.model import CONFIDENCES, Fact, Topic
from am.records.sessionlog import Message, log_file, messages

if TYPE_CHECKING:
    from am.vault import Vault

__all__ = ["PROTOCOL", "ClerkReport", "Proposal", "deterministic", "find_session", "proposal_id", "propose",
           "propose_all", "run_extractor", "unproposed"]

PROTOCOL = "am.propose/1"
MAX_TEXT = 600
# A marker where a sentence starts: a line's start (after a list mark or a quote), or after a sentence's end.
_START = r"(?:^\s*(?:[-*>]\s*)?|(?<=[.!?;])\s+|(?<=[。！？；]))"
_MARKER = re.compile(_START + r"(?:\*\*)?\b(remember|fact)(?:\*\*)?\s*:\s*(?P<text>\S.*?)\s*$", re.IGNORECASE)
_DECISION = re.compile(_START + r"(?:\*\*)?\b(decision|decided)(?:\*\*)?\s*:\s*(?P<text>\S.*?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Proposal:
    """A fact an extractor proposes: its text, the log lines it cites, and optional topics and confidence."""

    text: str
    lines: tuple[int, ...]
    why: str = ""
    topics: tuple[str, ...] = ()
    confidence: str | None = None
    paths: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()  # holding facts it replaces: accepting it supersedes them


@dataclass
class ClerkReport:
    """What one clerk run read, proposed and skipped (with why), and the commit it made."""

    session: str
    topic: str
    extractor: str
    read_lines: int = 0
    read_messages: int = 0
    proposed: list[tuple[str, str, tuple[int, ...]]] = field(default_factory=list)
    skipped: list[tuple[str, tuple[int, ...], str]] = field(default_factory=list)
    commit: str | None = None
    dry_run: bool = False

    def lines(self) -> list[str]:
        """Return the report as lines for people."""
        out = [(f"clerk ({self.extractor}) read session {self.session}: {self.read_lines} lines, "
               f"{self.read_messages} messages"),
               f"proposed {len(self.proposed)}, skipped {len(self.skipped)}"
               + (" (dry run: nothing written)" if self.dry_run else "")]
        out += [f"  proposed {fid} (line {_cite(lines)}): {text}" for fid, text, lines in self.proposed]
        out += [f"  skipped (line {_cite(lines)}): {text[:80]} - {why}" for text, lines, why in self.skipped]
        return out

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "topic": self.topic, "extractor": self.extractor,
                "read": {"lines": self.read_lines, "messages": self.read_messages},
                "proposed": [{"id": i, "text": t, "lines": list(ls)} for i, t, ls in self.proposed],
                "skipped": [{"text": t, "lines": list(ls), "reason": r} for t, ls, r in self.skipped],
                "commit": self.commit, "dry_run": self.dry_run}


def _cite(lines: Sequence[int]) -> str:
    return ", ".join(str(n) for n in lines) or "?"


def find_session(vault: Vault, name: str) -> Topic:
    """Return the session topic named by a session id or a topic id."""
    from am.records.sessionlog import session_topic_id

    for tid in dict.fromkeys((name, session_topic_id(name))):
        try:
            path = vault.locate(tid)
        except AmError:
            path = None
        if path is not None:
            topic = vault.read_path(path)
            if isinstance(topic, Topic) and topic.kind == "session" and topic.extra.get("file"):
                return topic
    raise NotFoundError(f"no ingested session {name!r}", hint="ingest its log first: am ingest FILE")


def deterministic(said: Sequence[Message]) -> tuple[list[Proposal], list[tuple[str, tuple[int, ...], str]]]:
    """The default extractor: ``remember:``/``fact:`` lines said by a person or the agent, decisions in its last message."""
    found: list[Proposal] = []
    skipped: list[tuple[str, tuple[int, ...], str]] = []
    for m in said:
        for raw in m.text.splitlines():
            hit = _MARKER.search(raw)
            if hit and m.role in ("user", "assistant"):
                found.append(Proposal(hit.group("text"), (m.line,), why=f"{hit.group(1).lower()}: said by {m.role}",
                                      confidence="high" if m.role == "user" else "medium"))
            elif hit:
                skipped.append((hit.group("text"), (m.line,), f"a marker in {m.role} output, not said by a person or the agent"))
    final = next((m for m in reversed(said) if m.role == "assistant"), None)
    if final is not None:
        for raw in final.text.splitlines():
            hit = _DECISION.search(raw)
            if hit:
                found.append(Proposal(hit.group("text"), (final.line,), why="a decision in the agent's final message"))
    return found, skipped


def run_extractor(command: str, session: Topic, said: Sequence[Message], *,
                  timeout: float = 300.0) -> tuple[list[Proposal], list[tuple[str, tuple[int, ...], str]]]:
    """Run an external extractor: the session as JSON on its stdin, proposals as JSON on its stdout."""
    try:
        argv = shlex.split(command)
    except ValueError as err:  # an unclosed quote
        raise UsageError(f"--extractor {command} is not a command line: {err}",
                         hint="quote it as a shell would, e.g. --extractor 'python my_clerk.py --model m'") from None
    if not argv:
        raise UsageError("--extractor is empty", hint="name a program, e.g. --extractor 'python my_clerk.py'")
    request = {
        "protocol": PROTOCOL,
        "session": {"id": session.extra.get("session_id"), "topic": session.id,
                    **{k: session.extra.get(k) for k in ("client", "project_dir", "branch", "commit", "started",
                                                         "ended")}},
        "messages": [{"line": m.line, "ts": m.ts, "role": m.role, "text": m.text} for m in said],
    }
    try:
        code, stdout, stderr = _run(argv, json.dumps(request, ensure_ascii=False).encode("utf-8"), timeout)
    except FileNotFoundError:
        raise UsageError(f"extractor {argv[0]!r} not found", hint="give a program on PATH or a path to one") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"extractor {argv[0]!r} gave no answer in {timeout:.0f} s",
                         hint="make it faster, or pass a longer --timeout") from None
    if code != 0:
        first = (stderr.decode("utf-8", "replace").strip().splitlines() or ["(nothing on stderr)"])[-1]
        raise UsageError(f"extractor {argv[0]!r} failed (exit {code}): {first[:200]}",
                         hint="nothing was written; run it by hand on the session's JSON to see why")
    try:
        answer = json.loads(stdout)
    except (ValueError, RecursionError):  # RecursionError: nested too deep to read
        raise UsageError(f"extractor {argv[0]!r} did not print JSON",
                         hint='print {"proposals": [{"text": ..., "lines": [...]}]} (docs/sessions.md)') from None
    if not isinstance(answer, dict) or not isinstance(answer.get("proposals"), list):
        raise UsageError(f"extractor {argv[0]!r} printed JSON without a 'proposals' list",
                         hint='print {"proposals": [{"text": ..., "lines": [...]}]} (docs/sessions.md)')
    found: list[Proposal] = []
    skipped: list[tuple[str, tuple[int, ...], str]] = []
    for item in answer.get("proposals", []):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            skipped.append((json.dumps(item)[:80], (), "a proposal without a 'text' string"))
            continue
        lines, topics, paths = (_listed(item, "lines", int), _listed(item, "topics", str), _listed(item, "paths", str))
        wrong = [key for key, value in (("lines", lines), ("topics", topics), ("paths", paths)) if value is None]
        if wrong:
            kind = "line numbers" if wrong[0] == "lines" else "strings"
            skipped.append((item["text"], lines or (), f"'{wrong[0]}' is not a list of {kind}"))
            continue
        replaces = item.get("supersedes")
        replaces = [replaces] if isinstance(replaces, str) else replaces
        if replaces is not None and not (isinstance(replaces, list) and all(isinstance(r, str) for r in replaces)):
            skipped.append((item["text"], lines or (), "'supersedes' is not a fact id or a list of them"))
            continue
        found.append(Proposal(item["text"], lines or (), why=str(item.get("why", "")), topics=topics or (),
                              confidence=item.get("confidence") if isinstance(item.get("confidence"), str) else None,
                              paths=paths or (), supersedes=tuple(replaces or ())))
    for item in answer.get("skipped", []) if isinstance(answer.get("skipped"), list) else []:
        if isinstance(item, dict):
            skipped.append((str(item.get("text", "")), _listed(item, "lines", int) or (),
                            f"extractor: {item.get('reason', 'no reason given')}"))
    return found, skipped


def _run(argv: list[str], request: bytes, timeout: float) -> tuple[int, bytes, bytes]:
    """Run an extractor on files (not pipes) in a process group of its own; return (exit status, stdout, stderr).

    A pipe is open while any process holds it: a helper the extractor starts and leaves running (a model server)
    would keep am waiting until the timeout though the extractor answered and exited, so its answer is read
    when it exits. On a timeout (or Ctrl-C) the whole group is stopped: a wrapper's model call does not run on.
    """
    import contextlib
    import os
    import signal
    import tempfile

    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        stdin.write(request)
        stdin.seek(0)
        proc = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):  # the group may have ended by itself
                if hasattr(os, "killpg"):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.kill()
            proc.wait()
            raise
        stdout.seek(0)
        stderr.seek(0)
        return code, stdout.read(), stderr.read()


def _listed(item: dict[str, Any], key: str, kind: type) -> tuple[Any, ...] | None:
    """Return a list field of an extractor's item (absent or null: empty), or None when it is not a list of ``kind``."""
    value = item.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value):
        return None
    return tuple(value)


def proposal_id(session_id: str, text: str, started: str | None, *, digits: int = 6) -> str:
    """Return a proposal's fact id: shaped like a generated one, drawn from the session and the text (stable).

    ``digits`` of the hash: 6, the length of a generated id's; more when that id is taken by another text (_free_id).
    """
    day = (stored_moment(started) or datetime(1970, 1, 1, tzinfo=UTC)).astimezone(UTC)
    digest = hashlib.sha256(f"{session_id}\n{_said(text)}".encode()).hexdigest()[:digits]
    return f"f-{day:%Y%m%d-%H%M}-{digest}"


def _said(text: str) -> str:
    return " ".join(text.split()).casefold()


def _free_id(vault: Vault, session_id: str, text: str, started: str, run: dict[str, str]) -> tuple[str, bool]:
    """Return the id for a proposal's text and whether that text is already proposed under it.

    The 6-digit id first; when a fact of another text (this run's, or the vault's) holds it, a longer digest,
    so two texts that share 6 digits (a 1 in 2 million pair, likely among thousands of proposals) both get one,
    and a rerun finds each text under the same id again.
    """
    for digits in _DIGITS:
        fid = proposal_id(session_id, text, started, digits=digits)
        holder = run.get(fid)
        if holder is None and vault.locate(fid) is not None:
            try:
                holder = _said(vault.get_fact(fid).body)
            except AmError:
                holder = ""  # not a fact, or unreadable: taken all the same
        if holder is None or holder == _said(text):
            return fid, holder is not None
    raise AssertionError("a sha256 digest taken by another text")  # 64 digits: not reached


_DIGITS = (6, 12, 20, 64)


def propose(vault: Vault, name: str, *, extractor: str | None = None, topics: Iterable[str] = (),
            repo: str | None = None, branch: str | None = None, commit: str | None = None,
            unverified: bool = False, dry_run: bool = False, timeout: float = 300.0) -> ClerkReport:
    """Run the clerk over a stored session: proposals as pending-review facts, one commit with the report."""
    from am.records.schemas import check_record
    from am.records.secrets import scan_fields
    from am.records.writes import FactDraft
    from am.writes.duplicates import recorded
    from am.writes.worldwrites import checked_draft

    session = find_session(vault, name)
    sid = str(session.extra.get("session_id") or session.id)
    log = log_file(vault.root, session.extra.get("file"))
    if log is None:
        raise UsageError(f"session topic {session.id} names its log {session.extra.get('file')!r}, which is not in "
                         "the vault's sessions/ folder", hint="set its file: to the log's path under sessions/")
    data = log.read_bytes()
    said = list(messages(data, str(session.extra.get("client", "jsonl"))))
    report = ClerkReport(session=sid, topic=session.id, extractor=extractor or "default", dry_run=dry_run,
                         read_lines=data.count(b"\n"), read_messages=len(said))
    extra_topics = tuple(dict.fromkeys(topics))
    for t in extra_topics:
        vault.get_topic(t)  # an unknown --topic is an error before anything runs
    world = checked_draft(FactDraft(text="-", repo=repo, branch=branch, commit=commit), None, unverified=unverified)
    found, skipped = (run_extractor(extractor, session, said, timeout=timeout) if extractor is not None
                      else deterministic(said))  # --extractor "" (an unset $VAR) is refused, not the default
    report.skipped.extend(skipped)
    last = report.read_lines + (1 if data and not data.endswith(b"\n") else 0)  # a last line without its newline
    known_lines = {m.line for m in said} | set(range(1, last + 1))
    facts: list[Fact] = []
    seen: dict[str, str] = {}  # this run's ids and their texts
    for p in found:
        text = " ".join(p.text.split())
        why = _refusal(vault, p, text, known_lines)
        fid, again = _free_id(vault, sid, text, str(session.extra.get("started") or ""), seen) if why is None \
            else ("", False)
        if why is None and again:
            why = f"already proposed as {fid}"
        if why is None and (known := recorded(vault.files, text, None, world.repo, world.branch)) is not None:
            why = f"already recorded as {known[1].id} ({known[1].status})"  # about any topics: a proposal names its session too
        replaces = p.supersedes
        if why is None:  # a restatement is skipped, a likely update proposed as the holding fact's supersession
            why, replaces = _judged(vault, p, text, (*extra_topics, *p.topics), world.repo, world.branch)
        if why is None and scan_fields({"body": text}):
            why = "it looks like it holds a credential"
        if why is not None:
            report.skipped.append((text, p.lines, why))
            continue
        seen[fid] = _said(text)
        fact_topics = tuple(dict.fromkeys((session.id, *extra_topics, *(t for t in p.topics if _topic(vault, t)))))
        confidence = p.confidence if p.confidence in CONFIDENCES else "medium"
        fact = Fact(id=fid, topics=fact_topics, body=text + "\n", status="pending-review",
                    confidence=confidence, provenance=f"session:{sid}", repo=world.repo, version=world.branch,
                    commit=world.commit, axis="subject" if (world.repo or world.commit) else None,
                    created=_said_at(said, p.lines), paths=p.paths,
                    extra={"source_lines": list(p.lines), **({"proposed_supersedes": list(replaces)} if replaces else {})})
        try:  # one proposal the format or a write refuses (a control character, an empty or '..' path) is skipped
            FactDraft(text, paths=p.paths).check_lines()  # the checks every other new fact's values pass
            check_record(fact)
        except (InvalidRecordError, UsageError) as err:
            report.skipped.append((text, p.lines, str(err)))
            continue
        facts.append(fact)
        report.proposed.append((fid, text, p.lines))
    report.skipped = [(_masked(text), lines, _masked(why)) for text, lines, why in report.skipped]
    if not dry_run:
        report.commit = _write(vault, session, facts, report)
    return report


def unproposed(vault: Vault) -> list[Topic]:
    """Return the session topics the clerk has not read as they are now: never, or before the log grew."""
    out = []
    for topic in vault.list_topics(kind="session"):
        last = topic.extra.get("clerk_last")
        lines = topic.extra.get("lines")
        if topic.extra.get("file") and not (isinstance(last, dict) and last.get("lines") == lines):
            out.append(topic)
    return out


def propose_all(vault: Vault, **options: Any) -> list[ClerkReport]:
    """Run the clerk over every session not proposed from yet (``unproposed``): one commit a session.

    Run again, it finds none: each run records the lines it read in the session topic's ``clerk_last``.
    """
    return [propose(vault, topic.id, **options) for topic in unproposed(vault)]


def _judged(vault: Vault, p: Proposal, text: str, topics: Sequence[str], repo: str | None,
            branch: str | None) -> tuple[str | None, tuple[str, ...]]:
    """Return (why a proposal is skipped, or None; the holding facts accepting it supersedes).

    A restatement of a holding fact of the proposal's world is skipped; a likely update of one
    (am/writes/judge.py) is proposed as its supersession, unless the extractor named its own. An
    extractor's ``supersedes`` must name facts that hold.
    """
    from am.records.writes import FactDraft
    from am.writes.duplicates import HOLDING
    from am.writes.judge import policy, similar_to

    for fid in p.supersedes:
        try:
            old = vault.get_fact(fid)
        except AmError:
            return f"supersedes {fid}, which is no fact of the vault", ()
        if old.status not in HOLDING:
            return f"supersedes {fid}, which is {old.status}", ()
    if policy(vault.files, FactDraft(text="")) == "allow":
        return None, p.supersedes
    like = similar_to(vault.files, text, topics, repo, branch)
    if like and like[0].kind == "same":
        return f"restates {like[0].id} ({like[0].why})", ()
    return None, p.supersedes or tuple(s.id for s in like[:1])


def _said_at(said: Sequence[Message], lines: Sequence[int]) -> str:
    """Return when a proposal's first cited line was said (its message's time), else now."""
    at = {m.line: m.ts for m in said}
    for n in lines:
        moment = stored_moment(at.get(n))
        if moment is not None:
            return format_timestamp(moment)
    return format_timestamp(_now())


def _topic(vault: Vault, name: str) -> bool:
    """Say whether an extractor's topic names a topic of the vault (one that is no id names none)."""
    try:
        path = vault.locate(name)
    except AmError:
        return False
    return path is not None and path.parts[0] == "topics"


def _masked(text: str) -> str:
    """Return a skipped item's text (or reason) as the report may show it: the report is printed and committed,
    so a credential in what was refused, or in what an extractor says it skipped, is masked as a log's are."""
    from collections import Counter

    from am.records.secrets import scan_text
    from am.sessions.redaction import redact_string

    masked = redact_string(text, Counter())
    return "(withheld: it looks like it holds a credential)" if scan_text(masked) else masked


def _refusal(vault: Vault, p: Proposal, text: str, known_lines: set[int]) -> str | None:
    if not text:
        return "empty text"
    if len(text) > MAX_TEXT:
        return f"longer than {MAX_TEXT} characters: a fact is one to three sentences"
    if "[redacted:" in text:
        return "it quotes a masked secret"
    bad = [n for n in p.lines if n not in known_lines]
    if bad:
        return f"cites line {bad[0]}, which the session does not have"
    return None


def _write(vault: Vault, session: Topic, facts: list[Fact], report: ClerkReport) -> str:
    from am.records.model import replace
    from am.records.schemas import check_record
    from am.sessions.ingest import _message, _topic_change

    runs = session.extra.get("clerk_runs")
    entry = {"at": format_timestamp(_now()), "extractor": report.extractor, "read": report.read_messages,
             "proposed": len(report.proposed), "skipped": len(report.skipped), "lines": report.read_lines}
    extra = {**session.extra, "clerk_runs": (int(runs) if isinstance(runs, int) else 0) + 1, "clerk_last": entry}
    topic = replace(session, extra=extra)
    topic_path, _, base = vault.writer.existing_for_update(session.id, Topic, "topic")
    changes = [_topic_change(vault, topic_path, topic, base)]
    for fact in facts:
        path = record_path("fact", fact.id, fact.created)
        check_record(fact, path=str(path))
        changes.append(_topic_change(vault, path, fact, None))  # type: ignore[arg-type]
    vault.writer.check_writable(changes)
    message = _message(vault, f"session: propose {len(facts)} fact{'s' * (len(facts) != 1)} from {report.session}",
                       report.lines(), op="session.propose", ids=[f.id for f in facts] + [session.id])
    commit: str = vault.store.commit_grouped(changes, message=message, author=vault.authorship.author(),
                                             committer=vault.authorship.committer(), op="session.propose",
                                             after=vault.writer.after_write)
    return commit
