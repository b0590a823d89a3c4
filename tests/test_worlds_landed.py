"""A feature-branch fact holds on main however the branch was merged (am/worlds/landed.py).

Merge commit and fast-forward put the fact's commit in main's history; squash
merge, rebase-and-merge and cherry-pick put an equivalent commit there, told
by its patch id as ``git cherry`` tells it. Each case is built with the git
CLI, which is also the oracle: ``git cherry`` for a commit's own patch, ``git
patch-id --stable`` for a squashed branch's whole diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from am.registry import Registry
from tests.conftest import run_git
from tests.test_slice import am, shown_ids

REPO = "project-alpha"


def write(code: Path, name: str, text: str, message: str | None = None) -> str:
    """Write a file and commit it with the git CLI; return the commit."""
    (code / name).write_text(text)
    run_git(code, "add", name)
    run_git(code, "commit", "-q", "-m", message or f"edit {name}")
    return head(code)


def head(code: Path, rev: str = "HEAD") -> str:
    return run_git(code, "rev-parse", rev).strip()


@pytest.fixture
def code(tmp_path: Path, alpha: Any) -> Path:
    """A registered code repository: main with one commit, and feat forked from it with two, the fact at the second, C."""
    root = tmp_path / "alpha-code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(root))
    write(root, "users.py", "def getUser(id): ...\n", "users")
    Registry.load().add_repo(REPO, root)
    run_git(root, "switch", "-q", "-c", "feat")
    write(root, "users.py", "def getUser(id): ...\ndef _fetch(ids): ...\n", "fetch helper")
    c = write(root, "batch.py", "def getUsers(ids): ...\n", "batch lookup")
    alpha.add_fact("Alpha offers getUsers(ids).", topics=["project-alpha"], id="fact-batch",
                   repo=REPO, branch="feat", commit=c, paths=["batch.py"])
    run_git(root, "switch", "-q", "main")
    return root


def fact_commit(code: Path) -> str:
    return head(code, "feat")


def shown(alpha: Any, branch: str = "main") -> set[str]:
    return shown_ids(am(alpha, "slice", "--repo", REPO, "--branch", branch))


def why(alpha: Any, branch: str = "main") -> dict[str, Any]:
    out = am(alpha, "why", "fact-batch", "--repo", REPO, "--branch", branch, "--format", "json")
    data: dict[str, Any] = json.loads(out)
    return data


def ancestry_step(data: dict[str, Any]) -> str:
    return next(s["evidence"] for s in data["steps"] if s["rule"] == "ancestry")


def main_moves_on(code: Path) -> str:
    """Give main a commit of its own after feat forked, so a merge of feat is no fast-forward."""
    run_git(code, "switch", "-q", "main")
    return write(code, "readme.md", "Alpha\n", "readme")


def git_cherry_equivalent(code: Path, upstream: str, commit: str) -> bool:
    """Ask ``git cherry`` whether ``commit``'s change is already in ``upstream`` ('-' line)."""
    out = run_git(code, "cherry", upstream, commit, f"{commit}~1")
    return out.strip() == f"- {commit}"


def squash_diff_matches(code: Path, base: str, tip: str, squash: str) -> bool:
    """Ask ``git patch-id --stable`` whether ``squash`` carries the whole diff base..tip."""
    whole = run_git(code, "diff", base, tip)
    one = run_git(code, "show", "--format=", squash)
    ids = [run_git(code, "patch-id", "--stable", input=text).split()[:1] for text in (whole, one)]
    return bool(ids[0]) and ids[0] == ids[1]


# ------------------------------------------------------------------ the commit is in the history


def test_merge_commit(alpha: Any, code: Path) -> None:
    main_moves_on(code)
    assert shown(alpha) == set()
    run_git(code, "merge", "-q", "--no-ff", "-m", "merge feat", "feat")
    assert shown(alpha) == {"fact-batch"}
    assert "is an ancestor of" in ancestry_step(why(alpha))


def test_fast_forward(alpha: Any, code: Path) -> None:
    run_git(code, "merge", "-q", "--ff-only", "feat")
    assert shown(alpha) == {"fact-batch"}
    assert "is an ancestor of" in ancestry_step(why(alpha))


# ------------------------------------------------------------------ an equivalent commit landed


def test_squash_merge_of_the_branch_at_the_facts_commit(alpha: Any, code: Path) -> None:
    c = fact_commit(code)
    base = main_moves_on(code)
    run_git(code, "merge", "-q", "--squash", "feat")
    run_git(code, "commit", "-q", "-m", "Batch lookup (#12)")
    squash = head(code)
    assert squash_diff_matches(code, head(code, f"{base}~1"), c, squash)
    assert run_git(code, "merge-base", "--is-ancestor", c, "main", check=False) == ""
    assert shown(alpha) == {"fact-batch"}
    data = why(alpha)
    assert data["holds"] is True
    step = ancestry_step(data)
    assert f"landed on main as {squash[:7]}" in step and "squash merge" in step, step
    text = am(alpha, "why", "fact-batch", "--repo", REPO, "--branch", "main")
    assert f"as {squash[:7]} (same change, as git cherry sees it: squash merge" in text
    # The fact's staleness is judged from where its change landed: a later edit on main makes it stale.
    later = write(code, "batch.py", "def getUsers(ids, *, limit): ...\n", "limit")
    pack = am(alpha, "slice", "--repo", REPO, "--branch", "main")
    assert "Stale here" in pack and later[:10] in pack


def test_squash_merge_after_the_branch_went_on(alpha: Any, code: Path) -> None:
    c = fact_commit(code)
    run_git(code, "switch", "-q", "feat")
    tip = write(code, "batch.py", "def getUsers(ids): ...\ndef countUsers(): ...\n", "count")
    main_moves_on(code)
    base = run_git(code, "merge-base", "main", "feat").strip()
    run_git(code, "merge", "-q", "--squash", "feat")
    run_git(code, "commit", "-q", "-m", "Batch lookup and count (#13)")
    squash = head(code)
    assert squash_diff_matches(code, base, tip, squash)
    assert not squash_diff_matches(code, base, c, squash)  # rule 2 alone would miss it
    assert shown(alpha) == {"fact-batch"}
    step = ancestry_step(why(alpha))
    assert f"as {squash[:7]}" in step and "squash merge of feat, which contains it" in step, step
    # Rule 3 needs the branch: once it is deleted, the clone no longer says the squash contained C.
    run_git(code, "branch", "-q", "-D", "feat")
    assert shown(alpha) == set()


def test_rebase_and_merge(alpha: Any, code: Path) -> None:
    c = fact_commit(code)
    main_moves_on(code)
    run_git(code, "switch", "-q", "-c", "feat-rebased", "feat")
    run_git(code, "rebase", "-q", "main")
    rebased = head(code)
    run_git(code, "switch", "-q", "main")
    run_git(code, "merge", "-q", "--ff-only", "feat-rebased")
    run_git(code, "branch", "-q", "-D", "feat-rebased")
    assert rebased != c and git_cherry_equivalent(code, "main", c)
    assert shown(alpha) == {"fact-batch"}
    step = ancestry_step(why(alpha))
    assert f"as {rebased[:7]}" in step and "cherry-pick, rebase-and-merge" in step, step


def test_cherry_pick(alpha: Any, code: Path) -> None:
    c = fact_commit(code)
    main_moves_on(code)
    run_git(code, "cherry-pick", c)
    picked = head(code)
    assert git_cherry_equivalent(code, "main", c)
    assert shown(alpha) == {"fact-batch"}
    assert f"as {picked[:7]}" in ancestry_step(why(alpha))
    data = json.loads(am(alpha, "slice", "--repo", REPO, "--branch", "main", "--format", "json"))
    assert [f["id"] for t in data["topics"] for f in t["facts"]] == ["fact-batch"]
    assert data["world"]["rule"] == "commit-ancestry"


def test_the_feature_branch_rebased(alpha: Any, code: Path) -> None:
    c = fact_commit(code)
    main_moves_on(code)
    run_git(code, "switch", "-q", "feat")
    run_git(code, "rebase", "-q", "main")
    run_git(code, "switch", "-q", "main")
    assert head(code, "feat") != c and git_cherry_equivalent(code, "feat", c)
    assert shown(alpha, "feat") == {"fact-batch"}
    assert shown(alpha, "main") == set()  # still unmerged
    assert why(alpha, "feat")["holds"] is True


# ------------------------------------------------------------------ no equivalent commit: no match


def test_unmerged_branch_stays_off_main(alpha: Any, code: Path) -> None:
    main_moves_on(code)
    assert shown(alpha) == set()
    assert shown(alpha, "feat") == {"fact-batch"}
    data = why(alpha)
    assert data["holds"] is False and "is not an ancestor of" in ancestry_step(data)


def test_same_message_different_change_does_not_match(alpha: Any, code: Path) -> None:
    c = fact_commit(code)
    main_moves_on(code)
    write(code, "batch.py", "def getUsers(ids, page): ...\n", "batch lookup")
    assert not git_cherry_equivalent(code, "main", c)
    assert shown(alpha) == set()


def test_squash_with_conflict_edits_does_not_match(alpha: Any, code: Path) -> None:
    """A documented limit: a squash whose conflicts were resolved has another patch id."""
    c = fact_commit(code)
    base = run_git(code, "merge-base", "main", "feat").strip()
    run_git(code, "switch", "-q", "main")
    write(code, "batch.py", "def getUsers(ids): raise NotImplementedError\n", "stub")
    run_git(code, "merge", "-q", "--squash", "feat", check=False)  # conflicts in batch.py
    (code / "batch.py").write_text("def getUsers(ids): return [getUser(i) for i in ids]\n")
    run_git(code, "add", "batch.py")
    run_git(code, "commit", "-q", "-m", "Batch lookup (#14)")
    squash = head(code)
    assert not squash_diff_matches(code, base, c, squash)
    assert not git_cherry_equivalent(code, "main", c)
    assert shown(alpha) == set()


def test_landings_are_cached_and_a_corrupt_cache_is_ignored(alpha: Any, code: Path) -> None:
    c = fact_commit(code)
    main_moves_on(code)
    run_git(code, "cherry-pick", c)
    assert shown(alpha) == {"fact-batch"}
    files = list((alpha.root / ".am" / "cache" / "ancestry").rglob("landed.json"))
    assert len(files) == 1 and c in json.loads(files[0].read_text())["found"]
    pids = files[0].with_name("patchids.txt")
    assert c in pids.read_text()
    from am.worlds import ancestry

    for path in (files[0], pids):
        path.write_text("{not json\nxx")
        ancestry._HISTORY_CACHE.clear()
        assert shown(alpha) == {"fact-batch"}
