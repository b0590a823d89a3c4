"""`am setup CLIENT`: each client's configuration in its documented format, idempotent, removable byte for byte.

The formats are checked with each one's parser (json, tomllib, YAML for the
.mdc frontmatter) and against schemas written from the clients' documents:
Claude Code's .mcp.json and settings.json hooks (code.claude.com/docs/en/mcp,
/hooks; SchemaStore's claude-code-settings.json for the hook entry), Codex's
[mcp_servers.NAME] table (its RawMcpServerConfig: command, args, env, cwd, ...;
unknown keys refused), Cursor's .cursor/mcp.json and rule frontmatter, and
Claude Desktop's claude_desktop_config.json.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from am.cli.main import cli
from am.mcp.blocks import MD_MARKERS, TOML_MARKERS, drop_block, put_block
from am.mcp.jsonedit import insert_entry, remove_entry
from am.mcp.setup import desktop_config_path
from am.vault import Vault

STDIO_SERVER = {
    "type": "object", "required": ["command"],
    "properties": {"type": {"const": "stdio"}, "command": {"type": "string", "minLength": 1},
                   "args": {"type": "array", "items": {"type": "string"}},
                   "env": {"type": "object", "additionalProperties": {"type": "string"}}},
    "additionalProperties": False,
}
MCP_SERVERS_FILE = {"type": "object", "required": ["mcpServers"],
                    "properties": {"mcpServers": {"type": "object", "additionalProperties": STDIO_SERVER}}}
HOOK_COMMAND = {"type": "object", "required": ["type", "command"], "additionalProperties": False,
                "properties": {"type": {"const": "command"}, "command": {"type": "string", "minLength": 1},
                               "timeout": {"type": "number", "exclusiveMinimum": 0}, "async": {"type": "boolean"},
                               "statusMessage": {"type": "string"}}}
SETTINGS = {"type": "object", "properties": {"hooks": {"type": "object", "properties": {"SessionStart": {
    "type": "array", "items": {"type": "object", "required": ["hooks"], "additionalProperties": False,
                               "properties": {"matcher": {"type": "string"},
                                              "hooks": {"type": "array", "items": HOOK_COMMAND}}}}}}}}
CODEX_KEYS = {"command", "args", "env", "env_vars", "cwd", "startup_timeout_sec", "startup_timeout_ms",
              "tool_timeout_sec", "enabled", "required", "enabled_tools", "disabled_tools", "url",
              "bearer_token_env_var", "http_headers", "env_http_headers"}

# Files as people and other tools leave them: other entries, odd spacing, no final newline.
EXISTING = {
    ".mcp.json": '{"mcpServers":{"github":{"command":"npx","args":["-y","@modelcontextprotocol/server-github"]}}}',
    ".claude/settings.json": ('{\n    "permissions": {"allow": ["Bash(npm test)"]},\n    "hooks": {\n'
                              '        "SessionStart": [\n            {"hooks": [{"type": "command", "command": '
                              '"echo hi"}]}\n        ]\n    }\n}\n'),
    "CLAUDE.md": "# Project\n\nUse tabs.",
    "AGENTS.md": "# Agents\n\nRun the tests.\n",
    ".cursor/mcp.json": "{ }\n",
}


@pytest.fixture
def project(tmp_path: Path, vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".git").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    # As the README's install leaves a user: am on PATH, $AM_HOME the default (~/.am), so entries say "am"
    # and carry no env (tests/test_real_claude_code.py covers am only in a venv and another AM_HOME).
    shutil.copytree(os.environ["AM_HOME"], home / ".am")
    monkeypatch.setenv("AM_HOME", str(home / ".am"))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for name in ("CODEX_HOME", "XDG_CONFIG_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(folder)
    return folder


def _setup(vault: Vault, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--vault", str(vault.root), "setup", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _snapshot(*roots: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every folder (None) under the roots."""
    return {str(p): p.read_bytes() if p.is_file() else None
            for root in roots if root.exists() for p in sorted(root.rglob("*"))}


def _check_formats(client: str, project: Path, home: Path) -> None:
    if client == "claude-code":
        data = json.loads((project / ".mcp.json").read_text())
        jsonschema.validate(data, MCP_SERVERS_FILE)
        assert data["mcpServers"]["am"]["args"][-1] == "mcp" and "github" in data["mcpServers"]
        settings = json.loads((project / ".claude" / "settings.json").read_text())
        jsonschema.validate(settings, SETTINGS)
        ours = [m for m in settings["hooks"]["SessionStart"] if "slice" in m["hooks"][0]["command"]]
        assert ours[0]["matcher"] == "startup|resume|clear|compact"
        assert settings["permissions"] == {"allow": ["Bash(npm test)"]}
        assert "## Project memory (am)" in (project / "CLAUDE.md").read_text()
    elif client == "codex":
        config = tomllib.loads((home / ".codex" / "config.toml").read_text())
        server = config["mcp_servers"]["am"]
        assert set(server) <= CODEX_KEYS and isinstance(server["command"], str)
        assert all(isinstance(a, str) for a in server["args"]) and server["args"][-1] == "mcp"
        assert config["model"] == "o4-mini" and config["mcp_servers"]["other"]["command"] == "x"
        assert "fact_supersede" in (project / "AGENTS.md").read_text()
    elif client == "cursor":
        jsonschema.validate(json.loads((project / ".cursor" / "mcp.json").read_text()), MCP_SERVERS_FILE)
        text = (project / ".cursor" / "rules" / "am.mdc").read_text()
        front = yaml.safe_load(text.split("---\n")[1])
        assert isinstance(front["description"], str) and front["alwaysApply"] is True
    else:
        data = json.loads(desktop_config_path(home).read_text())
        jsonschema.validate(data, MCP_SERVERS_FILE)
        assert Path(data["mcpServers"]["am"]["command"]).is_absolute()
        assert data["globalShortcut"] == "Ctrl+Space"


@pytest.mark.parametrize("client", ["claude-code", "codex", "cursor", "claude-desktop"])
@pytest.mark.parametrize("existing", [False, True], ids=["fresh", "existing-files"])
def test_setup_writes_valid_configs_twice_changes_nothing_and_remove_restores_bytes(
        client: str, existing: bool, project: Path, vault: Vault) -> None:
    home = Path.home()
    if existing:
        for name, text in EXISTING.items():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_text(text)
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text('model = "o4-mini"\n\n[mcp_servers.other]\ncommand = "x"')
        desktop = desktop_config_path(home)
        desktop.parent.mkdir(parents=True)
        desktop.write_text('{\n  "globalShortcut": "Ctrl+Space",\n  "mcpServers": {}\n}\n')
    before = _snapshot(project, home)
    printed = _setup(vault, client, "--print")
    assert _snapshot(project, home) == before  # --print changes nothing
    assert "would change" in printed
    _setup(vault, client)
    first = _snapshot(project, home)
    assert first != before
    if existing:
        _check_formats(client, project, home)
    _setup(vault, client)
    assert _snapshot(project, home) == first  # idempotent
    assert "would change" not in _setup(vault, client, "--print")
    _setup(vault, client, "--remove")
    assert _snapshot(project, home) == before  # byte for byte; files and folders setup created are gone
    _setup(vault, client, "--remove")  # nothing left to remove: still fine
    assert _snapshot(project, home) == before


@pytest.mark.parametrize("client", ["claude-code", "cursor", "claude-desktop"])
def test_remove_keeps_a_file_that_was_an_empty_object_before_setup(client: str, project: Path, vault: Vault) -> None:
    """A config that was `{}` (no final newline) before setup is the user's: --remove leaves it, and its folder."""
    home = Path.home()
    name = {"claude-code": project / ".claude" / "settings.json", "cursor": project / ".cursor" / "mcp.json",
            "claude-desktop": desktop_config_path(home)}[client]
    name.parent.mkdir(parents=True, exist_ok=True)
    name.write_text("{}")
    before = _snapshot(project, home)
    _setup(vault, client)
    assert name.read_text() != "{}"
    _setup(vault, client, "--remove")
    assert _snapshot(project, home) == before


@pytest.mark.parametrize("name", ["my server", "a.b", "é", "", "a\nb"])
def test_a_server_name_codex_would_refuse_is_refused_and_nothing_written(name: str, project: Path,
                                                                          vault: Vault) -> None:
    """Codex starts only servers named with letters, digits, '_' and '-' (codex-rs is_valid_mcp_server_name)."""
    home = Path.home()
    before = _snapshot(project, home)
    for client in ("codex", "claude-code", "cursor"):
        result = CliRunner().invoke(cli, ["--vault", str(vault.root), "setup", client, "--name", name])
        assert result.exit_code != 0 and "--name" in str(result.exception), result.output
    assert _snapshot(project, home) == before


def test_fresh_claude_code_setup_is_valid_and_names_the_vault(project: Path, vault: Vault) -> None:
    _setup(vault, "claude-code", "--read-only")
    data = json.loads((project / ".mcp.json").read_text())
    jsonschema.validate(data, MCP_SERVERS_FILE)
    assert data["mcpServers"]["am"] == {"type": "stdio", "command": "am",
                                        "args": ["--vault", "test", "mcp", "--read-only"]}
    jsonschema.validate(json.loads((project / ".claude" / "settings.json").read_text()), SETTINGS)
    assert (project / "CLAUDE.md").read_text().startswith(MD_MARKERS.begin)
    _setup(vault, "claude-code", "--remove")
    assert sorted(p.name for p in project.iterdir()) == [".git"]


def test_a_server_of_the_same_name_that_am_did_not_write_is_refused(project: Path, vault: Vault) -> None:
    (project / ".mcp.json").write_text('{"mcpServers": {"am": {"command": "something-else"}}}\n')
    result = CliRunner().invoke(cli, ["--vault", str(vault.root), "setup", "claude-code"])
    assert result.exit_code != 0 and "already has a server named 'am'" in str(result.exception)
    assert (project / ".mcp.json").read_text() == '{"mcpServers": {"am": {"command": "something-else"}}}\n'
    assert not (project / "CLAUDE.md").exists()


JSON_SAMPLES = [
    "{}", "{}\n", "{ }", '{"a": 1}', '{"a":1}', '{\n  "a": 1\n}\n', '{\n\t"mcpServers": {\n\t\t"x": {}\n\t}\n}',
    '{"mcpServers": {}}', '{"mcpServers": {"x": {"command": "y"}}, "z": [1, {"k": "}"}]}',
    '{"hooks": {"SessionStart": []}}', '{"hooks": {"SessionStart": [ {"hooks": []} ]}}', '{"hooks": {}}',
    '{"s": "a \\" { [ , \\\\"}',
]


@pytest.mark.parametrize("text", JSON_SAMPLES)
def test_json_entries_go_in_and_come_out_byte_for_byte(text: str) -> None:
    for path, key, value, kinds in ((("mcpServers",), "am", {"command": "am", "args": ["mcp"]}, ("object",)),
                                    (("hooks", "SessionStart"), None, {"matcher": "startup", "hooks": []},
                                     ("object", "array"))):
        added = insert_entry(text, path, key, value, kinds=kinds, where="f.json")
        data = json.loads(added)
        node = data
        for part in path:
            node = node[part]
        assert (node[key] if key else node[0]) == value
        assert remove_entry(added, path, key, value, kinds=kinds) == (text if text.strip() else "{}\n")
        assert remove_entry(text if text.strip() else "{}", path, key, value, kinds=kinds) is None


@pytest.mark.parametrize("text", ["", "a", "a\n", "a\n\n", "x = 1\r\n", "<!-- am:end -->\n"])
@pytest.mark.parametrize("markers", [MD_MARKERS, TOML_MARKERS], ids=["md", "toml"])
def test_blocks_go_in_are_replaced_and_come_out_byte_for_byte(text: str, markers: object) -> None:
    once = put_block(text, "first body\n", markers)  # type: ignore[arg-type]
    assert put_block(once, "first body\n", markers) == once  # type: ignore[arg-type]
    twice = put_block(once, "second\nbody\n", markers)  # type: ignore[arg-type]
    assert "second\nbody\n" in twice and "first body" not in twice
    assert drop_block(twice, markers) == text  # type: ignore[arg-type]
    assert drop_block(text, markers) is None  # type: ignore[arg-type]


def test_setup_again_with_other_options_replaces_ams_entry_and_remove_still_restores(project: Path,
                                                                                     vault: Vault) -> None:
    for name, text in EXISTING.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    before = _snapshot(project)
    _setup(vault, "claude-code")
    _setup(vault, "claude-code", "--read-only")
    data = json.loads((project / ".mcp.json").read_text())
    assert data["mcpServers"]["am"]["args"][-1] == "--read-only" and "github" in data["mcpServers"]
    assert "read-only" in (project / "CLAUDE.md").read_text()
    _setup(vault, "claude-code", "--remove")
    assert _snapshot(project) == before


def test_remove_deletes_the_config_folders_setup_made_outside_home(project: Path, vault: Vault, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With $CODEX_HOME or $XDG_CONFIG_HOME outside the home folder, --remove left the folders setup had made
    (codex/, xdg/Claude/) behind, though docs/agents.md says the folders it created are deleted."""
    codex, xdg = tmp_path / "elsewhere" / "codex", tmp_path / "elsewhere" / "xdg"
    monkeypatch.setenv("CODEX_HOME", str(codex))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.setattr("sys.platform", "linux")
    xdg.mkdir(parents=True)  # a config home is there already; $CODEX_HOME need not be
    before = _snapshot(tmp_path / "elsewhere", project)
    for client in ("codex", "claude-desktop"):
        _setup(vault, client)
    assert (codex / "config.toml").is_file() and (xdg / "Claude" / "claude_desktop_config.json").is_file()
    for client in ("codex", "claude-desktop"):
        _setup(vault, client, "--remove")
    assert _snapshot(tmp_path / "elsewhere", project) == before


@pytest.mark.parametrize("client,config", [("claude-code", ".mcp.json"), ("cursor", ".cursor/mcp.json")])
def test_setup_again_with_another_name_renames_the_server_not_doubles_it(client: str, config: str, project: Path,
                                                                         vault: Vault) -> None:
    # Another vault's server (other arguments) is another server, kept beside it.
    (project / config).parent.mkdir(parents=True, exist_ok=True)
    (project / config).write_text('{"mcpServers": {"am-docs": {"command": "am", "args": ["--vault", "docs", "mcp"]}}}\n')
    before = _snapshot(project)
    _setup(vault, client)
    out = _setup(vault, client, "--name", "mem_1")
    servers = json.loads((project / config).read_text())["mcpServers"]
    # Two entries of one vault gave the agent every tool twice, and the instructions named only mem_1.
    assert set(servers) == {"mem_1", "am-docs"} and servers["mem_1"]["args"] == ["--vault", "test", "mcp"], servers
    assert "renamed to 'mem_1'" in out and "trust the 'mem_1' server" in out, out
    assert "\nchanged:" not in "\n" + _setup(vault, client, "--name", "mem_1")  # again: nothing to do
    _setup(vault, client, "--name", "mem_1", "--remove")
    assert _snapshot(project) == before
