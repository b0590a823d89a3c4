"""MCP fact_add with here: true over uncommitted work marks the fact dirty and says so, as the CLI's --here does
(issue 33.3a through the agents' door)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
from conftest import PYTHON, run_git, subprocess_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from am.demo import materialise_demo


def test_here_over_uncommitted_work_is_dirty_and_warned(tmp_path: Path) -> None:
    vault = materialise_demo(tmp_path / "demo")
    vault.close()
    root, code = tmp_path / "demo", tmp_path / "demo-code"
    (code / "src" / "api" / "limits.py").write_text("# work in progress\n")
    params = StdioServerParameters(command=PYTHON, args=["-m", "am.cli.main", "--vault", str(root), "mcp"],
                                   cwd=str(code), env=subprocess_env(AM_HOME=os.environ["AM_HOME"]))

    async def run() -> dict[str, Any]:
        out = {}
        async with Client(params, client_info=Implementation(name="dirty-agent", version="1.0")) as client:
            out["dirty"] = await client.call_tool("fact_add", {
                "text": "Limits are read per key.", "topics": ["project-alpha"], "here": True,
                "paths": ["src/api/limits.py"]})
            out["clean"] = await client.call_tool("fact_add", {
                "text": "Sessions expire after 30 minutes.", "topics": ["project-alpha"], "here": True,
                "paths": ["src/session/cache.py"]})
        return out

    out = anyio.run(run)
    dirty, clean = out["dirty"], out["clean"]
    assert not dirty.is_error, dirty.content[0].text
    record = dirty.structured_content["records"][0]
    assert record.get("dirty") is True and record["commit"] == run_git(code, "rev-parse", "HEAD").strip()
    assert "uncommitted changes" in dirty.structured_content["warning"] and "warning:" in dirty.content[0].text
    assert not clean.is_error and not clean.structured_content["records"][0].get("dirty")
    assert "warning" not in clean.structured_content
