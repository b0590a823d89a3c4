"""The MCP Inspector's CLI (the TypeScript SDK's client; npm, tests/clients/) on the config am wrote.

Started from `.cursor/mcp.json` with none of the user's variables, it lists
the tools (and the prompts and resources, when the server offers them), and
each read tool answers as the Python SDK's client is answered for the same
world. Cursor and Claude Desktop themselves have no CLI that runs here:
tests/test_setup_global.py checks their files against the documented formats.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest
from real_clients import User, demo, install_clients, run_inspector

READ_TOOLS = ("slice", "search", "why", "fact_show", "topic_show", "topic_list", "log", "check", "review_list")


@pytest.fixture(scope="session")
def clients() -> Path:
    return install_clients()


async def _sdk_answers(config: dict[str, Any], cwd: Path, env: dict[str, str],
                       calls: dict[str, dict[str, str]]) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=config["command"], args=config["args"], env=env | config.get("env", {}),
                                   cwd=str(cwd))
    out: dict[str, Any] = {}
    async with Client(params) as client:
        caps = client.server_capabilities
        out["offers"] = {"prompts": caps is not None and caps.prompts is not None,
                         "resources": caps is not None and caps.resources is not None}
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        if out["offers"]["prompts"]:
            out["prompts"] = sorted(p.name for p in (await client.list_prompts()).prompts)
        if out["offers"]["resources"]:
            out["resources"] = sorted(str(r.uri) for r in (await client.list_resources()).resources)
        for tool, args in calls.items():
            result = await client.call_tool(tool, args)
            out[tool] = {"isError": bool(result.is_error), "structuredContent": result.structured_content,
                         "text": [c.text for c in result.content if c.type == "text"]}
    return out


def _plain(answer: dict[str, Any]) -> dict[str, Any]:
    return {"isError": bool(answer.get("isError")), "structuredContent": answer.get("structuredContent"),
            "text": [c["text"] for c in answer.get("content", []) if c.get("type") == "text"]}


def test_the_inspector_from_the_config_am_wrote_lists_and_answers_as_the_python_sdk(
        clients: Path, tmp_path: Path) -> None:
    user = User(tmp_path, am_on_path=True)  # am only in a venv: tests/test_real_claude_code.py
    _vault, clone = demo(user, tmp_path)
    user.am("--vault", "demo", "setup", "cursor", cwd=clone)
    config_path = clone / ".cursor" / "mcp.json"
    entry = json.loads(config_path.read_text(encoding="utf-8"))["mcpServers"]["am"]
    # None of the user's variables: what the server needs must be in the configuration (main: without AM_HOME,
    # "no vault named 'demo' (known: none yet)").
    bare = {"HOME": user.env["HOME"], "PATH": user.path, "LANG": "C.UTF-8"}
    calls = {"slice": {"max_tokens": "2000"}, "search": {"query": "getUser"},
             "why": {"id": "fact-alpha-getuser-main"}, "fact_show": {"id": "fact-alpha-getuser-main"},
             "topic_show": {"id": "project-alpha"}, "topic_list": {}, "log": {}, "check": {}, "review_list": {}}
    assert set(calls) == set(READ_TOOLS)
    expected = anyio.run(_sdk_answers, entry, clone, bare, {k: _typed(v) for k, v in calls.items()})

    def inspect(method: str, *extra: str) -> Any:
        return run_inspector(clients, config_path, clone, bare, method, *extra)

    jobs: dict[str, tuple[str, ...]] = {"tools": ("tools/list",)}
    for kind in ("prompts", "resources"):
        if expected["offers"][kind]:
            jobs[kind] = (f"{kind}/list",)
    for tool, args in calls.items():
        jobs[tool] = ("tools/call", "--tool-name", tool, *(a for k, v in args.items() for a in ("--tool-arg", f"{k}={v}")))
    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = dict(zip(jobs, pool.map(lambda job: inspect(*job), jobs.values()), strict=True))
    assert sorted(t["name"] for t in answers["tools"]["tools"]) == expected["tools"]
    assert set(READ_TOOLS) <= set(expected["tools"])
    if expected["offers"]["prompts"]:
        listed = sorted(p["name"] for p in answers["prompts"]["prompts"])
        assert listed == expected["prompts"] and listed, listed
    if expected["offers"]["resources"]:
        assert sorted(r["uri"] for r in answers["resources"]["resources"]) == expected["resources"]
    for tool in calls:
        assert not expected[tool]["isError"] and expected[tool]["text"], (tool, expected[tool])
        assert isinstance(expected[tool]["structuredContent"], dict), (tool, expected[tool])
        assert _plain(answers[tool]) == expected[tool], tool


def _typed(args: dict[str, str]) -> dict[str, Any]:
    """The arguments as the Inspector sends them: a value that reads as a number is a number."""
    return {k: int(v) if v.isdigit() else v for k, v in args.items()}


def test_the_inspectors_search_on_main_finds_what_am_search_finds_there(clients: Path, tmp_path: Path) -> None:
    user = User(tmp_path, am_on_path=True)
    _vault, clone = demo(user, tmp_path)
    user.am("--vault", "demo", "setup", "cursor", cwd=clone)
    bare = {"HOME": user.env["HOME"], "PATH": user.path, "LANG": "C.UTF-8"}
    # The token-bucket fact holds only on feat-rate-limit; the clone is on main.
    cli = json.loads(user.am("search", "令牌桶", "--format", "json", cwd=clone).stdout)
    found = run_inspector(clients, clone / ".cursor" / "mcp.json", clone, bare, "tools/call", "--tool-name", "search",
                     "--tool-arg", "query=令牌桶")
    assert [(h["id"], h["status"]) for h in found["structuredContent"]["hits"]] == \
        [(h["id"], h["status"]) for h in cli["hits"]]
