"""`am ingest`: keep an agent's session log byte for byte in the vault, one commit a session (DESIGN §11).

The log goes to ``sessions/YYYY/MM/DD/<session-id>.jsonl`` (the day the
session started) with its credentials masked (am/sessions/redaction.py); a
``session`` topic says what it is: client, project folder, branch, first and
last time, size, and how many secrets were masked. Both are written in one
commit.

Ingesting is idempotent and follows a growing log: the topic keeps a digest of
the source it was made from, so the same file again is recognised without
reading the vault's copy (no commit); a log that grew (the stored bytes are a
prefix of the new ones) is written again as an ``append`` commit, and one that
changed otherwise as a ``replace`` commit (the old bytes stay in history).

A log still being written may end part way through a line; that line (no
newline, not JSON) is held back, so the stored log is the source's complete
lines and no half of a secret, which the masking cannot recognise, reaches
history. The next ingest after the line is finished appends it.

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from am.clock import now as _now
from am.errors import AmError, UsageError
from am.records.ids import format_timestamp, record_path
from am.records.model import Topic
from am.records.sessionlog import (
    FORMATS,
    SessionMeta,
    detect,
    read_meta,
    readable_as,
    safe_session_id,
    session_topic_id,
)

if TYPE_CHECKING:
    from am.vault import Vault

__all__ = ["CLIENT_NAMES", "IngestResult", "day_sessions", "ingest", "ingest_file", "ingest_source", "session_files",
           "session_topic_id"]

CLIENT_NAMES = {"claude-code": "Claude Code", "codex": "Codex", "jsonl": "Agent"}
SESSIONS_DIR = "sessions"


@dataclass(frozen=True)
class IngestResult:
    """What ingesting one log did: ``added``, ``appended``, ``replaced`` or ``unchanged``."""

    source: str
    session: str
    topic: str
    path: PurePosixPath
    action: str
    commit: str | None
    bytes: int
    lines: int
    client: str
    redacted: Counter[str] = field(default_factory=Counter)
    held_back: int = 0  # bytes of an unfinished last line, not stored

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "session": self.session, "topic": self.topic, "path": str(self.path),
                "action": self.action, "commit": self.commit, "bytes": self.bytes, "lines": self.lines,
                "client": self.client, "redacted": dict(sorted(self.redacted.items())),
                "held_back": 1 if self.held_back else 0, "held_back_bytes": self.held_back}


def session_files(target: Path) -> list[Path]:
    """Return the logs to ingest: the file itself, or every ``*.jsonl`` under a folder, in path order.

    A folder's symbolic links are among them: `ingest` lists them as skipped, and does not follow them.
    """
    if target.is_file():
        return [target]
    if target.is_dir():
        return sorted(p for p in target.rglob("*.jsonl") if p.is_symlink() or p.is_file())
    raise UsageError(f"{target} does not exist", hint="pass a session log (.jsonl) or a folder of them")


def ingest(vault: Vault, target: Path, *, fmt: str | None = None) -> tuple[list[IngestResult], list[str]]:
    """Ingest a log, or every log in a folder; return the results and, for a folder, the files skipped and why."""
    files = session_files(target)
    if target.is_file():
        return ingest_source(vault, target, fmt=fmt), []
    results, skipped = [], []
    for path in files:
        if path.is_symlink():
            skipped.append(f"{path}: a symbolic link; am does not follow it (ingest the file it points to)")
            continue
        try:
            results.extend(ingest_source(vault, path, fmt=fmt))
        except AmError as err:
            skipped.append(f"{path}: {err.message}")
    return results, skipped


def _session_id(meta: SessionMeta, source: Path) -> str:
    # A Claude Code subagent's log carries its parent's sessionId: keep it apart, named by its file.
    stem = source.stem
    if meta.client == "claude-code" and stem.startswith("agent-") and safe_session_id(stem) and stem != meta.id:
        return f"{meta.id}-{stem}"
    return meta.id


def _day(started: str | None) -> datetime:
    if started:
        try:
            moment = datetime.fromisoformat(started)
            return moment.astimezone(UTC) if moment.tzinfo else moment
        except ValueError:
            pass
    return _now()


def _complete_lines(data: bytes) -> tuple[bytes, int]:
    """Return the log without a last line its writer has not finished (no newline, not JSON), and that line's size."""
    cut = data.rfind(b"\n") + 1
    if cut == len(data):
        return data, 0
    try:
        json.loads(data[cut:])
    except (ValueError, RecursionError):  # RecursionError: nested too deep to tell; held back like a half line
        return data[:cut], len(data) - cut
    return data, 0


def _recognised(data: bytes) -> str | None:
    try:
        return detect(data)
    except UsageError:
        return None


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def ingest_source(vault: Vault, source: Path, *, fmt: str | None = None) -> list[IngestResult]:
    """Ingest one file: a session's log, or a day file of several sessions (``{ts, role, text, session}`` lines of
    more than one ``session``, as lossless-memory writes a day), each of them kept as its own session."""
    if fmt in (None, "jsonl"):
        try:
            data = source.read_bytes()
        except OSError as err:
            raise UsageError(f"cannot read {source}: {err.strerror}", hint="pass a readable session log") from None
        parts = day_sessions(_complete_lines(data)[0]) if (fmt or _recognised(data)) == "jsonl" else []
        if len(parts) > 1:
            return [ingest_file(vault, source, fmt="jsonl", data=part, fallback=sid) for sid, part in parts]
    return [ingest_file(vault, source, fmt=fmt)]


def day_sessions(data: bytes) -> list[tuple[str, bytes]]:
    """Split ``{ts, role, text, session}`` lines by their ``session`` (or ``session_id``), in order of first line.

    A line without one (or not JSON) goes with the line before it. One session (or none): one part, the data.
    """
    parts: dict[str, list[bytes]] = {}
    current: str | None = None
    for line in data.splitlines(keepends=True):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            obj = None
        sid = (obj.get("session") or obj.get("session_id")) if isinstance(obj, dict) else None
        if isinstance(sid, str) and safe_session_id(sid):
            current = sid
        parts.setdefault(current or "", []).append(line)
    if "" in parts and len(parts) > 1:  # lines before any session's first: the first session's
        first = next(k for k in parts if k)
        parts[first] = parts.pop("") + parts[first]
    return [(sid, b"".join(lines)) for sid, lines in parts.items()]


def ingest_file(vault: Vault, source: Path, *, fmt: str | None = None, data: bytes | None = None,
                fallback: str | None = None) -> IngestResult:
    """Store one session log (masked) and its topic in one commit; nothing when it is already there.

    ``data``: the log's bytes, when they are one session of a day file (``fallback``: its id), not the file.
    """
    from am.git.formats.bigblob import LARGE, store_blob
    from am.records.schemas import check_record
    from am.sessions.redaction import redact_log_to

    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"unknown session format {fmt!r}", hint=f"use one of: {', '.join(FORMATS)}")
    if data is None:
        try:
            data = source.read_bytes()
        except OSError as err:
            raise UsageError(f"cannot read {source}: {err.strerror}", hint="pass a readable session log") from None
    if not data or data.isspace():
        raise UsageError(f"{source} is empty", hint="ingest it once the session has written something")
    data, unfinished = _complete_lines(data)
    if not data or data.isspace():
        raise UsageError(f"{source} holds one unfinished line only (no newline, not JSON yet); nothing was written",
                         hint="ingest it again once the session has finished the line")
    if fmt is not None and not readable_as(data, fmt) and (written_as := _recognised(data)) is not None:
        # A format named for a log none of whose lines it reads: stored under it, the log's times and id were lost.
        raise UsageError(f"{source} is a {written_as} log: none of its first lines reads as {fmt}; nothing was "
                         "written", hint=f"leave out --log-format, or name --log-format {written_as}")
    fmt = fmt or detect(data)
    meta = read_meta(data, fmt, fallback_id=fallback or source.stem)
    sid = _session_id(meta, source)
    tid = session_topic_id(sid)
    digest = hashlib.sha256(data).hexdigest()

    existing = vault.locate(tid)
    old_topic: Topic | None = None
    topic_base = None
    if existing is not None:
        topic_path, old_topic, topic_base = vault.writer.existing_for_update(tid, Topic, "topic")
        held = old_topic.extra.get("session_id")
        if held is not None and str(held) != sid:  # ids that differ only in case or punctuation share a topic id
            raise UsageError(f"session {sid!r} would be kept as topic {tid}, which holds session {str(held)!r}",
                             hint="give this log another session id (its session key, or its file name)")
        if old_topic.extra.get("source_digest") == digest:
            return IngestResult(str(source), sid, tid, PurePosixPath(str(old_topic.extra.get("file", ""))),
                                "unchanged", None, int(old_topic.extra.get("bytes", 0)),
                                int(old_topic.extra.get("lines", 0)), fmt,
                                Counter(old_topic.extra.get("redacted_kinds") or {}), unfinished)
    day = _day(meta.started)
    log_path = PurePosixPath(str(old_topic.extra["file"])) if old_topic is not None and old_topic.extra.get("file") \
        else PurePosixPath(SESSIONS_DIR, f"{day:%Y}", f"{day:%m}", f"{day:%d}", f"{sid}.jsonl")
    # The masked copy goes to an unnamed temporary file beside the repository and is read back once the
    # source is let go: one copy of the log in memory at a time (peak memory: bench/bench_sessions.py).
    # A log without secrets is kept as the very same bytes.
    with tempfile.TemporaryFile(dir=vault.store.gitdir, prefix="am-session-") as spill:
        found = redact_log_to(data, spill)
        counts = found if found is not None else Counter()
        if found is not None:
            del data
            spill.seek(0)
            data = spill.read()
    stored = data
    del data
    old_blob = vault.store.blob_id(log_path)
    action = "added"
    grew = len(stored)
    if old_blob is not None:
        action, grew = _compared(vault, old_blob, stored)
    lines = _line_count(stored)
    created = old_topic.created if old_topic is not None else format_timestamp(day)
    topic = _topic(tid, sid, meta, fmt, log_path, stored, lines, counts, digest, created, old_topic)
    if existing is None:
        topic_path = record_path("topic", tid, created)
    check_record(topic, path=str(topic_path))
    vault.writer.check_secrets([topic], False)
    result = IngestResult(str(source), sid, tid, log_path, action, None, len(stored), lines, fmt, counts, unfinished)
    changes = [_topic_change(vault, topic_path, topic, topic_base)]
    if action != "unchanged":
        changes.insert(0, _change(log_path, stored, old_blob))
    verb = {"added": "ingest", "appended": "append", "replaced": "replace", "unchanged": "ingest"}[action]
    body = [f"Client: {CLIENT_NAMES[fmt]}", f"Lines: {lines}", f"Bytes: {len(stored)}"
            + (f" (+{grew})" if action == "appended" else "")]
    if counts:
        body.append(f"Redacted: {sum(counts.values())} ("
                    + ", ".join(f"{k}: {n}" for k, n in sorted(counts.items())) + ")")
    message = _message(vault, f"session: {verb} {sid}", body, op=f"session.{verb}", ids=[tid])
    vault.writer.check_writable(changes[-1:])
    if action != "unchanged" and len(stored) >= LARGE:
        # Into the object store ahead of the commit, which names it by id (am/git/formats/bigblob.py).
        changes[0] = _change(log_path, stored, old_blob, blob=store_blob(vault.store, stored))
    with vault.store.write_lock(op=f"session.{verb}"):
        commit = vault.store.commit(changes, message=message, author=vault.authorship.author(), committer=vault.authorship.committer())
    vault.writer.after_write(commit, [c.path for c in changes])
    return IngestResult(result.source, sid, tid, log_path, action if action != "unchanged" else "updated", commit,
                        len(stored), lines, fmt, counts, unfinished)


def _compared(vault: Vault, old_blob: str, stored: bytes) -> tuple[str, int]:
    """Return how the vault's copy relates to the new one (unchanged, appended, replaced) and the bytes it grew.

    Compared by blob id (the stored copy's first bytes hashed as a blob), so the
    old copy is never read into memory beside the new one.
    """
    from am.git.light import hash_blob

    old_size = vault.store.object_size(old_blob)
    grew = len(stored) - old_size
    if old_size > len(stored):
        return "replaced", grew
    with memoryview(stored) as view:
        same = hash_blob(view[:old_size]) == old_blob
    if not same:
        return "replaced", grew
    return ("unchanged" if grew == 0 else "appended"), grew


def _change(path: PurePosixPath, data: bytes, base: str | None, *, blob: str | None = None) -> Any:
    from am.git import Change

    return Change(path, data, base=base, blob=blob)


def _topic_change(vault: Vault, path: PurePosixPath, topic: Topic, base: str | None) -> Any:
    from am.writes.forms import render_for_write

    return _change(path, render_for_write(vault.files, path, topic, base).encode("utf-8"), base)


def _message(vault: Vault, subject: str, body: list[str], *, op: str, ids: list[str]) -> str:
    """A structured commit message with a paragraph of its own between the subject and the trailers."""
    from am.records.writes import one_line

    trailers = [f"Am-Op: {op}", *(f"Am-Record: {i}" for i in ids), f"Am-Actor: {vault.actor}"]
    return "\n".join([one_line(subject, limit=120), "", *(one_line(b, limit=400) for b in body), "", *trailers]) + "\n"


def _topic(tid: str, sid: str, meta: SessionMeta, fmt: str, log_path: PurePosixPath, stored: bytes, lines: int,
           redacted: Counter[str], digest: str, created: str | None, old: Topic | None) -> Topic:
    where = f" in {Path(meta.project_dir).name}" if meta.project_dir else ""
    # A client's UUID is shown as its first 8 digits (as git shows a commit); a name a person gave, whole.
    short = sid[:8] if len(sid) >= 32 and all(c in "0123456789abcdef-" for c in sid.lower()) else sid[:60]
    title = f"{CLIENT_NAMES[fmt]} session {short}{where}"
    extra: dict[str, Any] = dict(old.extra) if old is not None else {}
    extra.update({"client": fmt, "session_id": sid, "file": str(log_path)})
    for key, value in (("project_dir", meta.project_dir), ("branch", meta.branch), ("commit", meta.commit),
                       ("started", meta.started), ("ended", meta.ended)):
        if value:
            extra[key] = value
    extra.update({"bytes": len(stored), "lines": lines, "redacted": sum(redacted.values())})
    if redacted:
        extra["redacted_kinds"] = dict(sorted(redacted.items()))
    else:
        extra.pop("redacted_kinds", None)
    extra["source_digest"] = digest
    span = " to ".join(t for t in dict.fromkeys((meta.started, meta.ended)) if t)
    body = (f"{CLIENT_NAMES[fmt]} session `{sid}`" + (f" in `{meta.project_dir}`" if meta.project_dir else "")
            + (f" on branch `{meta.branch}`" if meta.branch else "") + (f", {span}" if span else "") + ".\n\n"
            f"The raw log, byte for byte (secrets masked), is `{log_path}`.\n")
    if old is not None:
        return Topic(id=tid, kind=old.kind, title=old.title, body=body, aliases=old.aliases, tags=old.tags,
                     status=old.status, created=old.created, extra=extra, eol=old.eol)
    return Topic(id=tid, kind="session", title=title, body=body, created=created, extra=extra)


def iter_sessions(vault: Vault) -> Iterator[Topic]:
    """Yield the vault's session topics, by id."""
    for topic in vault.list_topics(kind="session"):
        if topic.extra.get("file"):
            yield topic
