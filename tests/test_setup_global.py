"""`am setup` for a user-global client, and `am mcp` finding the vault from the folder it starts in.

Codex's configuration is the user's, one file for every project: its am entry
names no vault, and `am mcp` serves the vault of the registered clone it is
started in. An entry that serves another vault (Codex's, as earlier versions
wrote it, or Claude Desktop's) is not re-pointed without --replace. The entry
starts the am that runs `am setup` when `am` is not on PATH, and carries a
non-default AM_HOME in `env`; the hooks' commands do the same. The formats are
checked against the schemas tests/test_mcp_setup.py wrote from each client's
documents (Cursor: command, args, env; Claude Desktop: the same).
The real clients are driven in tests/test_real_*.py.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner, Result
from conftest import PYTHON, run_git, subprocess_env
from test_mcp_setup import MCP_SERVERS_FILE, SETTINGS

from am.cli.main import cli
from am.mcp.blocks import TOML_MARKERS
from am.mcp.setup import desktop_config_path
from am.registry import Registry
from am.vault import Vault

VENV_AM = Path(sys.executable).parent / "am"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of its own, and a PATH without the venv's am (as the README's install leaves it)."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for name in ("CODEX_HOME", "XDG_CONFIG_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "am").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    return folder


def _project(tmp_path: Path, name: str) -> tuple[Vault, Path]:
    """A vault named NAME-vault with one fact, and its registered code clone NAME-code (on main)."""
    vault = Vault.init(tmp_path / f"{name}-vault", name=f"{name}-vault")
    clone = tmp_path / f"{name}-code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(clone))
    run_git(clone, "commit", "-q", "--allow-empty", "-m", "start")
    Registry.load().add_repo(name, clone, vault=f"{name}-vault")
    vault.add_fact(f"The {name} service keeps its queue in Postgres.", topics=[name], create_topics=True)
    return vault, clone


def _setup(monkeypatch: pytest.MonkeyPatch, where: Path, *args: str) -> Result:
    monkeypatch.chdir(where)
    return CliRunner().invoke(cli, [*args])  # an AmError is the result's exception (its message, its code)


def _codex(home: Path) -> dict[str, object]:
    return tomllib.loads((home / ".codex" / "config.toml").read_text(encoding="utf-8"))


def test_codex_gets_one_entry_without_a_vault_and_a_second_project_keeps_it(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (_a, clone_a), (_b, clone_b) = _project(tmp_path, "billing"), _project(tmp_path, "search")
    first = _setup(monkeypatch, clone_a, "--vault", "billing-vault", "setup", "codex")
    assert first.exit_code == 0 and "warning" not in first.stderr, first.output
    entry = _codex(home)["mcp_servers"]["am"]  # type: ignore[index]
    assert entry == {"command": str(VENV_AM), "args": ["mcp"], "env": {"AM_HOME": os.environ["AM_HOME"]}}
    second = _setup(monkeypatch, clone_b, "--vault", "search-vault", "setup", "codex")
    assert second.exit_code == 0, second.output
    assert "config.toml  (Codex MCP server: already set up)" in second.output, second.output
    assert (clone_b / "AGENTS.md").read_text(encoding="utf-8").count("`search-vault`") == 1


def test_a_codex_entry_serving_another_vault_is_not_re_pointed_without_replace(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, "billing")
    _b, clone_b = _project(tmp_path, "search")
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    # What an earlier am setup wrote in the billing project: one entry, naming its vault, for every project.
    old = (f'model = "o4-mini"\n{TOML_MARKERS.begin}\n[mcp_servers.am]\ncommand = "am"\n'
           f'args = ["--vault", "billing-vault", "mcp"]\n{TOML_MARKERS.end}\n')
    config.write_text(old, encoding="utf-8")
    refused = _setup(monkeypatch, clone_b, "--vault", "search-vault", "setup", "codex")
    assert refused.exit_code != 0 and config.read_text(encoding="utf-8") == old
    message = str(refused.exception)
    assert "serves vault 'billing-vault' in every project" in message and "--replace" in message, message
    assert "am --vault billing-vault repo add" in message, message
    assert not (clone_b / "AGENTS.md").exists()
    replaced = _setup(monkeypatch, clone_b, "--vault", "search-vault", "setup", "codex", "--replace")
    assert replaced.exit_code == 0, replaced.output
    assert _codex(home)["mcp_servers"]["am"]["args"] == ["mcp"]  # type: ignore[index]
    assert _codex(home)["model"] == "o4-mini"


def test_claude_desktop_keeps_naming_its_vault_and_refuses_to_re_point_another_vaults_entry(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (_a, clone_a), (_b, clone_b) = _project(tmp_path, "billing"), _project(tmp_path, "search")
    assert _setup(monkeypatch, clone_a, "--vault", "billing-vault", "setup", "claude-desktop").exit_code == 0
    config = desktop_config_path(home)
    before = config.read_bytes()
    data = json.loads(before)
    jsonschema.validate(data, MCP_SERVERS_FILE)
    assert data["mcpServers"]["am"]["args"] == ["--vault", "billing-vault", "mcp"]  # no project folder to find it by
    refused = _setup(monkeypatch, clone_b, "--vault", "search-vault", "setup", "claude-desktop")
    assert refused.exit_code != 0 and config.read_bytes() == before
    assert "serves vault 'billing-vault'" in str(refused.exception), refused.output
    assert "--name am-search-vault" in str(refused.exception) and "--replace" in str(refused.exception)
    both = _setup(monkeypatch, clone_b, "--vault", "search-vault", "setup", "claude-desktop", "--name", "am-search")
    assert both.exit_code == 0, both.output
    assert set(json.loads(config.read_text(encoding="utf-8"))["mcpServers"]) == {"am", "am-search"}


def test_setup_in_a_folder_that_is_no_registered_clone_warns_with_the_command_that_fixes_it(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault, _clone = _project(tmp_path, "billing")
    folder = tmp_path / "Web App"
    run_git(tmp_path, "init", "-q", "-b", "main", str(folder))
    run_git(folder, "commit", "-q", "--allow-empty", "-m", "start")
    done = _setup(monkeypatch, folder, "--vault", "billing-vault", "setup", "codex")
    assert done.exit_code == 0, done.output
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    fix = warning.split("(register it: ")[1].rstrip(")")
    assert "finds no vault there" in warning and fix == f"am --vault billing-vault repo add web-app '{folder}'"
    assert _setup(monkeypatch, folder, *shlex.split(fix)[1:]).exit_code == 0  # the printed command, as typed
    again = _setup(monkeypatch, folder, "--vault", "billing-vault", "setup", "codex")
    assert again.exit_code == 0 and "warning" not in again.stderr, again.output
    assert Registry.load().repo_vaults["web-app"] == vault.name


def test_with_am_off_path_and_another_am_home_each_config_starts_this_am_with_its_env(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _vault, clone = _project(tmp_path, "billing")
    env = {"AM_HOME": os.environ["AM_HOME"]}
    for client in ("cursor", "claude-code", "claude-desktop"):
        done = _setup(monkeypatch, clone, "--vault", "billing-vault", "setup", client)
        assert done.exit_code == 0, done.output
        if client != "claude-desktop":  # whose entry is always absolute: the app's PATH is not the shell's
            assert f"note: am is not on PATH; the configuration starts {VENV_AM}" in done.stderr, done.output
    for path in (clone / ".cursor" / "mcp.json", clone / ".mcp.json", desktop_config_path(home)):
        data = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(data, MCP_SERVERS_FILE)  # the documented formats: command, args, env of strings
        server = data["mcpServers"]["am"]
        assert Path(server["command"]).is_absolute() and Path(server["command"]).resolve() == VENV_AM.resolve()
        assert server["env"] == env, (path, server)
    settings = json.loads((clone / ".claude" / "settings.json").read_text(encoding="utf-8"))
    jsonschema.validate(settings, SETTINGS)
    for event, tail in (("SessionStart", ["slice", "--max-tokens", "4000"]), ("SessionEnd", ["ingest", "--propose", "-"])):
        [hook] = [h for g in settings["hooks"][event] for h in g["hooks"]]
        assert shlex.split(hook["command"]) == [f"AM_HOME={env['AM_HOME']}", str(VENV_AM), "--vault",
                                                "billing-vault", *tail]
    # The hook runs as Claude Code runs it: through /bin/sh, with a PATH that has no am.
    bare = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    [start] = [h for g in settings["hooks"]["SessionStart"] for h in g["hooks"]]
    done_hook = subprocess.run(start["command"], shell=True, cwd=clone, env=bare, capture_output=True, text=True,
                               timeout=120, check=False)
    assert done_hook.returncode == 0 and done_hook.stdout.startswith("# Context pack: billing @ main"), done_hook


def test_the_session_end_hook_of_a_session_without_a_transcript_exits_0_with_one_line(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault, clone = _project(tmp_path, "billing")
    payload = json.dumps({"session_id": "s1", "transcript_path": str(home / "no" / "s1.jsonl"),
                          "hook_event_name": "SessionEnd", "reason": "other"})
    before = run_git(vault.root, "rev-parse", "HEAD")
    monkeypatch.chdir(clone)
    done = CliRunner().invoke(cli, ["--vault", "billing-vault", "ingest", "-"], input=payload)
    assert done.exit_code == 0, done.output
    assert done.output == f"nothing to keep: the session wrote no log ({home / 'no' / 's1.jsonl'} does not exist)\n"
    assert run_git(vault.root, "rev-parse", "HEAD") == before


async def _search(cwd: Path) -> str:
    """Start `am mcp` (no --vault) in ``cwd`` with the SDK's client, as a client configured by Codex's entry does."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=PYTHON, args=["-m", "am.cli.main", "mcp"], cwd=str(cwd),
                                   env=subprocess_env(AM_HOME=os.environ["AM_HOME"]))
    async with Client(params) as client:
        result = await client.call_tool("search", {"query": "queue Postgres"})
        return json.dumps(result.structured_content)


def test_am_mcp_without_a_vault_serves_the_vault_of_the_clone_it_starts_in(tmp_path: Path) -> None:
    import anyio

    _project(tmp_path, "billing")
    _project(tmp_path, "search")
    for own, other in (("billing", "search"), ("search", "billing")):
        found = anyio.run(_search, tmp_path / f"{own}-code")
        assert f"The {own} service" in found and f"The {other} service" not in found, found
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = subprocess.run([PYTHON, "-m", "am.cli.main", "mcp"], cwd=elsewhere, input="",
                             env=subprocess_env(AM_HOME=os.environ["AM_HOME"]), capture_output=True, text=True,
                             timeout=120, check=False)
    assert refused.returncode != 0 and refused.stdout == ""
    assert refused.stderr.startswith(f"Error: am mcp started in {elsewhere.resolve()}, which is no vault and no "
                                     "registered clone of one"), refused.stderr
    assert "am --vault VAULT repo add NAME" in refused.stderr


def test_codex_setup_in_a_clone_of_another_vault_warns_which_vault_its_server_will_serve(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _a, clone_a = _project(tmp_path, "billing")
    _project(tmp_path, "search")
    done = _setup(monkeypatch, clone_a, "--vault", "search-vault", "setup", "codex")
    assert done.exit_code == 0, done.output
    [warning] = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert f"{clone_a} is registered as repo 'billing' of vault 'billing-vault', not of 'search-vault'" in warning
    assert warning.endswith(f"(link it to 'search-vault': am --vault search-vault repo add billing {clone_a})")
    # Claude Code's entry names its vault: the clone's link does not decide what it serves.
    assert "warning" not in _setup(monkeypatch, clone_a, "--vault", "search-vault", "setup", "claude-code").stderr
