"""The clerk (`am propose --extractor CMD`) against extractors that misbehave as real LLM wrappers do."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest
from session_samples import CLAUDE_SESSION, claude_lines, write_log
from test_cli import am

from am.vault import Vault

GITHUB_TOKEN = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"  # shaped like a token, not a real one
AWS_KEY = "AKIAQ7R3XW5TZB2KJ4NP"


def _ingested(vault: Vault, tmp_path: Path) -> None:
    from am.sessions.ingest import ingest_file

    ingest_file(vault, write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", claude_lines()))


def _extractor(tmp_path: Path, answer: object, *, before: str = "") -> str:
    path = tmp_path / "extractor.py"
    path.write_text(f"import json, sys\njson.load(sys.stdin)\n{before}\nprint(json.dumps({answer!r}))\n")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def _propose(vault: Vault, command: str, *args: str) -> tuple[int, str, str]:
    return am("--vault", str(vault.root), "propose", CLAUDE_SESSION, "--extractor", command, *args)


def test_a_credential_the_clerk_refuses_is_masked_in_the_report_and_its_commit(alpha, git, tmp_path) -> None:
    """A refused proposal's text, and an extractor's own skipped items, are printed and committed in the report:
    a credential in them is masked there, as the session log's are."""
    _ingested(alpha, tmp_path)
    answer = {"proposals": [{"text": f"The CI token is {GITHUB_TOKEN} for deploys.", "lines": [5]},
                            {"text": f"A line that is not there: {AWS_KEY}.", "lines": [999]}],
              "skipped": [{"text": f"key {AWS_KEY}", "lines": [5], "reason": f"a secret, {GITHUB_TOKEN}"}]}
    code, out, err = _propose(alpha, _extractor(tmp_path, answer), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert [s["reason"][:20] for s in report["skipped"]] == [
        "extractor: a secret,", "it looks like it hol", "cites line 999, whic"]
    assert GITHUB_TOKEN not in out and AWS_KEY not in out and "[redacted:" in out
    history = git("log", "-p", "--format=%B", "--all")
    assert GITHUB_TOKEN not in history and AWS_KEY not in history
    assert "[redacted:" in git("log", "-1", "--format=%B")
