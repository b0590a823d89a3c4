"""`git merge --squash` of a vault branch through am's merge driver and hooks (the real git CLI)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, run_git, subprocess_env

from am.records.codec import parse_record, render_record
from am.records.model import replace
from am.upkeep.check import check_vault
from am.vault import Vault


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The git CLI with am importable by the hooks it runs."""
    return subprocess.run(["git", "-C", str(root), *args], check=False, capture_output=True, text=True,
                          env=subprocess_env())


def _edit(root: Path, rel: str, body: str, message: str) -> None:
    record = parse_record((root / rel).read_text(encoding="utf-8"), rel)
    (root / rel).write_text(render_record(replace(record, body=body)), encoding="utf-8")
    run_git(root, "commit", "-q", "--no-verify", "-am", message)


def _fact_changed_on_both_sides(vault: Vault) -> str:
    """Fact ``fact-cache`` edited on branch ``side`` and on ``main``, am's hooks installed; return its path."""
    root = vault.root
    vault.add_fact("The cache is Redis 6.", topics=["project-alpha"], id="fact-cache")
    rel = next(p for p in run_git(root, "ls-files", "facts").split() if Path(p).stem == "fact-cache")
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "hooks", "install"],
                          check=False, capture_output=True, text=True, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    run_git(root, "switch", "-q", "-c", "side")
    _edit(root, rel, "The cache is Redis 7.\n", "side edits")
    run_git(root, "switch", "-q", "main")
    _edit(root, rel, "The cache is Valkey 8.\n", "main edits")
    return rel


def _both_versions_kept(root: Path) -> None:
    with Vault.open(root) as v:
        facts = [f for f in v.list_facts() if f.id.startswith("fact-cache")]
        assert sorted(f.body for f in facts) == ["The cache is Redis 7.\n", "The cache is Valkey 8.\n"], facts
        assert [f.status for f in facts] == ["contested", "contested"]
        relations = [r for r in v.list_relations() if r.rel == "conflicts-with"]
        assert len(relations) == 1 and {relations[0].from_, relations[0].to} == {f.id for f in facts}
        assert check_vault(v).errors == []
    text = "".join(p.read_text(encoding="utf-8") for p in (root / "facts").rglob("*.md"))
    assert "<<<<<<<" not in text


@pytest.mark.parametrize("command", [("merge", "--squash", "side"), ("pull", "-q", "--no-rebase", "--squash", ".", "side")])
def test_a_squash_merge_commits_both_versions_of_a_fact_changed_on_both_sides(alpha: Any, command: tuple[str]) -> None:
    vault: Vault = alpha
    root = vault.root
    _fact_changed_on_both_sides(vault)
    head = run_git(root, "rev-parse", "HEAD").strip()
    squash = _git(root, *command)
    assert squash.returncode == 0, squash.stdout + squash.stderr
    assert run_git(root, "rev-parse", "HEAD").strip() == head  # a squash commits nothing itself
    done = _git(root, "commit", "-q", "-m", "squash side")
    assert done.returncode == 0, done.stdout + done.stderr
    # Before: the driver kept one side's text and the other side's (Redis 7) was in no commit at all.
    assert run_git(root, "rev-parse", "HEAD~1").strip() == head  # one commit, one parent: a squash
    assert run_git(root, "status", "--porcelain").strip() == ""
    _both_versions_kept(root)


def test_a_squash_with_another_file_in_conflict_keeps_both_versions_once_resolved(alpha: Any) -> None:
    vault: Vault = alpha
    root = vault.root
    (root / "notes.txt").write_text("one\n", encoding="utf-8")
    run_git(root, "add", "notes.txt")
    run_git(root, "commit", "-q", "--no-verify", "-m", "notes")
    _fact_changed_on_both_sides(vault)
    for branch, line in (("side", "side\n"), ("main", "main\n")):
        run_git(root, "switch", "-q", branch)
        (root / "notes.txt").write_text(line, encoding="utf-8")
        run_git(root, "commit", "-q", "--no-verify", "-am", f"{branch} notes")
    squash = _git(root, "merge", "--squash", "side")
    assert squash.returncode != 0 and "notes.txt" in squash.stdout, squash.stdout + squash.stderr
    (root / "notes.txt").write_text("both\n", encoding="utf-8")
    run_git(root, "add", "notes.txt")
    done = _git(root, "commit", "-q", "-m", "squash side")
    assert done.returncode == 0, done.stdout + done.stderr
    assert run_git(root, "status", "--porcelain").strip() == ""
    _both_versions_kept(root)


def test_a_real_merge_still_splits_in_a_merge_commit(alpha: Any) -> None:
    vault: Vault = alpha
    root = vault.root
    _fact_changed_on_both_sides(vault)
    done = _git(root, "merge", "--no-edit", "side")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(run_git(root, "log", "-1", "--format=%P", "HEAD~1").split()) == 2  # the merge, then am's commit
    assert "Am-Op: sync.merge" in run_git(root, "log", "-1", "--format=%B")
    _both_versions_kept(root)


def test_the_squashed_branch_is_found_in_squash_msg_when_git_names_none_in_the_environment(alpha: Any) -> None:
    """The hook takes the squashed commits from GITHEAD_<commit>, else from the SQUASH_MSG git merge --squash wrote."""
    vault: Vault = alpha
    root = vault.root
    _fact_changed_on_both_sides(vault)
    squash = _git(root, "-c", "core.hooksPath=/dev/null", "merge", "--squash", "side")
    assert squash.returncode == 0, squash.stdout + squash.stderr
    hook = subprocess.run([PYTHON, "-m", "am.cli.hookrun", "post-merge", "1"], cwd=root, check=False,
                          capture_output=True, text=True, env=subprocess_env())
    assert hook.returncode == 0 and "staged for the squash commit" in hook.stderr, hook.stderr
    done = _git(root, "commit", "-q", "-m", "squash side")
    assert done.returncode == 0, done.stdout + done.stderr
    _both_versions_kept(root)
