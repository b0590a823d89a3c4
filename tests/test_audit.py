"""am log / history / blame / undo, checked against the git CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from am.cli.main import cli
from am.errors import AmError
from am.vault import Vault

from conftest import fsck_clean, run_git


class Ran:
    """A command's exit code (as `am` would exit, AmError included) and its output."""

    def __init__(self, args: list[str]) -> None:
        result = CliRunner().invoke(cli, args)
        err = result.exception
        self.exit_code = err.exit_code if isinstance(err, AmError) else result.exit_code
        self.output = result.stdout + (str(err) if isinstance(err, AmError) else "")


def run(*args: str) -> Ran:
    return Ran(list(args))


def invoke(*args: str, code: int = 0) -> str:
    result = run(*args)
    assert result.exit_code == code, result.output
    return result.output


@pytest.fixture
def superseded(alpha: Vault, vault_path: Path) -> tuple[str, str, str]:
    """A fact by claude-code superseded by codex; return (old id, new id, supersede commit)."""
    with Vault.open(vault_path, actor="claude-code") as claude:
        old = claude.add_fact("Alpha only offers getUser(id).", topics=["project-alpha"], id="fact-alpha-getuser")
    with Vault.open(vault_path, actor="codex") as codex:
        result = codex.supersede_fact(old.record.id, "Alpha offers getUsers(ids) too.", reason="batch API merged",
                                      id="fact-alpha-getusers")
    return "fact-alpha-getuser", "fact-alpha-getusers", result.commit


def test_log_filters_by_trailers(superseded: tuple[str, str, str], vault_path: Path) -> None:
    v = str(vault_path)
    entries = json.loads(invoke("--vault", v, "log", "--format", "json"))
    assert [e["op"] for e in entries][:3] == ["fact.supersede", "fact.add", "topic.add"]
    assert entries[0]["actor"] == "codex" and entries[0]["reason"] == "batch API merged"
    assert entries[0]["commit"] == run_git(vault_path, "rev-parse", "HEAD").strip()
    by_actor = json.loads(invoke("--vault", v, "log", "--actor", "claude-code", "--format", "json"))
    assert [e["records"] for e in by_actor] == [["fact-alpha-getuser"]]
    assert len(json.loads(invoke("--vault", v, "log", "--op", "fact", "--format", "json"))) == 2
    by_record = json.loads(invoke("--vault", v, "log", "--record", "fact-alpha-getuser", "--format", "json"))
    assert [e["op"] for e in by_record] == ["fact.supersede", "fact.add"]
    assert json.loads(invoke("--vault", v, "log", "--since", "2999-01-01", "--format", "json")) == []
    unread = invoke("--vault", v, "log", "--since", "blorp yesterday", code=2)
    assert "cannot read --since 'blorp yesterday' as a time" in unread
    assert unread.count("yesterday") == 2 and unread.count("3 days ago") == 1  # the phrases it reads, listed once
    assert len(json.loads(invoke("--vault", v, "log", "-n", "1", "--format", "json"))) == 1


def test_log_finds_an_mcp_clients_writes_by_the_name_people_know_it_by(alpha: Vault, vault_path: Path) -> None:
    """An MCP client named "Claude Desktop" writes as actor Claude-Desktop (docs/agents.md); asked for by its own
    name, am log said "no commits match" (exit 0), so an audit of that agent found nothing."""
    from am.writes.authorship import actor_for_client

    actor = actor_for_client("Claude Desktop")
    assert actor == "Claude-Desktop"
    with Vault.open(vault_path, actor=actor) as agent:
        agent.add_fact("Written by the desktop app.", topics=["project-alpha"], id="fact-desktop")
    for asked in ("Claude Desktop", "Claude-Desktop"):
        entries = json.loads(invoke("--vault", str(vault_path), "log", "--actor", asked, "--format", "json"))
        assert [e["records"] for e in entries] == [["fact-desktop"]], asked
    assert json.loads(invoke("--vault", str(vault_path), "log", "--actor", "Claude", "--format", "json")) == []


def test_log_shows_hand_commits(alpha: Vault, vault_path: Path) -> None:
    path = vault_path / "topics" / "project-alpha.md"
    path.write_text(path.read_text().replace("Alpha service", "Alpha user service"))
    run_git(vault_path, "commit", "-q", "-am", "retitle by hand")
    entry = json.loads(invoke("--vault", str(vault_path), "log", "-n", "1", "--format", "json"))[0]
    assert entry["manual"] is True and entry["op"] == "manual"
    assert entry["records"] == ["project-alpha"] and entry["actor"] == "Test Person"


def test_log_reads_hand_commits_ids_from_the_files(alpha: Vault, vault_path: Path) -> None:
    """A file with a readable name (topics/Li Wei.md) is logged under its frontmatter id, merges included."""
    v = str(vault_path)
    page = vault_path / "topics" / "Li Wei.md"
    page.write_text("---\ntype: topic\nid: person-li-wei\nkind: person\ntitle: Li Wei\nstatus: active\n"
                    "created: 2026-01-05T10:00:00Z\n---\nWorks on Alpha.\n", encoding="utf-8")
    run_git(vault_path, "add", "-A")
    run_git(vault_path, "commit", "-q", "-m", "add Li Wei by hand")
    run_git(vault_path, "checkout", "-q", "-b", "side")
    page.write_text(page.read_text(encoding="utf-8") + "Speaks Mandarin.\n", encoding="utf-8")
    run_git(vault_path, "commit", "-q", "-am", "edit Li Wei on a branch")
    run_git(vault_path, "checkout", "-q", "main")
    run_git(vault_path, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    run_git(vault_path, "rm", "-q", "topics/Li Wei.md")
    run_git(vault_path, "commit", "-q", "-m", "remove Li Wei by hand")
    logged = json.loads(invoke("--vault", v, "log", "--record", "person-li-wei", "--format", "json"))
    assert [e["subject"] for e in logged] == ["remove Li Wei by hand", "merge side", "edit Li Wei on a branch",
                                             "add Li Wei by hand"]
    assert all(e["records"] == ["person-li-wei"] and e["manual"] for e in logged)
    assert json.loads(invoke("--vault", v, "log", "--record", "Li Wei", "--format", "json")) == []


def test_history_and_chain(superseded: tuple[str, str, str], vault_path: Path) -> None:
    old, new, commit = superseded
    data = json.loads(invoke("--vault", str(vault_path), "history", old, "--format", "json"))
    assert data["supersede_chain"] == [old, new]
    statuses = [(v["op"], v["frontmatter"]["status"], v["actor"]) for v in data["versions"]]
    assert statuses == [("fact.add", "active", "claude-code"), ("fact.supersede", "superseded", "codex")]
    assert data["versions"][1]["commit"] == commit
    assert json.loads(invoke("--vault", str(vault_path), "history", new, "--format", "json"))[
        "supersede_chain"] == [old, new]
    invoke("--vault", str(vault_path), "history", "fact-nowhere", code=4)


def test_blame_names_who_set_each_field(superseded: tuple[str, str, str], vault_path: Path) -> None:
    old, _, commit = superseded
    lines = {b["field"]: b for b in json.loads(invoke("--vault", str(vault_path), "blame", old, "--format", "json"))}
    assert lines["status"]["actor"] == "codex" and lines["status"]["commit"] == commit
    assert lines["superseded_by"]["value"] == "fact-alpha-getusers"
    assert lines["body"]["actor"] == "claude-code" and lines["topics"]["actor"] == "claude-code"


def test_history_and_blame_follow_a_file_not_named_after_its_id(superseded: tuple[str, str, str],
                                                                  vault_path: Path) -> None:
    """A file renamed or moved by hand (Obsidian, git mv) keeps its record: history shows a move, blame keeps setters."""
    old, _, commit = superseded
    (before,) = [p for p in vault_path.glob("facts/**/*.md") if p.stem == old]
    run_git(vault_path, "mv", str(before), str(before.with_name("Alpha lookups.md")))
    run_git(vault_path, "commit", "-q", "-m", "rename by hand")
    (vault_path / "topics" / "alpha").mkdir()
    run_git(vault_path, "mv", "topics/project-alpha.md", "topics/alpha/project-alpha.md")
    run_git(vault_path, "commit", "-q", "-m", "move by hand")
    data = json.loads(invoke("--vault", str(vault_path), "history", old, "--format", "json"))
    assert [(v["op"], v["deleted"]) for v in data["versions"]] == [
        ("fact.add", False), ("fact.supersede", False), ("manual", False)]
    assert data["versions"][-1]["path"] == before.with_name("Alpha lookups.md").relative_to(vault_path).as_posix()
    lines = {b["field"]: b for b in json.loads(invoke("--vault", str(vault_path), "blame", old, "--format", "json"))}
    assert lines["status"]["commit"] == commit and lines["body"]["actor"] == "claude-code"
    moved = json.loads(invoke("--vault", str(vault_path), "history", "project-alpha", "--format", "json"))
    assert [(v["op"], v["path"]) for v in moved["versions"]] == [
        ("topic.add", "topics/project-alpha.md"), ("manual", "topics/alpha/project-alpha.md")]


def test_undo_supersede_makes_the_old_fact_active(superseded: tuple[str, str, str], vault_path: Path,
                                                  git: object) -> None:
    old, new, commit = superseded
    before = run_git(vault_path, "rev-parse", "HEAD").strip()
    out = json.loads(invoke("--vault", str(vault_path), "--actor", "li-wei", "undo", commit[:10], "--format", "json"))
    assert out["reverted"] == commit
    assert run_git(vault_path, "rev-parse", "HEAD~1").strip() == before
    with Vault.open(vault_path) as v:
        fact = v.get_fact(old)
        assert fact.status == "active" and fact.superseded_by is None
        assert v.locate(new) is None
    old_path = run_git(vault_path, "ls-files", f"*{old}.md").strip()
    assert "status: active" in run_git(vault_path, "show", f"HEAD:{old_path}")
    assert run_git(vault_path, "status", "--porcelain").strip() == ""
    message = run_git(vault_path, "log", "-1", "--format=%an%n%B")
    assert message.startswith("li-wei\nundo: fact: supersede")
    assert f"Am-Reverts: {commit}" in message and "Am-Op: undo" in message
    fsck_clean(vault_path)
    again = run("--vault", str(vault_path), "undo", commit)
    assert again.exit_code == 0 and "already undone" in again.output  # done already: not a failure (PAPERCUTS)


def test_undo_refuses_a_conflict_and_changes_nothing(alpha: Vault, vault_path: Path) -> None:
    added = alpha.add_fact("Pool size is 10.", topics=["project-alpha"], id="fact-pool")
    alpha.set_fact_status("fact-pool", "contested", reason="someone saw 20")
    before = run_git(vault_path, "rev-parse", "HEAD").strip()
    result = run("--vault", str(vault_path), "undo", added.commit)
    assert result.exit_code == 9 and "conflicts" in result.output and "fact-pool" in result.output
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == before
    assert run_git(vault_path, "status", "--porcelain").strip() == ""


def test_undo_never_overwrites_an_uncommitted_edit(alpha: Vault, vault_path: Path) -> None:
    first = alpha.add_fact("Pool size is 10.", topics=["project-alpha"], id="fact-pool")
    second = alpha.set_fact_status("fact-pool", "contested", reason="someone saw 20")
    path = vault_path / first.paths[0]
    edited = path.read_text() + "My own note.\n"
    path.write_text(edited)
    before = run_git(vault_path, "rev-parse", "HEAD").strip()
    result = run("--vault", str(vault_path), "undo", second.commit)
    assert result.exit_code == 7, result.output
    assert path.read_text() == edited
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == before


def test_undo_of_an_add_removes_the_file_and_index_entry(alpha: Vault, vault_path: Path) -> None:
    added = alpha.add_fact("Temporary.", topics=["project-alpha"], id="fact-temp")
    invoke("--vault", str(vault_path), "undo", added.commit)
    assert not (vault_path / added.paths[0]).exists()
    assert run_git(vault_path, "ls-files", str(added.paths[0])).strip() == ""
    assert run_git(vault_path, "status", "--porcelain").strip() == ""
    # The record is still in history.
    assert "Temporary." in run_git(vault_path, "show", f"{added.commit}:{added.paths[0]}")


def test_undo_keeps_an_open_cache_in_step(alpha: Vault, vault_path: Path) -> None:
    from am.upkeep.audit import undo

    added = alpha.add_fact("Cached then undone.", topics=["project-alpha"], id="fact-cached")
    assert alpha.locate("fact-cached") is not None
    undo(alpha, added.commit)
    assert alpha.locate("fact-cached") is None
    assert "fact-cached" not in {f.id for f in alpha.list_facts()}
