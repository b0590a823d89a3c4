"""The stdio MCP server answers every line it cannot take, and goes on serving.

A line that was not JSON (`{not json`), JSON that was no JSON-RPC message (`{"jsonrpc": "2.0", "id": 4}`,
`[1, 2]`), or a request holding a lone surrogate escape (`"\\ud800"`, which the SDK's parser refuses) got no
answer at all: the SDK's transport handed the parse error to its dispatcher, which dropped it, and the client
waited for its own timeout. JSON-RPC 2.0 wants an error: now a line that is not JSON is answered -32700
(Parse error) with id null, and a message that is not a valid request -32600 (Invalid Request) with the
request's id when one can be read (so the client's call ends), else null. The real `am mcp` is driven over
pipes (the server's own pipe transport) and with its input a file (the SDK's streams).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path
from typing import Any

from conftest import PYTHON, subprocess_env

from am.vault import Vault

_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
_READY = {"jsonrpc": "2.0", "method": "notifications/initialized"}
# (line as sent, the error code, the id it is answered with)
BAD: list[tuple[str, int, Any]] = [
    ("{not json", -32700, None),
    (('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", '
      '"arguments": {"query": "\\ud800"}}}'), -32600, 2),
    ("[1, 2", -32700, None),
    ('{"jsonrpc": "2.0", "id": 4}', -32600, 4),
    ('{"jsonrpc": "2.0", "id": "five", "method": "ping", "params": {"a": "\\udc00\\ud800"}}', -32600, "five"),
    ('"\\ud800"', -32600, None),
    ("[1, 2]", -32600, None),
    ('{"jsonrpc": "2.0", "id": 8, "method": 42}', -32600, 8),
    ("\x00\x01", -32700, None),
    ("[" * 5000 + "]" * 5000, -32700, None),  # deeper than any JSON reader here goes
]


def _command(vault: Vault) -> list[str]:
    return [PYTHON, "-m", "am.cli.main", "--vault", str(vault.root), "mcp"]


def _env() -> dict[str, str]:
    return subprocess_env(AM_HOME=os.environ["AM_HOME"])


def _check_error(answer: dict[str, Any], code: int, rid: Any, line: str) -> None:
    assert answer.get("jsonrpc") == "2.0" and "error" in answer, (line, answer)
    assert answer["id"] == rid and answer["error"]["code"] == code, (line, answer)
    assert answer["error"]["message"], (line, answer)


def test_every_malformed_line_over_pipes_is_answered(alpha: Vault) -> None:
    proc = subprocess.Popen(_command(alpha), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(), cwd=str(alpha.root))
    assert proc.stdin is not None and proc.stdout is not None

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line.encode("utf-8") + b"\n")
        proc.stdin.flush()

    def answer(line: str) -> dict[str, Any]:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, f"no answer to {line!r} within 30 s"
        got: dict[str, Any] = json.loads(proc.stdout.readline())
        return got

    try:
        send(json.dumps(_INIT))
        assert answer("initialize")["id"] == 1
        send(json.dumps(_READY))
        for line, code, rid in BAD:
            send(line)
            _check_error(answer(line), code, rid, line)
        # Still serving: a ping and a tool call after all of that are answered as ever.
        send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
        assert answer("ping") == {"jsonrpc": "2.0", "id": 99, "result": {}}
        send(json.dumps({"jsonrpc": "2.0", "id": 100, "method": "tools/call",
                         "params": {"name": "search", "arguments": {"query": "Alpha"}}}))
        assert answer("search")["id"] == 100
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
        assert proc.stderr is not None
        stderr = proc.stderr.read().decode()
        proc.stderr.close()
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr


def test_every_malformed_line_from_a_file_is_answered(alpha: Vault, tmp_path: Path) -> None:
    lines = [json.dumps(_INIT), json.dumps(_READY), *(line for line, _, _ in BAD)]
    source = tmp_path / "input.jsonl"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    with source.open("rb") as stdin:
        out = subprocess.run(_command(alpha), stdin=stdin, capture_output=True, env=_env(), cwd=str(alpha.root),
                             timeout=120, check=False)
    assert out.returncode == 0, out.stderr.decode()
    answers = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert answers[0]["id"] == 1
    assert len(answers) == 1 + len(BAD), answers
    for got, (line, code, rid) in zip(answers[1:], BAD, strict=True):
        _check_error(got, code, rid, line)
