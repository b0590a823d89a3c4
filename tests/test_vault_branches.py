"""Vault branches: --vault-branch / AM_VAULT_BRANCH keep an agent's writes apart; `am merge BRANCH` folds them in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner
from conftest import run_git

from am.cli.main import cli
from am.upkeep.check import check_vault


def ids_in(root: Path, rev: str) -> set[str]:
    return {Path(p).stem for p in run_git(root, "ls-tree", "-r", "--name-only", rev, "facts").split()}


def test_an_agent_on_a_vault_branch_writes_apart_and_am_merge_folds_it_in(alpha: Any) -> None:
    root = alpha.root
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(root), "--vault-branch", "agent-x", "fact", "add",
                              "The agent's guess.", "--topic", "project-alpha", "--id", "fact-guess"])
    assert out.exit_code == 0, out.output
    out = runner.invoke(cli, ["--vault", str(root), "fact", "show", "fact-guess"],
                        env={"AM_VAULT_BRANCH": "agent-x"})
    assert out.exit_code == 0 and "The agent's guess." in out.output
    assert "fact-guess" in ids_in(root, "agent-x")
    assert "fact-guess" not in ids_in(root, "main")
    assert not (root / "facts").exists() or "fact-guess" not in {p.stem for p in (root / "facts").rglob("*.md")}
    assert run_git(root, "status", "--porcelain").strip() == ""  # the branch's work tree is ignored here
    alpha.add_fact("Meanwhile on main.", topics=["project-alpha"], id="fact-main")
    out = runner.invoke(cli, ["--vault", str(root), "merge", "agent-x", "--dry-run"])
    assert out.exit_code == 0 and "would merge" in out.output
    assert "fact-guess" not in ids_in(root, "main")
    out = runner.invoke(cli, ["--vault", str(root), "merge", "agent-x", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert {"fact-guess", "fact-main"} <= ids_in(root, "main")
    assert run_git(root, "log", "-1", "--format=%B").count("Am-Op: merge.branch") == 1
    assert len(run_git(root, "rev-list", "--parents", "-n1", "HEAD").split()) == 3
    assert (root / run_git(root, "ls-files", "facts").split()[0]).exists()
    assert check_vault(alpha).errors == []


def test_a_vault_branch_name_must_be_an_id(alpha: Any) -> None:
    out = CliRunner().invoke(cli, ["--vault", str(alpha.root), "--vault-branch", "../x", "fact", "list"])
    assert out.exit_code != 0 and "vault branch" in str(out.exception or out.output)


def test_a_deleted_branch_work_tree_is_made_again_from_the_branch(alpha: Any) -> None:
    import shutil

    root = alpha.root
    runner = CliRunner()
    args = ["--vault", str(root), "--vault-branch", "agent-y"]
    out = runner.invoke(cli, [*args, "fact", "add", "Kept on the branch.", "--topic", "project-alpha",
                              "--id", "fact-kept"])
    assert out.exit_code == 0, out.output
    shutil.rmtree(root / ".am" / "cache")  # the cache, and the branch's work tree with it
    out = runner.invoke(cli, [*args, "fact", "show", "fact-kept"])
    assert out.exit_code == 0 and "Kept on the branch." in out.output
    assert "am-agent-y" in run_git(root, "worktree", "list", "--porcelain") or "agent-y" in run_git(
        root, "worktree", "list")


def test_an_uncommitted_edit_in_the_way_of_am_merge_names_am_merge_as_the_way_on(alpha: Any) -> None:
    from am.errors import DirtyFileError
    from am.sync import merge_branch

    root = alpha.root
    fid = alpha.add_fact("Shared fact.", topics=["project-alpha"], id="fact-shared").record.id
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(root), "--vault-branch", "agent-x", "fact", "edit", fid,
                              "Shared fact, as the agent has it."])
    assert out.exit_code == 0, out.output
    rel = run_git(root, "ls-files", "facts").split()[0]
    (root / rel).write_text((root / rel).read_text() + "\nAn unsaved thought.\n")
    head = run_git(root, "rev-parse", "HEAD").strip()
    try:
        merge_branch(alpha, "agent-x")
    except DirtyFileError as err:
        assert rel in str(err) and "am merge agent-x" in (err.hint or "") and "then sync" not in (err.hint or "")
    else:
        raise AssertionError("the merge went over an uncommitted edit")
    assert run_git(root, "rev-parse", "HEAD").strip() == head


def test_a_dry_run_of_a_fast_forward_lists_the_records_the_branch_brings(alpha: Any) -> None:
    import json

    root = alpha.root
    runner = CliRunner()
    args = ["--vault", str(root), "--vault-branch", "agent-z"]
    alpha.add_fact("Known before the branch.", topics=["project-alpha"], id="fact-old")
    for text, fid in (("The agent's first guess.", "fact-one"), ("The agent's second guess.", "fact-two")):
        out = runner.invoke(cli, [*args, "fact", "add", text, "--topic", "project-alpha", "--id", fid])
        assert out.exit_code == 0, out.output
    out = runner.invoke(cli, [*args, "fact", "expire", "fact-one", "--reason", "wrong"])
    assert out.exit_code == 0, out.output
    work = root / ".am" / "cache" / "branches" / "agent-z"  # the branch's work tree: a hand deletion there
    run_git(work, "rm", "-q", run_git(work, "ls-files", "*fact-old.md").strip())
    run_git(work, "commit", "-q", "-m", "drop fact-old")
    head = run_git(root, "rev-parse", "HEAD")
    brought = run_git(root, "diff", "--no-renames", "--name-only", "HEAD", "agent-z").split()  # the oracle
    assert len(brought) == 3
    out = runner.invoke(cli, ["--vault", str(root), "merge", "agent-z", "--dry-run"])
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[0] == "would fast-forward to branch agent-z"
    assert "2 records from the other side would be added or changed" in out.output
    assert "1 record the other side deleted would be deleted" in out.output
    out = runner.invoke(cli, ["--vault", str(root), "merge", "agent-z", "--dry-run", "--format", "json"])
    report = json.loads(out.output)
    assert report["action"] == "fast-forward" and report["changed_files"] == 3
    assert sorted((d["id"], d["path"], d["how"]) for d in report["decisions"]) == sorted(
        (Path(p).stem, p, "deleted" if "fact-old" in p else "union") for p in brought)
    assert run_git(root, "rev-parse", "HEAD") == head  # nothing moved


def test_a_merge_report_counts_a_record_the_other_side_changed_as_changed(alpha: Any) -> None:
    """A record the other side only expired was reported as '1 records from the other side added'."""
    root = alpha.root
    runner = CliRunner()
    alpha.add_fact("Known before the branch.", topics=["project-alpha"], id="fact-old")
    out = runner.invoke(cli, ["--vault", str(root), "--vault-branch", "agent-q", "fact", "expire", "fact-old",
                              "--reason", "wrong"])
    assert out.exit_code == 0, out.output
    alpha.add_fact("Learnt on main meanwhile.", topics=["project-alpha"], id="fact-main")  # a merge, not a fast-forward
    for args, verb in ((["--dry-run"], "would be added or changed"), ([], "added or changed")):
        out = runner.invoke(cli, ["--vault", str(root), "merge", "agent-q", *args])
        assert out.exit_code == 0, out.output
        assert f"  1 record from the other side {verb}\n" in out.output, out.output
    assert alpha.get("fact-old")[1].status == "expired"


def test_one_is_singular_in_a_merge_report(alpha: Any) -> None:
    """A fast-forward of one file said '(..., 1 files)'."""
    from am.cli.sync_text import report_lines
    from am.sync.engine import SyncReport

    lines = report_lines(SyncReport("origin", "main", after="a" * 40, action="fast-forward", changed=1))
    assert lines == [f"fast-forward to origin/main ({'a' * 10}, 1 file)"]
    lines = report_lines(SyncReport("origin", "main", after="a" * 40, action="fast-forward", changed=2))
    assert lines == [f"fast-forward to origin/main ({'a' * 10}, 2 files)"]
