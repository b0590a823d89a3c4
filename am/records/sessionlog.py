"""Read agents' session logs: Claude Code transcripts, Codex rollouts and plain ``{ts, role, text}`` lines.

The formats, as their writers define them (docs/sessions.md cites the sources):

* **Claude Code** (``~/.claude/projects/<encoded cwd>/<session uuid>.jsonl``):
  one JSON object a line; conversation lines have ``type`` ``user`` or
  ``assistant``, ``sessionId``, ``cwd``, ``gitBranch``, ``timestamp``,
  ``uuid``/``parentUuid`` and ``message`` (``role``, and ``content``: a string,
  or blocks of ``text``, ``thinking``, ``tool_use`` {name, input} and, in user
  lines, ``tool_result`` {tool_use_id, content}). Other lines (``summary``,
  ``file-history-snapshot``, ``queue-operation``, ``system``) carry no message.
* **Codex** (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``):
  every line is a ``RolloutLine`` ``{"timestamp", "type", "payload"}`` with
  ``type`` one of ``session_meta`` (payload: ``id``, ``timestamp``, ``cwd``,
  ``originator``, ``cli_version``, ``git`` {``commit_hash``, ``branch``,
  ``repository_url``}), ``response_item`` (payload ``type`` ``message`` with
  ``role`` and ``content`` [{type input_text|output_text, text}],
  ``function_call`` {name, arguments, call_id}, ``function_call_output``
  {call_id, output}, ``custom_tool_call``, ``local_shell_call``, ``reasoning``),
  ``event_msg``, ``turn_context`` and ``compacted``.
* **jsonl**: ``{"ts": ..., "role": "user|assistant|tool|system", "text": ...}``
  a line (``timestamp``/``content`` and ``session``/``session_id`` also read).

Pure (floor 1): takes bytes, returns values; am/sessions/ (ingest, the clerk, search)
and am/upkeep/review.py (the cited lines of a proposal) read logs through it. A line that is not JSON, or not an object,
is kept in the log and skipped here (counted in ``unreadable``).

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from am.errors import UsageError
from am.records.ids import is_device_name

__all__ = ["FORMATS", "Message", "SessionMeta", "detect", "log_file", "messages", "read_meta", "readable_as", "safe_session_id",
           "session_topic_id"]

FORMATS = ("claude-code", "codex", "jsonl")
ROLES = ("user", "assistant", "tool", "system")
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_CLAUDE_TYPES = frozenset({"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"})
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")
_PROBE_LINES = 200


@dataclass(frozen=True)
class Message:
    """One thing said in a session: its line in the log (from 1), time, role and text."""

    line: int
    ts: str | None
    role: str
    text: str


@dataclass(frozen=True)
class SessionMeta:
    """What a log says about its session: id, client, project folder, branch, commit, first and last time."""

    id: str
    client: str
    project_dir: str | None = None
    branch: str | None = None
    commit: str | None = None
    started: str | None = None
    ended: str | None = None


def session_topic_id(session_id: str) -> str:
    """Return the id of a session's topic: ``session-<id>`` in lower case, letters, digits and dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", session_id.lower()).strip("-")
    return f"session-{slug}"[:120].rstrip("-")


def log_file(root: Path, value: object) -> Path | None:
    """Return where a session topic's ``file`` is, when it names a log in the vault's ``sessions/`` folder; else None.

    A topic is a record anyone who writes the vault can edit (a teammate, an agent, a merge): a ``file`` that is
    absolute, climbs out (``..``) or is a link leading out would have am read a file of this machine that is no
    part of the vault, show it in review and session search, and hand it to an extractor.
    """
    if not isinstance(value, str):
        return None
    parts = value.split("/")
    if parts[0] != "sessions" or len(parts) < 2 or "\\" in value or any(p in ("", ".", "..") for p in parts):
        return None
    full = root / value
    try:
        inside = full.resolve().is_relative_to((root / "sessions").resolve())
    except (OSError, RuntimeError):  # a loop of links
        return None
    return full if inside else None


def safe_session_id(value: str) -> str | None:
    """Return the id if it is safe as a file name (letters, digits, ``_ . -``; no device name: CON.jsonl), else None."""
    safe = _SAFE_ID.fullmatch(value) and ".." not in value and not is_device_name(value)
    return value if safe else None


def _objects(lines: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, raw in lines:
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than Python reads: not a message
            continue
        if isinstance(value, dict):
            yield number, value


def _head(data: bytes, count: int = _PROBE_LINES) -> Iterator[tuple[int, bytes]]:
    start = 0
    for number in range(1, count + 1):
        if start >= len(data):
            return
        end = data.find(b"\n", start)
        end = len(data) if end == -1 else end
        yield number, data[start:end]
        start = end + 1


def _tail(data: bytes, count: int = _PROBE_LINES) -> Iterator[tuple[int, bytes]]:
    """Yield the last lines, last first (their numbers are not known without counting: 0)."""
    end = len(data)
    if data.endswith(b"\n"):
        end -= 1
    for _ in range(count):
        if end <= 0:
            return
        start = data.rfind(b"\n", 0, end) + 1
        yield 0, data[start:end]
        end = start - 1


# What makes one JSON line a line of each format, in the order a log's format is recognised.
_LINE_FORMATS: tuple[tuple[str, Callable[[dict[str, Any]], bool]], ...] = (
    ("codex", lambda obj: obj.get("type") in _CODEX_TYPES and "payload" in obj),
    ("claude-code", lambda obj: "sessionId" in obj or (obj.get("type") in _CLAUDE_TYPES
                                                       and ("message" in obj or "leafUuid" in obj))),
    ("jsonl", lambda obj: "role" in obj and ("text" in obj or "content" in obj)),
)


def _line_format(obj: dict[str, Any]) -> str | None:
    """Name the format one JSON line is written in, or None."""
    return next((name for name, reads in _LINE_FORMATS if reads(obj)), None)


def readable_as(data: bytes, fmt: str) -> bool:
    """Whether some of a log's first lines read as ``fmt`` (a Claude Code line may also be a plain one)."""
    reads = dict(_LINE_FORMATS)[fmt]
    return any(reads(obj) for _, obj in _objects(_head(data)))


def detect(data: bytes) -> str:
    """Name the format of a log from its first lines; raise UsageError when it is none of the three."""
    for _, obj in _objects(_head(data)):
        found = _line_format(obj)
        if found is not None:
            return found
    raise UsageError("not a session log am reads (Claude Code, Codex or {ts, role, text} JSON lines)",
                     hint="name the format with --log-format claude-code|codex|jsonl")


def _text_of(value: Any) -> str:
    """Return the readable text of a content value: a string, or a list of blocks with text."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif "content" in block:
                    parts.append(_text_of(block["content"]))
        return "\n".join(p for p in parts if p)
    if isinstance(value, dict):
        return _text_of(value.get("content", value.get("text", "")))
    return ""


def read_meta(data: bytes, fmt: str, *, fallback_id: str) -> SessionMeta:
    """Return the session's metadata from the log's first and last lines (never the whole log)."""
    head = [obj for _, obj in _objects(_head(data))]
    tail = [obj for _, obj in _objects(_tail(data))]
    first_ts = next((t for o in head if isinstance(t := _ts(o, fmt), str)), None)
    last_ts = next((t for o in tail if isinstance(t := _ts(o, fmt), str)), None)
    sid: Any = None
    cwd = branch = commit = None
    if fmt == "claude-code":
        sid = next((o["sessionId"] for o in head if isinstance(o.get("sessionId"), str)), None)
        cwd = next((o["cwd"] for o in head if isinstance(o.get("cwd"), str)), None)
        branch = next((o["gitBranch"] for o in head if isinstance(o.get("gitBranch"), str) and o["gitBranch"]), None)
    elif fmt == "codex":
        meta: dict[str, Any] = next((o["payload"] for o in head if o.get("type") == "session_meta"
                                     and isinstance(o.get("payload"), dict)), {})
        sid = meta.get("id")
        cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
        git: dict[str, Any] = meta["git"] if isinstance(meta.get("git"), dict) else {}
        branch = git.get("branch") if isinstance(git.get("branch"), str) else None
        commit = git.get("commit_hash") if isinstance(git.get("commit_hash"), str) else None
        if isinstance(meta.get("timestamp"), str):
            first_ts = first_ts or meta["timestamp"]
    else:
        sid = next((o.get("session") or o.get("session_id") for o in head
                    if isinstance(o.get("session") or o.get("session_id"), str)), None)
    sid = sid if isinstance(sid, str) and safe_session_id(sid) else None
    if sid is None:
        sid = safe_session_id(fallback_id)
    if sid is None:
        raise UsageError(f"no usable session id in the log or its file name {fallback_id!r}",
                         hint="name the file <session-id>.jsonl with letters, digits, '_', '.' or '-'")
    return SessionMeta(id=sid, client=fmt, project_dir=cwd, branch=branch, commit=commit,
                       started=first_ts, ended=last_ts or first_ts)


def _ts(obj: dict[str, Any], fmt: str) -> Any:
    return obj.get("ts", obj.get("timestamp")) if fmt == "jsonl" else obj.get("timestamp")


def messages(data: bytes, fmt: str) -> Iterator[Message]:
    """Yield what was said in a log, line by line, in order (line numbers count from 1)."""
    lines = ((n, raw) for n, raw in enumerate(data.split(b"\n"), start=1))
    for number, obj in _objects(lines):
        ts = _ts(obj, fmt)
        ts = ts if isinstance(ts, str) else None
        try:
            said = list(_said(obj, fmt))
        except RecursionError:  # a block nested some hundred levels deep: no text to show
            continue
        for role, text in said:
            if text.strip():
                yield Message(number, ts, role, text)


def _said(obj: dict[str, Any], fmt: str) -> Iterator[tuple[str, str]]:
    if fmt == "claude-code":
        yield from _claude(obj)
    elif fmt == "codex":
        yield from _codex(obj)
    else:
        role = obj.get("role")
        if isinstance(role, str):
            yield (role if role in ROLES else "system"), _text_of(obj.get("text", obj.get("content", "")))


def _claude(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    message = obj.get("message")
    if obj.get("type") not in ("user", "assistant") or not isinstance(message, dict):
        return
    role = "assistant" if obj["type"] == "assistant" else "user"
    content = message.get("content")
    if isinstance(content, str):
        yield role, content
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            yield role, block["text"]
        elif kind == "tool_use":
            yield "tool", f"{block.get('name', 'tool')} {json.dumps(block.get('input', {}), ensure_ascii=False)}"
        elif kind == "tool_result":
            yield "tool", _text_of(block.get("content", ""))


def _codex(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    payload = obj.get("payload")
    if obj.get("type") != "response_item" or not isinstance(payload, dict):
        return
    kind = payload.get("type")
    if kind == "message":
        role = payload.get("role")
        role = role if role in ("user", "assistant") else "system"
        yield role, _text_of(payload.get("content", []))
    elif kind == "function_call":
        yield "tool", f"{payload.get('name', 'function')} {payload.get('arguments', '')}"
    elif kind in ("function_call_output", "custom_tool_call_output"):
        output = payload.get("output")
        yield "tool", output if isinstance(output, str) else _text_of(output)
    elif kind == "custom_tool_call":
        yield "tool", f"{payload.get('name', 'tool')} {payload.get('input', '')}"
    elif kind == "local_shell_call":
        action = payload.get("action")
        command = action.get("command") if isinstance(action, dict) else None
        yield "tool", " ".join(command) if isinstance(command, list) else json.dumps(action)
