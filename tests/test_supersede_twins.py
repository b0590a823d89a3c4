"""A supersede whose new statement another holding fact already says writes no twin.

`am fact add` of a statement the vault holds returns the fact found (docs/decisions/writes.md, "A fact said twice
is recorded once"); `am fact supersede OLD TEXT` wrote a second copy of it, so a pack showed the line twice
and a later supersede ended one copy and left the other holding. Now OLD is superseded by the fact that
already says it: one commit touching those two files, `created: false` and that fact's id (CLI and MCP
`fact_supersede`). The git CLI says what was committed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
from conftest import run_git, subprocess_env

from am.mcp.server import Dispatcher, ServerOptions
from am.mcp.tools import ToolOutput
from am.records.model import Fact
from am.vault import Vault


def _am(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(root), *args],
                          capture_output=True, text=True, env=subprocess_env())


def _facts(root: Path) -> list[str]:
    return sorted(run_git(root, "ls-files", "facts").split())


def _fact(vault: Vault, fid: str) -> Fact:
    path = vault.locate(fid)
    assert path is not None
    record = vault.read_path(path)
    assert isinstance(record, Fact)
    return record


def _setup(vault: Vault) -> None:
    vault.add_topic(title="Alpha service", kind="project", id="project-alpha")
    vault.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"], id="fact-fri")
    vault.add_fact("Alpha deploys on Mondays.", topics=["project-alpha"], id="fact-mon")


def _assert_superseded_by_twin(vault: Vault, root: Path, head: str, files: list[str]) -> None:
    assert _facts(root) == files  # no new fact file
    assert run_git(root, "rev-list", "--count", f"{head}..HEAD").strip() == "1"
    changed = sorted(run_git(root, "show", "--name-only", "--format=", "HEAD").split())
    assert changed == sorted([str(vault.locate("fact-fri")), str(vault.locate("fact-mon"))])
    assert "fact: supersede fact-fri -> fact-mon" in run_git(root, "log", "-1", "--format=%s")
    old, twin = _fact(vault, "fact-fri"), _fact(vault, "fact-mon")
    assert (old.status, old.superseded_by, old.reason) == ("superseded", "fact-mon", "moved to Monday")
    assert (twin.status, twin.supersedes) == ("active", ("fact-fri",))
    check = _am(root, "check", "--strict")
    assert check.returncode == 0, check.stdout + check.stderr


def test_cli_supersede_by_a_statement_already_held_supersedes_by_that_fact(vault: Vault, vault_path: Path) -> None:
    _setup(vault)
    head, files = run_git(vault_path, "rev-parse", "HEAD").strip(), _facts(vault_path)
    done = _am(vault_path, "fact", "supersede", "fact-fri", "Alpha  deploys\non Mondays.", "--reason",
               "moved to Monday", "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["created"] is False and out["id"] == "fact-mon"
    assert out["commit"] == run_git(vault_path, "rev-parse", "HEAD").strip()
    assert "fact-mon already says this" in out["note"] and "fact-fri" in out["note"]
    assert [r["id"] for r in out["records"]] == ["fact-mon", "fact-fri"]
    _assert_superseded_by_twin(vault, vault_path, head, files)
    # Run again (a retry): the old fact is superseded by fact-mon already; answered so, nothing written.
    again = _am(vault_path, "fact", "supersede", "fact-fri", "Alpha deploys on Mondays.", "--reason", "moved")
    assert again.returncode == 0 and "already recorded as fact fact-mon" in again.stdout, again.stderr
    assert "nothing written" in again.stdout
    assert run_git(vault_path, "rev-list", "--count", f"{head}..HEAD").strip() == "1"


def test_cli_text_says_no_new_fact_was_written(vault: Vault, vault_path: Path) -> None:
    _setup(vault)
    done = _am(vault_path, "fact", "supersede", "fact-fri", "Alpha deploys on Mondays.", "--reason", "moved")
    assert done.returncode == 0, done.stderr
    commit = run_git(vault_path, "rev-parse", "HEAD").strip()
    assert f"superseded by it in commit {commit[:10]}, no new fact written" in done.stdout
    assert "already recorded as fact fact-mon" in done.stdout


def test_mcp_fact_supersede_by_a_statement_already_held(vault: Vault, vault_path: Path) -> None:
    _setup(vault)
    head, files = run_git(vault_path, "rev-parse", "HEAD").strip(), _facts(vault_path)
    d = Dispatcher(ServerOptions(vault_root=vault_path, folder=vault_path))
    try:
        out = d.call_sync("fact_supersede", {"old_id": "fact-fri", "text": "Alpha deploys on Mondays.",
                                             "reason": "moved to Monday"}, "agent")
    finally:
        d.close()
    assert isinstance(out, ToolOutput), out
    from am.mcp.tools import TOOLS

    jsonschema.validate(out.data, next(t for t in TOOLS if t.name == "fact_supersede").output_schema)
    assert out.data["created"] is False and out.data["id"] == "fact-mon"
    assert out.data["commit"] == run_git(vault_path, "rev-parse", "HEAD").strip()
    assert "no new fact written" in out.text
    _assert_superseded_by_twin(vault, vault_path, head, files)


def test_a_twin_waiting_for_review_is_named_and_nothing_is_written(vault: Vault, vault_path: Path) -> None:
    _setup(vault)
    vault.set_fact_status("fact-mon", "pending-review")
    head, files = run_git(vault_path, "rev-parse", "HEAD").strip(), _facts(vault_path)
    done = _am(vault_path, "fact", "supersede", "fact-fri", "Alpha deploys on Mondays.", "--reason", "moved")
    assert done.returncode == 2, done.stdout
    assert "fact-mon" in done.stderr and "am review accept fact-mon" in done.stderr and "Traceback" not in done.stderr
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == head and _facts(vault_path) == files
    assert run_git(vault_path, "status", "--porcelain") == ""


def test_other_topics_or_an_ended_twin_still_make_a_new_fact(vault: Vault, vault_path: Path) -> None:
    """The duplicate rule's edges: another topic set is another fact; a superseded or expired one ended."""
    _setup(vault)
    vault.add_topic(title="Beta", kind="project", id="project-beta")
    vault.add_fact("Alpha deploys on Tuesdays.", topics=["project-alpha"], id="fact-tue")
    vault.expire_fact("fact-tue", reason="gone")
    files = _facts(vault_path)
    for old, text, topics in [("fact-fri", "Alpha deploys on Mondays.", ["project-alpha", "project-beta"]),
                              ("fact-mon", "Alpha deploys on Tuesdays.", [])]:
        result = vault.supersede_fact(old, text, reason="r", topics=topics)
        assert result.created and result.record.id not in ("fact-mon", "fact-tue")
    assert len(_facts(vault_path)) == len(files) + 2
