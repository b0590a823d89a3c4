"""Every door resolves a world through the same code: each MCP read tool's answer is `am ... --format json`'s.

The demo vault and its code clone (project-alpha: main, feat-batch, feat-rate-limit), driven by the MCP SDK's
own client over stdio against real server processes started in the clone and in a git worktree of it; the CLI,
run in the same folder, is the oracle. Then fact_add from a server in a feature-branch worktree, without world
arguments: the fact holds on that branch, and on main only once git merges the branch.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from conftest import PYTHON, commit_file, run_git, subprocess_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from am.cli.main import cli
from am.demo import materialise_demo

TOKEN_BUCKET = "f-20261005-1630-e5d2aa"  # the demo's fact observed on feat-rate-limit only ("令牌桶")
BATCH = "f-20261002-0915-c4f1a5"  # observed on feat-batch; supersedes fact-alpha-getuser-main there


@asynccontextmanager
async def _server(vault: Path, cwd: Path, name: str = "parity-client") -> AsyncIterator[Client]:
    params = StdioServerParameters(command=PYTHON, args=["-m", "am.cli.main", "--vault", str(vault), "mcp"],
                                   cwd=str(cwd), env=subprocess_env(AM_HOME=os.environ["AM_HOME"]))
    async with Client(params, client_info=Implementation(name=name, version="1.0")) as client:
        yield client


def _cli(vault: Path, cwd: Path, *args: str) -> Any:
    """Run `am --vault VAULT ARGS --format json` in ``cwd`` (where its default world is) and return its JSON."""
    here = Path.cwd()
    os.chdir(cwd)
    try:
        done = CliRunner().invoke(cli, ["--vault", str(vault), *args, "--format", "json"], catch_exceptions=False)
    finally:
        os.chdir(here)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, Path]:
    vault = materialise_demo(tmp_path / "demo")
    vault.close()
    return tmp_path / "demo", tmp_path / "demo-code"


CALLS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("slice", {"format": "json"}, ("slice",)),
    ("slice", {"format": "json", "branch": "feat-batch"}, ("slice", "--branch", "feat-batch")),
    ("search", {"query": "令牌桶"}, ("search", "令牌桶")),
    ("search", {"query": "getUser"}, ("search", "getUser")),
    ("search", {"query": "token bucket yesterday"}, ("search", "token", "bucket", "yesterday")),
    ("search", {"query": "getUser", "branch": "feat-batch"}, ("search", "getUser", "--branch", "feat-batch")),
    ("why", {"id": TOKEN_BUCKET}, ("why", TOKEN_BUCKET)),
    ("why", {"id": "fact-alpha-getuser-main"}, ("why", "fact-alpha-getuser-main")),
    ("fact_show", {"id": TOKEN_BUCKET}, ("fact", "show", TOKEN_BUCKET)),
    ("topic_show", {"id": "project-alpha"}, ("topic", "show", "project-alpha")),
    ("topic_list", {}, ("topic", "list")),
    ("log", {"limit": 5}, ("log", "-n", "5")),
    ("check", {}, ("check",)),
    ("review_list", {}, ("review", "list")),
]


def _same(tool: str, mcp: dict[str, Any], cli_json: Any) -> None:
    """Assert that every field the tool returns is the CLI's (lists paged, records wrapped, as docs/agents.md says)."""
    got = {k: v for k, v in mcp.items() if k != "note"}
    if tool == "slice":
        assert json.loads(got["pack"]) == cli_json
        assert got["world"] == {k: cli_json["world"][k] for k in ("repo", "branch", "commit")}
        assert got["tokens"] == cli_json["tokens"]["estimate"]
        assert got["left_out"] == {k: v for k, v in cli_json["left_out"].items() if v}
    elif tool in ("fact_show", "topic_show"):
        assert got == {"record": cli_json}
    elif tool == "topic_list":
        assert got["total"] == len(cli_json)
        assert got["topics"] == [{k: item.get(k, []) for k in ("id", "kind", "title", "aliases")} for item in cli_json]
    elif tool == "log":
        assert got == {"entries": cli_json}
    elif tool == "check":
        assert got["total"] == len(cli_json["issues"])
        assert {k: v for k, v in got.items() if k != "total"} == cli_json
    else:
        assert got == cli_json


def test_every_read_tool_answers_what_the_cli_answers_in_the_same_world(demo: tuple[Path, Path]) -> None:
    root, code = demo
    worktree = code.parent / "wt-batch"
    run_git(code, "worktree", "add", "-q", str(worktree), "feat-batch")
    answers: dict[tuple[str, int], Any] = {}

    async def ask(client: Client, world: str) -> None:
        for n, (tool, args, _) in enumerate(CALLS):
            result = await client.call_tool(tool, args)
            assert not result.is_error, (world, tool, result.content[0].text)
            answers[(world, n)] = result.structured_content

    async def run() -> None:
        async with _server(root, code) as in_clone, _server(root, worktree) as in_worktree:
            await ask(in_clone, "main")
            run_git(code, "checkout", "-q", "feat-rate-limit")  # the server looks its world up at each call
            await ask(in_clone, "feat-rate-limit")
            await ask(in_worktree, "worktree")

    anyio.run(run)
    for world, folder, branch in (("main", code, "main"), ("feat-rate-limit", code, "feat-rate-limit"),
                                  ("worktree", worktree, "feat-batch")):
        if world == "main":
            run_git(code, "checkout", "-q", "main")
        elif world == "feat-rate-limit":
            run_git(code, "checkout", "-q", "feat-rate-limit")
        for n, (tool, _, argv) in enumerate(CALLS):
            _same(tool, answers[(world, n)], _cli(root, folder, *argv))
        default_pack = json.loads(answers[(world, 0)]["pack"])
        assert default_pack["world"]["branch"] == branch, world
    # The searches were world-aware: the token bucket holds on feat-rate-limit only, and says so.
    found = {w: [h["id"] for h in answers[(w, 2)]["hits"]] for w in ("main", "feat-rate-limit", "worktree")}
    assert found == {"main": [], "feat-rate-limit": [TOKEN_BUCKET], "worktree": []}
    assert answers[("main", 2)]["world"]["branch"] == "main"
    # On feat-batch the main fact is superseded by the batch fact, and marked so; on main it is not.
    batch_hits = {h["id"]: h.get("world_mark") for h in answers[("worktree", 3)]["hits"] if h["type"] == "fact"}
    assert batch_hits == {BATCH: None, "fact-alpha-getuser-main": f"superseded here by {BATCH}"}
    # branch names the world from anywhere: from the clone on main, feat-batch's answer.
    assert answers[("main", 5)]["hits"] == answers[("worktree", 3)]["hits"]
    # A time phrase that leaves nothing says so, as am search does.
    assert any("yesterday" in note and "nothing in that range matches" in note
               for note in answers[("feat-rate-limit", 4)]["notes"])


def test_fact_add_from_a_feature_branch_worktree_holds_there_and_on_main_once_merged(demo: tuple[Path, Path]) -> None:
    root, code = demo
    worktree = code.parent / "wt-feature"
    run_git(code, "worktree", "add", "-q", "-b", "feat-cache", str(worktree), "main")
    feature_commit = commit_file(worktree, "src/cache.py", "api: a cache")
    text = "The API caches getUser answers for a minute."

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with _server(root, worktree, name="feature-agent") as client:
            out["add"] = await client.call_tool("fact_add", {"text": text, "topics": ["project-alpha"]})
            # branch alone names a branch the clone does not have: refused, with the argument that allows it ...
            out["refused"] = await client.call_tool("fact_add", {"text": "Elsewhere.", "topics": ["project-alpha"],
                                                                 "branch": "not-fetched-here"})
            # ... which the tool has.
            out["unverified"] = await client.call_tool("fact_add", {"text": "Elsewhere.", "topics": ["project-alpha"],
                                                                    "branch": "not-fetched-here", "unverified": True})
            out["nowhere"] = await client.call_tool("fact_add", {"text": "Holds everywhere.",
                                                                 "topics": ["project-alpha"], "here": False})
        return out

    out = anyio.run(run)
    assert not out["add"].is_error, out["add"].content[0].text
    fact = out["add"].structured_content["records"][0]
    assert (fact["repo"], fact["version"], fact["commit"]) == ("project-alpha", "feat-cache", feature_commit)
    refused = out["refused"]
    assert refused.is_error and "unverified: true" in refused.content[0].text, refused.content[0].text
    assert not out["unverified"].is_error, out["unverified"].content[0].text
    elsewhere = out["unverified"].structured_content["records"][0]
    assert (elsewhere["repo"], elsewhere["version"]) == ("project-alpha", "not-fetched-here")
    nowhere = out["nowhere"].structured_content["records"][0]
    assert "repo" not in nowhere or nowhere["repo"] is None

    def ids(value: Any) -> set[str]:
        """Return every record id a pack's JSON shows (its facts sit under topics, pinned, contested, stale)."""
        if isinstance(value, dict):
            own = {value["id"]} if isinstance(value.get("id"), str) else set()
            return own.union(*(ids(v) for v in value.values()))
        if isinstance(value, list):
            return set().union(*(ids(v) for v in value))
        return set()

    def on_main() -> set[str]:
        return ids(_cli(root, root, "slice", "--repo", "project-alpha", "--branch", "main", "--max-tokens", "0"))

    def on_feature() -> set[str]:
        return ids(_cli(root, worktree, "slice", "--max-tokens", "0"))

    assert fact["id"] in on_feature() and fact["id"] not in on_main()
    assert nowhere["id"] in on_main()
    run_git(code, "merge", "-q", "--no-ff", "-m", "merge feat-cache", "feat-cache")
    assert fact["id"] in on_main()


def test_a_warm_search_in_a_clone_sees_writes_and_new_commits(demo: tuple[Path, Path]) -> None:
    """The server keeps its judgement of the world between searches: a write, or a commit that makes a fact stale,
    is seen by the next search all the same (in-process: the dispatcher of a server started in the clone)."""
    from am.mcp.server import Dispatcher, ServerOptions
    from am.mcp.tools import ToolOutput

    root, code = demo
    dispatcher = Dispatcher(ServerOptions(vault_root=root, folder=code))
    try:
        def hits(query: str) -> dict[str, Any]:
            out = dispatcher.call_sync("search", {"query": query}, "warm-client")
            assert isinstance(out, ToolOutput), out
            assert out.data == {"note": out.data["note"], **_cli(root, code, "search", *query.split())}
            return {h["id"]: h.get("world_mark") for h in out.data["hits"] if h["type"] == "fact"}

        assert hits("zanzibar") == {}
        added = dispatcher.call_sync("fact_add", {"text": "Zanzibar is the staging host.", "topics": ["project-alpha"],
                                                  "paths": ["src/api/users.py"]}, "warm-client")
        assert isinstance(added, ToolOutput), added
        fid = added.data["records"][0]["id"]
        assert hits("zanzibar") == {fid: None}
        (code / "src" / "api").mkdir(parents=True, exist_ok=True)
        (code / "src" / "api" / "users.py").write_text("changed\n")
        run_git(code, "add", "-A")
        run_git(code, "commit", "-q", "-m", "users changed")
        assert (hits("zanzibar")[fid] or "").startswith("stale here: ")
    finally:
        dispatcher.close()
