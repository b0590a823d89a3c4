"""The `why` and `fact_confirm` tools: the same library calls as `am why` and `am fact confirm`.

In-process through the server's dispatcher (no SDK); the CLI is the oracle for
`why`, the git CLI for the commit `fact_confirm` makes.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import commit_file, run_git

from am.cli.main import cli
from am.mcp.server import Dispatcher, ServerOptions
from am.mcp.tools import ToolOutput
from am.registry import Registry
from am.vault import Vault


def test_why_is_am_why_and_confirm_is_one_commit_by_the_client(alpha: Vault, tmp_path: Path) -> None:
    code = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code))
    first = commit_file(code, "a.txt")
    Registry.load().add_repo("project-alpha", code)
    alpha.add_fact("getUser takes one id.", topics=["project-alpha"], id="fact-users", repo="project-alpha",
                   branch="main", commit=first, paths=("a.txt",))
    second = commit_file(code, "a.txt", "a changed")
    dispatcher = Dispatcher(ServerOptions(vault_root=alpha.root, folder=code))
    try:
        why = dispatcher.call_sync("why", {"id": "fact-users"}, "why-client")  # the world of the server's clone
        cli_why = CliRunner().invoke(cli, ["--vault", str(alpha.root), "why", "fact-users", "--repo", "project-alpha",
                                           "--branch", "main", "--format", "json"], catch_exceptions=False)
        assert isinstance(why, ToolOutput), why
        assert why.data == json.loads(cli_why.output)
        assert why.data["holds"] is True and why.text.startswith("fact-users in project-alpha @ main")
        before = run_git(alpha.root, "rev-parse", "HEAD").strip()
        confirmed = dispatcher.call_sync("fact_confirm", {"id": "fact-users", "commit": second}, "why-client")
        assert isinstance(confirmed, ToolOutput), confirmed
        assert run_git(alpha.root, "rev-list", f"{before}..HEAD").split() == [confirmed.data["commit"]]
        message = run_git(alpha.root, "log", "-1", "--format=%B")
        assert message.startswith("fact: confirm fact-users at") and "Am-Actor: why-client" in message
        assert confirmed.data["records"][0]["commit"] == second
        missing = dispatcher.call_sync("why", {"id": "fact-nope"}, "why-client")
        assert isinstance(missing, str) and missing.startswith("Error: ")
    finally:
        dispatcher.close()


def test_topic_list_with_an_unknown_kind_is_a_tool_error(alpha: Vault) -> None:
    # It answered an empty list, as if the vault had no topics of that kind.
    from am.records.model import TOPIC_KINDS

    dispatcher = Dispatcher(ServerOptions(vault_root=alpha.root, folder=alpha.root))
    try:
        out = dispatcher.call_sync("topic_list", {"kind": "bogus"}, "kind-client")
        assert isinstance(out, str) and out.startswith("Error: topic_list: 'bogus' is not one of")
        assert all(k in out for k in TOPIC_KINDS)
        listed = dispatcher.call_sync("topic_list", {"kind": "project"}, "kind-client")
        assert isinstance(listed, ToolOutput) and [t["id"] for t in listed.data["topics"]] == ["project-alpha"]
    finally:
        dispatcher.close()


def test_a_fact_added_again_over_mcp_is_told_which_tool_to_call(alpha: Vault, tmp_path: Path) -> None:
    """fact_add's note for a fact already recorded named CLI commands ('am fact confirm ID --commit C'); the agent
    holds tools: docs/agents.md says the note names fact_confirm (and fact_supersede, review_decide)."""
    code = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code))
    first = commit_file(code, "a.txt")
    Registry.load().add_repo("project-alpha", code)
    dispatcher = Dispatcher(ServerOptions(vault_root=alpha.root, folder=code))
    try:
        args = {"text": "getUser takes one id.", "topics": ["project-alpha"], "here": True}
        added = dispatcher.call_sync("fact_add", args, "client")
        assert isinstance(added, ToolOutput) and added.data["created"] is True, added
        fid = added.data["records"][0]["id"]
        again = dispatcher.call_sync("fact_add", args, "client")
        assert isinstance(again, ToolOutput) and again.data["created"] is False, again
        assert again.data["note"] == (f"nothing to do; to change it: fact_supersede with old_id {fid!r}, "
                                      "the new text and a reason")
        second = commit_file(code, "a.txt", "a changed")
        later = dispatcher.call_sync("fact_add", args, "client")
        assert isinstance(later, ToolOutput) and later.data["created"] is False, later
        assert later.data["note"] == (f"to record that it still holds at {second[:10]}: fact_confirm with id "
                                      f"{fid!r} and commit {second!r}")
        assert first != second
    finally:
        dispatcher.close()
