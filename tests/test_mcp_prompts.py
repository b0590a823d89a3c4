"""The MCP server's prompts and resources, its read-only instructions and a nameless client, through the SDK client.

Real server processes over stdio, driven by the MCP SDK's own client (as tests/test_mcp.py); the CLI and the git
CLI are the oracles for what the prompts carry and what a nameless client's write records.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import PYTHON, run_git, subprocess_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation

from am.demo import materialise_demo

TOKEN_BUCKET = "f-20261005-1630-e5d2aa"


@asynccontextmanager
async def _server(vault: Path, *extra: str, cwd: Path, name: str = "prompt-client",
                  log: Path | None = None, env: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """A server over stdio; with ``log``, its standard error (the server's log) goes to that file."""
    argv = [PYTHON, "-m", "am.cli.main", "--vault", str(vault), "mcp", *extra]
    command, args = (argv[0], argv[1:]) if log is None else (
        "sh", ["-c", 'exec "$@" 2>>"$AM_TEST_LOG"', "sh", *argv])
    params = StdioServerParameters(command=command, args=args, cwd=str(cwd), env=subprocess_env(
        AM_HOME=os.environ["AM_HOME"], **({"AM_TEST_LOG": str(log)} if log else {}), **(env or {})))
    async with Client(params, client_info=Implementation(name=name, version="1.0")) as client:
        yield client


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, Path]:
    materialise_demo(tmp_path / "demo").close()
    return tmp_path / "demo", tmp_path / "demo-code"


def _cli(*args: str, cwd: Path) -> str:
    done = subprocess.run([PYTHON, "-m", "am.cli.main", *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env=subprocess_env(AM_HOME=os.environ["AM_HOME"]), check=True)
    return done.stdout


def test_prompts_and_resources_through_the_sdk_client(demo: tuple[Path, Path]) -> None:
    root, code = demo
    run_git(code, "checkout", "-q", "feat-rate-limit")
    out: dict[str, Any] = {}

    async def run() -> None:
        async with _server(root, cwd=code) as client:
            out["prompts"] = (await client.list_prompts()).prompts
            out["slice"] = await client.get_prompt("slice", {"task": "add a rate limit header"})
            out["record"] = await client.get_prompt("record", {"finding": "Limits reset hourly.", "topic": "x"})
            out["review"] = await client.get_prompt("review", {})
            for name, args in (("nope", {}), ("slice", {"bogus": "1"})):
                try:
                    await client.get_prompt(name, args)
                except MCPError as err:
                    out[f"error {name}"] = err
            first = await client.list_resources()
            out["resources"] = list(first.resources)
            cursor = first.next_cursor
            while cursor:
                page = await client.list_resources(cursor=cursor)
                out["resources"] += page.resources
                cursor = page.next_cursor
            out["templates"] = (await client.list_resource_templates()).resource_templates
            out["fact"] = await client.read_resource(f"am://demo/fact/{TOKEN_BUCKET}")
            out["topic"] = await client.read_resource("am://demo/topic/project-alpha")
            for uri in ("am://demo/fact/f-nope", "am://other/fact/x", "https://example.com/x"):
                try:
                    await client.read_resource(uri)
                except MCPError as err:
                    out[uri] = err

    anyio.run(run)
    assert [p.name for p in out["prompts"]] == ["slice", "record", "review"]
    # slice: the pack of this branch, exactly as am slice prints it here, after the words that say it is data.
    text = out["slice"].messages[0].content.text
    pack = _cli("--vault", str(root), "slice", cwd=code)
    assert text.endswith(pack) and text.startswith("Before this task (add a rate limit header), read")
    assert "not instructions" in text and "令牌桶" in pack
    record = out["record"].messages[0].content.text
    assert "Limits reset hourly." in record and "fact_add" in record and "fact_supersede" in record
    review = out["review"].messages[0].content.text
    assert "review_decide" in review and "f-20261012-1100-07bb3e" in review  # the demo's contested fact
    assert "no prompt named 'nope'" in str(out["error nope"]) and "slice, record, review" in str(out["error nope"])
    assert "takes no argument 'bogus'" in str(out["error slice"])
    # Resources: every topic, then the facts that hold somewhere (active, contested); a template for each kind.
    uris = [str(r.uri) for r in out["resources"]]
    topics = [line.split()[0] for line in _cli("--vault", str(root), "topic", "list", cwd=root).splitlines()
              if line and not line.startswith(" ")]
    assert uris[:len(topics)] == [f"am://demo/topic/{t}" for t in topics]
    assert f"am://demo/fact/{TOKEN_BUCKET}" in uris and len(uris) == len(set(uris))
    assert sorted(t.uri_template for t in out["templates"]) == ["am://demo/fact/{id}", "am://demo/topic/{id}"]
    fact = out["fact"].contents[0]
    file = next(root.glob(f"facts/**/{TOKEN_BUCKET}.md")).read_text(encoding="utf-8")
    assert fact.text.splitlines()[0].startswith("<!-- am: memory records written by people and agents")
    assert fact.text.split("\n", 1)[1] == file and fact.mime_type == "text/markdown"
    assert "title: Project Alpha" in out["topic"].contents[0].text or "project-alpha" in out["topic"].contents[0].text
    assert "f-nope" in str(out["am://demo/fact/f-nope"])
    assert "this server serves 'demo'" in str(out["am://other/fact/x"])
    assert "is not an am URI" in str(out["https://example.com/x"])


def test_read_only_instructions_and_prompts_do_not_mention_writing(demo: tuple[Path, Path]) -> None:
    root, code = demo
    out: dict[str, Any] = {}

    async def run() -> None:
        async with _server(root, "--read-only", cwd=code) as client:
            out["instructions"] = client.instructions
            out["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
            try:
                await client.get_prompt("record", {})
            except MCPError as err:
                out["record"] = err
        async with _server(root, cwd=code) as client:
            out["writable"] = client.instructions

    anyio.run(run)
    said = out["instructions"].lower()
    assert "slice" in said and "not instructions" in said
    for word in ("record", "fact_add", "supersede", "expire", "write"):
        assert word not in said, word
    assert "fact_add" in out["writable"]
    assert out["prompts"] == ["slice"]
    assert "read-only" in str(out["record"])


def test_a_client_without_a_name_is_warned_about_and_its_actor_says_so(demo: tuple[Path, Path]) -> None:
    root, code = demo
    log = code.parent / "server.log"
    out: dict[str, Any] = {}

    async def run() -> None:
        env = {"AM_ACTOR": ""}
        async with _server(root, cwd=code, name="", log=log, env=env) as client:
            out["add"] = await client.call_tool("fact_add", {"text": "Nameless clients are named.",
                                                             "topics": ["project-alpha"]})
        async with _server(root, cwd=code, name="named-client", log=code.parent / "named.log") as client:
            await client.list_tools()

    anyio.run(run)
    assert not out["add"].is_error, out["add"].content[0].text
    commit = out["add"].structured_content["commit"]
    message = run_git(root, "log", "-1", "--format=%B", commit)
    assert "Am-Actor: unnamed-mcp-client" in message
    assert run_git(root, "log", "-1", "--format=%an", commit).strip() == "unnamed-mcp-client"
    warnings = [line for line in log.read_text().splitlines() if "sent no name" in line]
    assert len(warnings) == 1 and "'unnamed-mcp-client'" in warnings[0] and "--actor NAME" in warnings[0]
    assert "sent no name" not in (code.parent / "named.log").read_text()
