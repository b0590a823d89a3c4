"""`am setup claude-code` installs Claude Code's SessionEnd hook that keeps each session's log (`am ingest -`).

The hook's shape is Claude Code's (code.claude.com/docs/en/hooks): under
``hooks.SessionEnd``, matcher groups of ``{"type": "command", "command", "timeout"}``
hooks; the command gets the event's JSON on stdin (``session_id``,
``transcript_path``, ``cwd``, ``permission_mode``, ``hook_event_name``,
``reason``). SessionEnd hooks share a 1.5 s budget unless a hook declares a
longer ``timeout`` (seconds, up to 60).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import run_git
from session_samples import CLAUDE_SESSION, claude_lines, write_log

from am.cli.main import cli
from am.vault import Vault

HOOK_COMMAND = {"type": "object", "required": ["type", "command"], "additionalProperties": False,
                "properties": {"type": {"const": "command"}, "command": {"type": "string", "minLength": 1},
                               "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 60},
                               "statusMessage": {"type": "string"}}}
GROUPS = {"type": "array", "items": {"type": "object", "required": ["hooks"], "additionalProperties": False,
                                     "properties": {"matcher": {"type": "string"},
                                                    "hooks": {"type": "array", "minItems": 1, "items": HOOK_COMMAND}}}}
SETTINGS = {"type": "object", "required": ["hooks"],
            "properties": {"hooks": {"type": "object", "required": ["SessionEnd"],
                                     "properties": {"SessionStart": GROUPS, "SessionEnd": GROUPS}}}}
# A settings file as a person leaves it: their own SessionEnd hook, other keys, no final newline.
THEIRS = ('{\n  "model": "opus",\n  "hooks": {\n    "SessionEnd": [\n      {"matcher": "logout", "hooks": '
          '[{"type": "command", "command": "echo bye"}]}\n    ]\n  }\n}')


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
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.chdir(folder)
    return folder


def _setup(vault: Vault, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--vault", str(vault.root), "setup", "claude-code", *args],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _ours(settings: dict[str, object]) -> list[dict[str, object]]:
    groups = settings["hooks"]["SessionEnd"]  # type: ignore[index]
    return [h for g in groups for h in g["hooks"] if " ingest --propose -" in h["command"]]


def test_the_session_end_hook_is_written_in_claude_codes_shape_once_and_removed_byte_for_byte(
        project: Path, vault: Vault) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(THEIRS)
    printed = _setup(vault, "--print")
    assert '"SessionEnd"' in printed and "ingest -" in printed and path.read_text() == THEIRS
    _setup(vault)
    settings = json.loads(path.read_text())
    jsonschema.validate(settings, SETTINGS)
    [hook] = _ours(settings)
    # The registered vault's name; --propose: the clerk reads the session as it is kept (issue 34.4).
    assert shlex.split(hook["command"]) == ["am", "--vault", "test", "ingest", "--propose", "-"]
    assert hook["timeout"] == 60  # past SessionEnd's 1.5 s default budget
    assert settings["model"] == "opus"
    assert any(h["command"] == "echo bye" for g in settings["hooks"]["SessionEnd"] for h in g["hooks"])
    # Ours matches every reason the session ended for (no matcher): clear, logout, prompt_input_exit, other.
    assert [g for g in settings["hooks"]["SessionEnd"] if hook in g["hooks"]] == [{"hooks": [hook]}]
    first = path.read_bytes()
    again = _setup(vault).splitlines()
    assert f"unchanged: {path}  (Claude Code SessionStart hook (slice into context): already set up; Claude Code " \
           "SessionEnd hook (ingest the session log): already set up)" in again
    assert not any(line.startswith("changed:") for line in again)
    assert path.read_bytes() == first  # idempotent: still one hook of ours
    assert len(_ours(json.loads(path.read_text()))) == 1
    assert "would change" not in _setup(vault, "--print")
    _setup(vault, "--remove")
    assert path.read_text() == THEIRS


def test_no_session_end_leaves_it_out_and_remove_takes_out_an_earlier_one(project: Path, vault: Vault) -> None:
    _setup(vault, "--no-session-end")
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert "SessionEnd" not in settings["hooks"] and "SessionStart" in settings["hooks"]
    _setup(vault)  # added on top of an earlier setup
    assert len(_ours(json.loads((project / ".claude" / "settings.json").read_text()))) == 1
    _setup(vault, "--remove")
    assert not (project / ".claude").exists()


def test_running_the_installed_hook_with_a_session_end_payload_ingests_the_transcript(
        project: Path, vault: Vault, tmp_path: Path) -> None:
    _setup(vault)
    [hook] = _ours(json.loads((project / ".claude" / "settings.json").read_text()))
    transcript = write_log(tmp_path / "home" / ".claude" / "projects" / "-home-dev-alpha" / f"{CLAUDE_SESSION}.jsonl",
                           claude_lines())
    payload = {"session_id": CLAUDE_SESSION, "transcript_path": str(transcript), "cwd": str(project),
               "permission_mode": "default", "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "am").exists(), "the am script is installed beside this Python (pip install -e .)"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    before = int(run_git(vault.root, "rev-list", "--count", "HEAD").strip())
    # As Claude Code runs a command hook: through the shell, in the project, the event's JSON on stdin.
    done = subprocess.run(hook["command"], shell=True, cwd=project, env=env, input=json.dumps(payload),
                          capture_output=True, text=True, timeout=hook["timeout"], check=False)
    assert done.returncode == 0, done.stderr
    # Two commits: the log kept, then the clerk's proposals from it (ingest --propose, issue 34.4).
    assert int(run_git(vault.root, "rev-list", "--count", "HEAD").strip()) == before + 2
    assert run_git(vault.root, "log", "-1", "--skip=1", "--format=%s").startswith(f"session: ingest {CLAUDE_SESSION}")
    stored = f"sessions/2026/11/30/{CLAUDE_SESSION}.jsonl"
    assert run_git(vault.root, "show", f"HEAD:{stored}").encode() == transcript.read_bytes()
    # The session ending again (resumed, then ended) with nothing new adds no commit.
    again = subprocess.run(hook["command"], shell=True, cwd=project, env=env, input=json.dumps(payload),
                           capture_output=True, text=True, timeout=hook["timeout"], check=False)
    assert again.returncode == 0, again.stderr
    assert int(run_git(vault.root, "rev-list", "--count", "HEAD").strip()) == before + 2
