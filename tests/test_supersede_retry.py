"""A retried supersede is answered like a retried fact add: created false, the successor's id, nothing written.

An agent calls `fact_supersede` (OLD, TEXT, reason), the connection drops after the commit, and it
calls again. The second call said "OLD is already superseded" (exit 2, a tool error), so the agent
could not tell that its write had landed. When OLD is superseded by a holding fact that says TEXT
(the duplicate rule of am/writes/duplicates.py: whitespace collapsed, the topics, repo and branch the
new fact would get), the answer is now `created: false`, that fact's id, `commit: null` and a note,
exit 0, nothing written. Another TEXT keeps the error. The git CLI says what was committed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import run_git, subprocess_env

from am.errors import UsageError
from am.mcp.server import Dispatcher, ServerOptions
from am.mcp.tools import TOOLS, ToolOutput
from am.records.model import Fact
from am.vault import Vault


def _am(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(root), *args],
                          capture_output=True, text=True, env=subprocess_env())


def _state(root: Path) -> tuple[str, str, str]:
    return (run_git(root, "rev-parse", "HEAD").strip(), run_git(root, "ls-files").strip(),
            run_git(root, "status", "--porcelain"))


def _setup(vault: Vault) -> None:
    vault.add_topic(title="Alpha service", kind="project", id="project-alpha")
    vault.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"], id="fact-fri")


def test_cli_retried_supersede_answers_created_false_with_the_successor(vault: Vault, vault_path: Path) -> None:
    _setup(vault)
    first = _am(vault_path, "fact", "supersede", "fact-fri", "Alpha deploys on Mondays.", "--reason", "moved",
                "--format", "json")
    assert first.returncode == 0, first.stderr
    new_id = json.loads(first.stdout)["records"][0]["id"]
    before = _state(vault_path)
    again = _am(vault_path, "fact", "supersede", "fact-fri", "Alpha  deploys\non Mondays.", "--reason", "moved",
                "--format", "json")
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout)
    assert out["created"] is False and out["id"] == new_id and out["commit"] is None
    assert new_id in out["note"] and "fact-fri" in out["note"]
    assert [r["id"] for r in out["records"]] == [new_id]
    assert _state(vault_path) == before  # nothing written
    text = _am(vault_path, "fact", "supersede", "fact-fri", "Alpha deploys on Mondays.", "--reason", "moved")
    assert text.returncode == 0, text.stderr
    assert f"already recorded as fact {new_id}" in text.stdout and "nothing written" in text.stdout
    assert _state(vault_path) == before


def test_cli_supersede_of_a_superseded_fact_with_another_text_keeps_its_error(vault: Vault,
                                                                              vault_path: Path) -> None:
    _setup(vault)
    vault.add_topic(title="Beta", kind="project", id="project-beta")
    vault.supersede_fact("fact-fri", "Alpha deploys on Mondays.", reason="moved")
    before = _state(vault_path)
    other = _am(vault_path, "fact", "supersede", "fact-fri", "Alpha deploys on Tuesdays.", "--reason", "moved")
    assert other.returncode == 2 and "already superseded" in other.stderr and "Traceback" not in other.stderr
    # The same text about other topics is another fact: the error too.
    topics = _am(vault_path, "fact", "supersede", "fact-fri", "Alpha deploys on Mondays.", "--reason", "moved",
                 "--topic", "project-beta")
    assert topics.returncode == 2 and "already superseded" in topics.stderr
    assert _state(vault_path) == before


def test_a_successor_that_no_longer_holds_keeps_the_error(vault: Vault, vault_path: Path) -> None:
    _setup(vault)
    new_id = vault.supersede_fact("fact-fri", "Alpha deploys on Mondays.", reason="moved").record.id
    vault.supersede_fact(new_id, "Alpha deploys on Tuesdays.", reason="moved again")
    head = run_git(vault_path, "rev-parse", "HEAD").strip()
    try:
        vault.supersede_fact("fact-fri", "Alpha deploys on Mondays.", reason="moved")
    except UsageError as err:
        assert "already superseded" in str(err)
    else:
        raise AssertionError("a supersede by an ended successor was answered as done")
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == head


def test_mcp_retried_fact_supersede_answers_created_false(vault: Vault, vault_path: Path) -> None:
    _setup(vault)
    args = {"old_id": "fact-fri", "text": "Alpha deploys on Mondays.", "reason": "moved"}
    schema = next(t for t in TOOLS if t.name == "fact_supersede").output_schema
    d = Dispatcher(ServerOptions(vault_root=vault_path, folder=vault_path))
    try:
        first = d.call_sync("fact_supersede", args, "agent")
        assert isinstance(first, ToolOutput), first
        new_id = first.data["records"][0]["id"]
        before = _state(vault_path)
        again = d.call_sync("fact_supersede", args, "agent")
        other = d.call_sync("fact_supersede", {**args, "text": "Alpha deploys on Tuesdays."}, "agent")
    finally:
        d.close()
    assert isinstance(again, ToolOutput), again
    jsonschema.validate(again.data, schema)
    assert again.data["created"] is False and again.data["id"] == new_id and again.data["commit"] is None
    assert "nothing written" in again.text and again.data["note"]
    assert not isinstance(other, ToolOutput) and "already superseded" in str(other)
    assert _state(vault_path) == before


def test_a_retry_that_read_old_before_the_first_call_committed(vault: Vault, vault_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The retry read OLD while the first call was committing: it finds the first call's fact as a twin under
    the statement's lock, loses the race on OLD's file, runs again and answers created false; nothing written."""
    _setup(vault)
    stale = vault.writer.existing_for_update("fact-fri", Fact, "fact")
    new_id = vault.supersede_fact("fact-fri", "Alpha deploys on Mondays.", reason="moved").record.id
    before = _state(vault_path)
    fresh = vault.writer.existing_for_update
    reads: list[str] = []

    def read_once_stale(rid: str, *args: Any) -> Any:
        reads.append(rid)
        return stale if reads == ["fact-fri"] else fresh(rid, *args)

    monkeypatch.setattr(vault.writer, "existing_for_update", read_once_stale)
    again = vault.supersede_fact("fact-fri", "Alpha deploys on Mondays.", reason="moved")
    assert (again.created, again.record.id, again.commit) == (False, new_id, "")
    assert reads.count("fact-fri") == 2  # the stale read, then the rerun's
    assert _state(vault_path) == before
