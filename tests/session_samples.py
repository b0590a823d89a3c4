"""Session logs shaped as Claude Code and Codex write them (docs/sessions.md names the sources), for tests and bench."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CLAUDE_SESSION = "5f0c3e2a-1b7d-4c1e-9a31-2d6f0e8b7c11"
CODEX_SESSION = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
AWS_KEY = "AKIAQ7R3XW5TZB2KJ4NP"  # shaped like an access key id, not a real one


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def claude_lines(session: str = CLAUDE_SESSION, *, cwd: str = "/home/dev/alpha", branch: str = "main",
                 extra_user: str | None = None) -> list[str]:
    """A Claude Code transcript: a user asks, the assistant reads a file, a remember: line, a final summary."""
    base = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session, "version": "2.0.74",
            "gitBranch": branch}
    lines = [
        {"type": "summary", "summary": "Rate limit for getUser", "leafUuid": "a6f3c1d2-0000-4000-8000-000000000009"},
        {**base, "parentUuid": None, "type": "user", "uuid": "a6f3c1d2-0000-4000-8000-000000000001",
         "timestamp": "2026-11-30T10:00:00.000Z",
         "message": {"role": "user", "content": "Add a rate limit to getUser in the Alpha service"}},
        {**base, "parentUuid": "a6f3c1d2-0000-4000-8000-000000000001", "type": "assistant",
         "uuid": "a6f3c1d2-0000-4000-8000-000000000002", "timestamp": "2026-11-30T10:00:05.000Z",
         "requestId": "req_011CUx1", "message": {
             "model": "claude-sonnet-4-5", "id": "msg_01", "type": "message", "role": "assistant",
             "content": [{"type": "thinking", "thinking": "Look at the handler first.", "signature": "sig"},
                         {"type": "text", "text": "I'll read the users handler."},
                         {"type": "tool_use", "id": "toolu_01", "name": "Read",
                          "input": {"file_path": f"{cwd}/src/api/users.py"}}],
             "stop_reason": "tool_use", "usage": {"input_tokens": 120, "output_tokens": 40}}},
        {**base, "parentUuid": "a6f3c1d2-0000-4000-8000-000000000002", "type": "user",
         "uuid": "a6f3c1d2-0000-4000-8000-000000000003", "timestamp": "2026-11-30T10:00:06.000Z",
         "message": {"role": "user", "content": [{"tool_use_id": "toolu_01", "type": "tool_result",
                                                  "content": "def get_user(id):\n    return db.users[id]\n"}]},
         "toolUseResult": {"type": "text", "file": {"filePath": f"{cwd}/src/api/users.py", "numLines": 2}}},
        {**base, "parentUuid": "a6f3c1d2-0000-4000-8000-000000000003", "type": "user",
         "uuid": "a6f3c1d2-0000-4000-8000-000000000004", "timestamp": "2026-11-30T10:01:00.000Z",
         "message": {"role": "user",
                     "content": "remember: the Alpha rate limits live in src/api/limits.py, not in the handlers."}},
        {**base, "parentUuid": "a6f3c1d2-0000-4000-8000-000000000004", "type": "assistant",
         "uuid": "a6f3c1d2-0000-4000-8000-000000000005", "timestamp": "2026-11-30T10:05:00.000Z",
         "message": {"model": "claude-sonnet-4-5", "id": "msg_02", "type": "message", "role": "assistant",
                     "content": [{"type": "text", "text": (
                         "Done. Summary:\n"
                         "- Added a token bucket in src/api/limits.py.\n"
                         "- Decision: getUser is limited to 100 requests a minute per client.\n"
                         "- Tests pass.")}],
                     "stop_reason": "end_turn", "usage": {"input_tokens": 300, "output_tokens": 80}}},
    ]
    out = [_line(o) for o in lines]
    if extra_user is not None:
        out.append(_line({**base, "parentUuid": "a6f3c1d2-0000-4000-8000-000000000005", "type": "user",
                          "uuid": "a6f3c1d2-0000-4000-8000-000000000006", "timestamp": "2026-11-30T10:07:00.000Z",
                          "message": {"role": "user", "content": extra_user}}))
    return out


def codex_lines(session: str = CODEX_SESSION, *, commit: str = "9fceb02d0ae598e95dc970b74767f19372d61af8") -> list[str]:
    """A Codex rollout: session_meta with git info, messages, a shell call and its output, reasoning, events."""
    ts = "2026-11-29T08:22:53.411Z"
    lines = [
        {"timestamp": ts, "type": "session_meta", "payload": {
            "id": session, "timestamp": ts, "cwd": "/home/dev/alpha", "originator": "codex_cli_rs",
            "cli_version": "0.46.0", "instructions": None, "source": "cli",
            "git": {"commit_hash": commit, "branch": "feat-batch", "repository_url": "git@example.com:acme/alpha.git"}}},
        {"timestamp": ts, "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/home/dev/alpha</cwd>\n"
                                                       "</environment_context>"}]}},
        {"timestamp": "2026-11-29T08:23:00.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "Add a batch getUsers(ids) endpoint"}]}},
        {"timestamp": "2026-11-29T08:23:00.000Z", "type": "event_msg", "payload": {
            "type": "user_message", "message": "Add a batch getUsers(ids) endpoint", "kind": "plain"}},
        {"timestamp": "2026-11-29T08:23:00.100Z", "type": "turn_context", "payload": {
            "cwd": "/home/dev/alpha", "approval_policy": "on-request",
            "sandbox_policy": {"mode": "workspace-write"}, "model": "gpt-5-codex", "summary": "auto"}},
        {"timestamp": "2026-11-29T08:23:02.000Z", "type": "response_item", "payload": {
            "type": "reasoning", "summary": [{"type": "summary_text", "text": "Find the handler"}],
            "content": None, "encrypted_content": "gAAAAB"}},
        {"timestamp": "2026-11-29T08:23:03.000Z", "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "arguments": "{\"command\":[\"rg\",\"getUser\"]}",
            "call_id": "call_1"}},
        {"timestamp": "2026-11-29T08:23:04.000Z", "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "call_1",
            "output": "{\"output\":\"src/api/users.py:3:def get_user(id):\\n\",\"metadata\":{\"exit_code\":0}}"}},
        {"timestamp": "2026-11-29T08:30:00.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text",
                         "text": "Added getUsers(ids).\nfact: getUsers(ids) accepts at most 100 ids per call."}]}},
    ]
    return [_line(o) for o in lines]


def write_log(path: Path, lines: list[str]) -> Path:
    """Write JSON lines (each ending in a newline) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))
    return path
