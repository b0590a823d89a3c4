"""The server's pack memo (am/mcp/memo.py): a kept pack is the pack a fresh slice would render, or it is not kept.

In-process (the tools' dispatcher, no SDK): each test changes one thing a pack
depends on (the vault, by another writer; the clone's branch tip; valid time)
and checks that the next slice through the server equals a fresh `am slice`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import commit_file, run_git

from am.mcp.server import Dispatcher, ServerOptions
from am.mcp.tools import ToolOutput
from am.packs.slice import SliceRequest, render_markdown, slice_vault
from am.registry import Registry
from am.vault import Vault


@pytest.fixture
def dispatcher(alpha: Vault) -> Dispatcher:
    d = Dispatcher(ServerOptions(vault_root=alpha.root, folder=alpha.root))
    yield d  # type: ignore[misc]
    d.close()


def _slice(d: Dispatcher, **args: object) -> str:
    out = d.call_sync("slice", dict(args), "memo-test")
    assert isinstance(out, ToolOutput), out
    return out.text


def _fresh(root: Path, **args: object) -> str:
    with Vault.open(root) as vault:
        return render_markdown(slice_vault(vault, SliceRequest(**args)))  # type: ignore[arg-type]


def test_a_write_by_another_writer_is_seen_at_once(alpha: Vault, dispatcher: Dispatcher) -> None:
    first = _slice(dispatcher)
    assert _slice(dispatcher) == first  # kept
    with Vault.open(alpha.root, actor="cli") as other:
        other.add_fact("Written by another writer.", topics=["project-alpha"])
    after = _slice(dispatcher)
    assert "Written by another writer." in after and after == _fresh(alpha.root)
    out = dispatcher.call_sync("fact_add", {"text": "Written through the server.", "topics": ["project-alpha"]}, "x")
    assert isinstance(out, ToolOutput)
    assert "Written through the server." in _slice(dispatcher)


def test_a_moved_branch_tip_is_a_new_world(alpha: Vault, dispatcher: Dispatcher, tmp_path: Path) -> None:
    code = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code))
    commit_file(code, "a.txt")
    run_git(code, "checkout", "-q", "-b", "feat")
    c2 = commit_file(code, "b.txt")
    run_git(code, "checkout", "-q", "main")
    Registry.load().add_repo("project-alpha", code)
    alpha.add_fact("Feat adds getUsers(ids).", topics=["project-alpha"], repo="project-alpha", branch="feat",
                   commit=c2)
    world = {"repo": "project-alpha", "branch": "main"}
    before = _slice(dispatcher, **world)
    assert "getUsers" not in before
    run_git(code, "merge", "-q", "--ff-only", "feat")
    after = _slice(dispatcher, **world)
    assert "getUsers" in after and after == _fresh(alpha.root, repo="project-alpha", branch="main")


def test_a_deleted_branch_that_landed_a_fact_is_seen(alpha: Vault, dispatcher: Dispatcher, tmp_path: Path) -> None:
    # main squash-merged feat (tip F2): a fact at F1 holds on main while a branch containing F1 is in the clone.
    # Deleting that branch moves no commit of main; the kept pack must not outlive it.
    code = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code))
    commit_file(code, "m0.txt")
    run_git(code, "checkout", "-q", "-b", "feat")
    f1 = commit_file(code, "a.py")
    commit_file(code, "b.py")
    run_git(code, "checkout", "-q", "main")
    run_git(code, "merge", "-q", "--squash", "feat")
    run_git(code, "commit", "-q", "-m", "squash feat")
    Registry.load().add_repo("project-alpha", code)
    alpha.add_fact("Feat adds a.py.", topics=["project-alpha"], repo="project-alpha", commit=f1)
    world = {"repo": "project-alpha", "branch": "main"}
    assert "Feat adds a.py." in _slice(dispatcher, **world)
    run_git(code, "branch", "-q", "-D", "feat")
    after = _slice(dispatcher, **world)
    assert "Feat adds a.py." not in after and after == _fresh(alpha.root, repo="project-alpha", branch="main")


def test_valid_time_passing_a_boundary_drops_the_kept_pack(alpha: Vault, dispatcher: Dispatcher,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    alpha.add_fact("The freeze holds until the release.", topics=["project-alpha"],
                   valid_until="2030-01-01T00:00:00+00:00")
    monkeypatch.setenv("AM_NOW", "2029-12-31T23:00:00+00:00")
    assert "The freeze holds" in _slice(dispatcher)
    monkeypatch.setenv("AM_NOW", "2030-01-01T01:00:00+00:00")
    later = _slice(dispatcher)
    assert "The freeze holds" not in later and later == _fresh(alpha.root)


def test_an_error_names_the_tools_arguments_not_the_command_lines_options(dispatcher: Dispatcher) -> None:
    """An unknown topic told the agent to 'pass --create-topic'; the tool's argument is create_topics."""
    out = dispatcher.call_sync("fact_add", {"text": "About a new topic.", "topics": ["tool-nope"]}, "x")
    assert isinstance(out, str) and out.startswith("Error: unknown topic 'tool-nope'"), out
    assert "pass create_topics: true" in out and "--create-topic" not in out, out
    out = dispatcher.call_sync("fact_supersede", {"old_id": "fact-none", "text": "x", "reason": " "}, "x")
    assert isinstance(out, str) and "--reason" not in out and "argument 'reason'" in out, out
