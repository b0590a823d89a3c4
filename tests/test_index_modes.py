"""What am puts back into Git's index after a killed or overtaken write keeps Git's modes (issue 36 item 3).

A sync killed between its branch move and its index update leaves Git's index
at the old tree. Three places set those entries later: the next am write (from
the in-flight note, am/git/coord/inflight.py), the next sync (``restage_lagging``,
when no note is left) and a write that finds HEAD moved to another branch
(``Staging._restage_to_head``). Each must stage an executable as 100755 and a
symbolic link as 120000, as HEAD's tree has them: staged as 100644, `git status`
shows a mode change and the next `git commit -a` commits it. The git CLI is the
oracle (`git ls-files -s`, `git ls-tree`, `git status`); a `git pull` through
am's merge driver is held to the same.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from conftest import run_git
from gitserver import synced_with_bare
from test_git_squash import _fact_changed_on_both_sides, _git
from test_sync import clone
from test_sync_index_lag import am
from test_sync_modes import index_modes, tree_modes

from am.sync import sync
from am.vault import Vault


def _tools(root: Path, text: str, link: str) -> None:
    tools = root / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "run.sh").write_text(f"#!/bin/sh\necho {text}\n")
    os.chmod(tools / "run.sh", 0o755)
    if os.path.lexists(tools / "latest"):
        os.remove(tools / "latest")
    os.symlink(link, tools / "latest")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "--no-verify", "-m", f"tools {text}")


def _modes_as_head(root: Path) -> None:
    tree, index = tree_modes(root), index_modes(root)
    assert tree["tools/run.sh"] == index["tools/run.sh"] == "100755"
    assert tree["tools/latest"] == index["tools/latest"] == "120000"
    assert run_git(root, "status", "--porcelain", "--untracked-files=no") == ""


@pytest.fixture
def killed(alpha: Any, tmp_path: Path) -> Iterator[tuple[Vault, Vault]]:
    """Clone b's sync of a's new executable and link killed after the branch moved, before Git's index was set."""
    a: Vault = alpha
    _tools(a.root, "one", "run.sh")
    bare = synced_with_bare(a, tmp_path)
    b = clone(str(bare), tmp_path / "b", actor="agent-b")
    _tools(a.root, "two", "other.sh")
    a.add_fact("A learned one.", topics=["project-alpha"], id="fact-a-1")
    sync(a)
    run = am(b.root, "sync", AM_FAILPOINT="sync-moved")
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert "tools/run.sh" in run_git(b.root, "status", "--porcelain")  # the index lags the branch
    yield a, b
    b.close()


def test_the_next_write_sets_a_killed_syncs_executable_and_link_with_their_modes(
        killed: tuple[Vault, Vault]) -> None:
    _, b = killed
    added = am(b.root, "fact", "add", "B learned late.", "--topic", "project-alpha", "--id", "fact-b-late")
    assert added.returncode == 0, added.stderr
    _modes_as_head(b.root)


def test_the_next_sync_sets_a_lagging_executable_and_link_with_their_modes(killed: tuple[Vault, Vault]) -> None:
    _, b = killed
    (b.root / ".git" / "am" / "inflight").unlink()  # only the journal tells: restage_lagging's case
    added = am(b.root, "fact", "add", "B learned late.", "--topic", "project-alpha", "--id", "fact-b-late")
    assert added.returncode == 0, added.stderr
    done = am(b.root, "sync")
    assert done.returncode == 0, done.stderr
    _modes_as_head(b.root)


def test_entries_set_back_to_head_keep_heads_modes(alpha: Any) -> None:
    vault: Vault = alpha
    root = vault.root
    _tools(root, "one", "run.sh")
    store = vault.store.opened()
    other = run_git(root, "hash-object", "-w", "--stdin", input="something else\n").strip()
    for path in ("tools/run.sh", "tools/latest"):  # entries that disagree with HEAD, as after another branch's write
        run_git(root, "update-index", "--cacheinfo", f"100644,{other},{path}")
    store.staging._restage_to_head([PurePosixPath("tools/run.sh"), PurePosixPath("tools/latest")], {})
    _modes_as_head(root)


def test_a_git_merge_through_the_driver_keeps_modes(alpha: Any) -> None:
    vault: Vault = alpha
    root = vault.root
    _tools(root, "one", "run.sh")
    rel = _fact_changed_on_both_sides(vault)  # the driver splits it; post-merge commits the contested copy
    run_git(root, "switch", "-q", "side")
    _tools(root, "two", "other.sh")
    os.chmod(root / rel, 0o755)
    run_git(root, "commit", "-q", "--no-verify", "-am", "the fact made executable")
    run_git(root, "switch", "-q", "main")
    merged = _git(root, "merge", "--no-edit", "side")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "sync: keep both versions" in run_git(root, "log", "-1", "--format=%s")
    _modes_as_head(root)
    assert tree_modes(root)[rel] == index_modes(root)[rel] == "100755"
