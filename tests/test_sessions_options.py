"""`am ingest --log-format` (the log) beside `--format` (the output), and the older `--format claude-code` spelling."""

from __future__ import annotations

import json

from conftest import run_git
from session_samples import write_log
from test_cli import am

# Lines a {ts, role, text} writer made that also carry a sessionId: recognised as Claude Code unless told.
_LINES = [json.dumps({"sessionId": "cc-9", "session": "plain-9", "ts": "2026-11-28T09:00:00Z", "role": "user",
                      "text": "hello"}),
          json.dumps({"sessionId": "cc-9", "session": "plain-9", "ts": "2026-11-28T09:00:05Z", "role": "assistant",
                      "text": "remember: staging is eu-west-1"})]


def _init(vault_path) -> None:
    code, _, err = am("--actor", "tester", "init", str(vault_path), "--name", "v")
    assert code == 0, err


def _count(vault_path) -> int:
    return int(run_git(vault_path, "rev-list", "--count", "HEAD").strip())


def test_log_format_names_the_log_and_format_the_output(vault_path, tmp_path) -> None:
    _init(vault_path)
    src = write_log(tmp_path / "x.jsonl", _LINES)
    code, out, err = am("--vault", str(vault_path), "ingest", str(src), "--log-format", "jsonl", "--format", "json")
    assert code == 0, err
    [session] = json.loads(out)["sessions"]
    assert session["client"] == "jsonl" and session["session"] == "plain-9" and session["action"] == "added"
    assert run_git(vault_path, "show", "HEAD:sessions/2026/11/28/plain-9.jsonl").encode() == src.read_bytes()
    # Unnamed, the same lines are recognised as Claude Code (their sessionId): --log-format is what decided.
    other = write_log(tmp_path / "y.jsonl", _LINES)
    code, out, err = am("--vault", str(vault_path), "ingest", str(other), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["sessions"][0]["client"] == "claude-code"


def test_the_older_format_spelling_still_names_the_log(vault_path, tmp_path) -> None:
    _init(vault_path)
    src = write_log(tmp_path / "x.jsonl", _LINES)
    code, out, err = am("--vault", str(vault_path), "ingest", str(src), "--format", "jsonl", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["sessions"][0]["client"] == "jsonl"
    code, out, err = am("--vault", str(vault_path), "ingest", str(src), "--format", "jsonl")
    assert code == 0, err
    assert out.startswith("unchanged: plain-9")
    # Saying the same log format both ways is allowed.
    code, out, err = am("--vault", str(vault_path), "ingest", str(src), "--format", "jsonl", "--log-format", "jsonl")
    assert code == 0 and out.startswith("unchanged: plain-9"), err


def test_a_log_format_that_reads_none_of_the_lines_is_refused(vault_path, tmp_path) -> None:
    """Forcing claude-code on plain lines stored them as a Claude Code session dated today, its times lost."""
    _init(vault_path)
    src = write_log(tmp_path / "plain-a.jsonl", [json.dumps({"ts": "2026-11-28T09:00:00Z", "role": "user",
                                                             "text": "hi"})])
    before = _count(vault_path)
    code, out, err = am("--vault", str(vault_path), "ingest", str(src), "--log-format", "claude-code")
    assert code == 2 and "is a jsonl log: none of its first lines reads as claude-code" in err, err
    assert "--log-format jsonl" in err and "Traceback" not in err and _count(vault_path) == before
    code, out, err = am("--vault", str(vault_path), "ingest", str(src), "--log-format", "jsonl")
    assert code == 0 and "sessions/2026/11/28/" in out, err


def test_two_log_formats_or_two_outputs_are_refused_and_nothing_is_written(vault_path, tmp_path) -> None:
    _init(vault_path)
    src = write_log(tmp_path / "x.jsonl", _LINES)
    before = _count(vault_path)
    for args in (["--log-format", "codex", "--format", "jsonl"], ["--format", "json", "--format", "text"]):
        code, _, err = am("--vault", str(vault_path), "ingest", str(src), *args)
        assert code != 0 and "--log-format" in err and "Traceback" not in err
    assert _count(vault_path) == before


def test_help_names_log_format() -> None:
    code, out, _ = am("ingest", "--help")
    assert code == 0 and "--log-format [claude-code|codex|jsonl]" in out
