"""Codex, the real one (npm, tests/clients/), reading the configuration am wrote: tests/real_clients.py.

`codex mcp list` reads ~/.codex/config.toml: the one entry am writes is listed
and enabled for two projects set up in turn, and, started as Codex starts it
(in the project's folder, with Codex's few variables and the entry's env),
each project's server serves that project's vault. No login is needed.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import anyio
import pytest
from conftest import run_git
from real_clients import User, install_clients


@pytest.fixture(scope="session")
def clients() -> Path:
    return install_clients()


def _project(user: User, tmp_path: Path, name: str) -> Path:
    """A vault of its own (one fact naming the project) and its registered code clone."""
    vault, clone = tmp_path / f"{name}-vault", tmp_path / f"{name}-code"
    user.am("init", str(vault), "--name", f"{name}-vault", cwd=tmp_path)
    run_git(tmp_path, "init", "-q", "-b", "main", str(clone))
    run_git(clone, "commit", "-q", "--allow-empty", "-m", "start")
    user.am("--vault", f"{name}-vault", "repo", "add", name, str(clone), cwd=tmp_path)
    user.am("--vault", f"{name}-vault", "fact", "add", f"The {name} service keeps its queue in Postgres.",
            "--topic", name, "--create-topic", "--repo", name, "--branch", "main", cwd=tmp_path)
    return clone


async def _search(command: str, args: list[str], env: dict[str, str], cwd: Path, query: str) -> str:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))
    async with Client(params) as client:
        result = await client.call_tool("search", {"query": query})
        assert not result.is_error, result.content
        return json.dumps(result.structured_content, ensure_ascii=False)


def test_codex_lists_am_for_two_projects_in_turn_and_each_reaches_its_own_vault(
        clients: Path, tmp_path: Path) -> None:
    user = User(tmp_path, am_on_path=True)  # am only in a venv: tests/test_real_claude_code.py
    projects = [_project(user, tmp_path, name) for name in ("billing", "search")]
    for clone in projects:  # the user sets up Codex in one project, then in the other
        out = user.am(f"--vault={clone.name.removesuffix('-code')}-vault", "setup", "codex", cwd=clone)
        assert "warning" not in out.stderr, out.stderr
    config = tomllib.loads((user.home / ".codex" / "config.toml").read_text(encoding="utf-8"))
    entry = config["mcp_servers"]["am"]
    # As Codex starts it: in the project's folder, with its few variables (HOME, PATH, ...) and the entry's env.
    env = {key: user.env[key] for key in ("HOME", "PATH", "LANG", "USER", "TERM")} | entry.get("env", {})
    for clone, own, other in ((projects[0], "billing", "search"), (projects[1], "search", "billing")):
        # main: the second setup re-pointed the one entry, and billing's agent read search's vault.
        found = anyio.run(_search, entry["command"], entry["args"], env, clone, "queue Postgres")
        assert f"The {own} service" in found and f"The {other} service" not in found, (clone, found)
        listed = user.run(str(clients / "codex"), "mcp", "list", "--json", cwd=clone)
        assert listed.returncode == 0, listed.stderr
        [server] = [s for s in json.loads(listed.stdout) if s["name"] == "am"]
        assert server["enabled"] is True, server
        assert server["transport"]["command"] == "am" and server["transport"]["args"] == ["mcp"], server
        assert server["transport"]["env"] == {"AM_HOME": user.am_home}, server
