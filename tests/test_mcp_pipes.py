"""The stdio server's own pipes (am/mcp/pipes.py) and quick reads on the event loop (am/mcp/server.py).

The wire is checked from outside: a real child process whose descriptors 0 and 1 are pipes,
and the SDK's own client driving `am mcp` with messages longer than a pipe's buffer.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import textwrap
import threading
from typing import Any

import anyio
from conftest import PYTHON, run_git, subprocess_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from am.mcp.server import Dispatcher, ServerOptions
from am.mcp.tools import TOOLS, ToolOutput
from am.vault import Vault

_CLAIM = textwrap.dedent("""
    import fcntl, os, sys
    from am.mcp import pipes
    assert pipes.usable()
    before = fcntl.fcntl(0, fcntl.F_GETFL)
    with pipes.claim() as wire:
        print("stray output from a tool", flush=True)          # fd 1 is stderr now
        os.write(1, b"stray bytes\\n")
        assert os.read(0, 100) == b""                           # fd 0 is the null device
        line = os.read(wire.read_fd, 6)                         # the client's pipe, on the private copy
        os.write(wire.write_fd, b"wire:" + line)
        os.set_blocking(wire.read_fd, False)                    # the event loop makes the pipe non-blocking
        os.close(wire.read_fd)
        os.close(wire.write_fd)
    assert fcntl.fcntl(0, fcntl.F_GETFL) == before, "O_NONBLOCK put back on the client's pipe"
    os.write(1, b"restored\\n")
    sys.stdout.write(sys.stdin.read())
""")


def test_claim_moves_the_wire_aside_and_puts_everything_back() -> None:
    out = subprocess.run([PYTHON, "-c", _CLAIM], input=b"hello\nrest after restore\n", capture_output=True,
                         env=subprocess_env(), timeout=60, check=False)
    assert out.returncode == 0, out.stderr.decode()
    # The protocol's bytes only on stdout, through the private copies; what a tool printed went to stderr;
    # afterwards descriptors 0 and 1 are the client's pipes again.
    assert out.stdout == b"wire:hello\nrestored\nrest after restore\n"
    assert b"stray output from a tool\nstray bytes\n" in out.stderr


def test_messages_longer_than_a_pipe_buffer_both_ways(alpha: Vault) -> None:
    """A 200 KB body in (one line on stdin) and out (one line on stdout) through the SDK client over stdio."""
    body = " ".join(f"word{i}" for i in range(30000)) + "\n"
    assert len(body) > 200_000
    params = StdioServerParameters(command=PYTHON, args=["-m", "am.cli.main", "--vault", str(alpha.root), "mcp"],
                                   cwd=str(alpha.root), env=subprocess_env(AM_HOME=os.environ["AM_HOME"]))
    results: dict[str, Any] = {}

    async def session() -> None:
        async with Client(params, client_info=Implementation(name="pipe-test", version="1")) as client:
            results["add"] = await client.call_tool("topic_add", {"title": "Big", "id": "concept-big", "body": body})
            results["show"] = await client.call_tool("topic_show", {"id": "concept-big"})
            results["both"] = await asyncio.gather(*(client.call_tool("topic_show", {"id": "concept-big"})
                                                     for _ in range(4)))

    anyio.run(session)
    assert not results["add"].is_error, results["add"].content[0].text
    assert results["show"].structured_content["record"]["body"] == body
    assert all(r.structured_content["record"]["body"] == body for r in results["both"])
    text = results["show"].content[0].text
    assert json.loads(text.split("\n", 1)[1])["record"]["body"] == body
    assert run_git(alpha.root, "status", "--porcelain") == ""


def test_quick_reads_run_on_the_loop_when_idle_and_on_workers_otherwise(alpha: Vault) -> None:
    alpha.add_fact("Alpha keeps sessions in Redis.", topics=["project-alpha"])
    assert {t.name for t in TOOLS if t.quick} == {"search", "fact_show", "topic_show", "topic_list"}
    assert not any(t.quick and t.writes for t in TOOLS)
    d = Dispatcher(ServerOptions(vault_root=alpha.root, folder=alpha.root), inline=True)
    where: list[tuple[str, str]] = []
    run = d.call_sync

    def recorded(name: str, args: dict[str, Any], client: str | None) -> ToolOutput | str:
        where.append((name, threading.current_thread().name))
        return run(name, args, client)

    d.call_sync = recorded  # type: ignore[method-assign]

    async def calls() -> list[object]:
        loop = threading.current_thread().name
        alone = [await d.call("search", {"query": "sessions"}, "t"), await d.call("slice", {}, "t")]
        together = await asyncio.gather(d.call("check", {}, "t"), d.call("topic_list", {}, "t"))
        where.append(("loop", loop))
        return [*alone, *together]

    try:
        outs = asyncio.run(calls())
    finally:
        d.close()
    for out in outs:
        assert isinstance(out, ToolOutput), out
    loop = dict(where)["loop"]
    assert where[0] == ("search", loop), "a quick read alone runs on the loop"
    assert where[1][0] == "slice" and where[1][1].startswith("am-mcp"), "a slice always runs on a worker"
    assert dict(where[2:4])["check"].startswith("am-mcp")
    assert dict(where[2:4])["topic_list"].startswith("am-mcp"), "a quick read beside another call goes to a worker"
    # Off by default (the HTTP server): every call on a worker.
    plain = Dispatcher(ServerOptions(vault_root=alpha.root, folder=alpha.root))
    plain.call_sync = recorded  # type: ignore[method-assign]
    where.clear()
    try:
        asyncio.run(plain.call("search", {"query": "sessions"}, "t"))
    finally:
        plain.close()
    assert where[0][1].startswith("am-mcp")


def test_a_server_whose_input_is_not_a_pipe_keeps_the_sdk_streams_and_stops_at_end_of_input(alpha: Vault) -> None:
    with open(os.devnull, "rb") as null:
        out = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(alpha.root), "mcp"], stdin=null,
                             capture_output=True, env=subprocess_env(AM_HOME=os.environ["AM_HOME"]), timeout=60,
                             check=False)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout == b""
