"""Claude Code, the real one (npm, tests/clients/), driven on am's configuration: tests/real_clients.py.

`claude mcp list` starts each approved server and checks it answers: after
`am setup claude-code` and the approval a user gives once, it reports am
connected with am on PATH and with am only in a venv; the SessionStart and
SessionEnd hooks Claude Code runs succeed, including for a session that wrote
no transcript; `am setup --remove` leaves no am. The one session (to run the
hooks) talks to a stand-in API on 127.0.0.1 that refuses every request, so it
ends at once, as a session quit at once does; nothing needs a login.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import run_git
from real_clients import AM, User, demo, install_clients


@pytest.fixture(scope="session")
def clients() -> Path:
    return install_clients()


def _approve(user: User, project: Path) -> None:
    """Give the approval a user gives once in Claude Code's dialogs, where Claude Code keeps it.

    Trusting the folder is kept in ~/.claude.json (``projects[PATH].hasTrustDialogAccepted``); approving the
    project's .mcp.json servers in the project's own local settings (``enabledMcpjsonServers``).
    """
    state = user.home / ".claude.json"
    data = json.loads(state.read_text(encoding="utf-8")) if state.exists() else {}
    data.setdefault("projects", {})[str(project)] = {"hasTrustDialogAccepted": True}
    state.write_text(json.dumps(data), encoding="utf-8")
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"enabledMcpjsonServers": ["am"]}),
                                                             encoding="utf-8")


def _mcp_list(user: User, clients: Path, project: Path) -> tuple[str, str]:
    done = user.run(str(clients / "claude"), "mcp", "list", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout + done.stderr
    am_lines = [line for line in out.splitlines() if line.startswith("am:")]
    return "\n".join(am_lines), out


class _RefusingAPI(BaseHTTPRequestHandler):
    """A stand-in for the model's API on loopback: every request is refused (400, not retried)."""

    def _refuse(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                      "message": "a test's stand-in API"}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _refuse

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def refusing_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RefusingAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_claude_code_with_am_only_in_a_venv_connects_runs_both_hooks_and_forgets_am_on_remove(
        clients: Path, tmp_path: Path, refusing_api: str) -> None:
    user = User(tmp_path, am_on_path=False)
    vault, clone = demo(user, tmp_path)
    user.am("--vault", "demo", "setup", "claude-code", cwd=clone)
    server = json.loads((clone / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["am"]
    assert server["command"] == str(AM) and server["env"] == {"AM_HOME": user.am_home}, server
    _approve(user, clone)
    line, out = _mcp_list(user, clients, clone)
    assert "✔ Connected" in line, out  # main: ✘ Failed to connect — ENOENT: Executable not found in $PATH: "am"
    assert "failed" not in out.lower(), out  # the SessionEnd hook of this transcript-less session

    # One session, as Claude Code runs it: SessionStart puts the slice into context; SessionEnd keeps the log.
    before = run_git(vault, "rev-list", "--count", "HEAD").strip()
    done = user.run(str(clients / "claude"), "-p", "hello", "--output-format", "stream-json", "--verbose",
                    "--include-hook-events", cwd=clone,
                    env={"ANTHROPIC_BASE_URL": refusing_api, "ANTHROPIC_API_KEY": "sk-test-offline"})
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    [start] = [e for e in events if e.get("subtype") == "hook_response" and e.get("hook_event") == "SessionStart"]
    assert start["exit_code"] == 0 and start["outcome"] == "success", start  # main: /bin/sh: 1: am: not found
    assert start["stdout"].startswith("# Context pack: project-alpha @ main"), start["stdout"][:300]
    [session] = {e["session_id"] for e in events if "session_id" in e}
    # The log kept, then the clerk's proposals from it (the hook runs am ingest --propose, issue 34.4).
    assert run_git(vault, "rev-list", "--count", "HEAD").strip() == str(int(before) + 2), done.stderr
    assert run_git(vault, "log", "-1", "--skip=1", "--format=%s").startswith(f"session: ingest {session}")
    assert "failed" not in done.stderr.lower(), done.stderr

    user.am("--vault", "demo", "setup", "claude-code", "--remove", cwd=clone)
    (clone / ".claude" / "settings.local.json").unlink()  # the user's approval stays theirs; only it is left
    line, out = _mcp_list(user, clients, clone)
    assert line == "" and "No MCP servers configured" in out, out


def test_claude_code_with_am_on_path_connects_and_ends_a_transcript_less_session_quietly(
        clients: Path, tmp_path: Path) -> None:
    user = User(tmp_path, am_on_path=True)
    vault, clone = demo(user, tmp_path)
    user.am("--vault", "demo", "setup", "claude-code", cwd=clone)
    assert json.loads((clone / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["am"]["command"] == "am"
    _approve(user, clone)
    before = run_git(vault, "rev-list", "--count", "HEAD").strip()
    line, out = _mcp_list(user, clients, clone)
    assert line == "am: am --vault demo mcp - ✔ Connected", out
    # main: SessionEnd hook [am --vault demo ingest -] failed: ... .jsonl does not exist
    assert "hook" not in out.lower(), out
    assert run_git(vault, "rev-list", "--count", "HEAD").strip() == before  # nothing to keep, nothing written
