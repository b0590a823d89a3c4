"""A remote commit whose tree holds a path Git refuses to check out (`.git`, its case and NTFS/HFS spellings, `..`).

Git itself refuses such a tree (``error: invalid path``) and so does am sync:
one error naming the path, the commit and the fix, nothing changed, no
traceback; the vault syncs again once the remote drops the path.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import GIT_IDENTITY, run_git

from am.errors import AmError
from am.sync import sync
from am.vault import Vault

HOSTILE = [".git/config", "notes/.GIT/hooks/post-checkout", "a/.Git", ".git. /x", "sub/git~1/config",
           "x/.g\u200cit/config", "..", "facts/../escape"]


def _mktree(bare: Path, lines: list[str]) -> str:
    proc = subprocess.run(["git", "-C", str(bare), "mktree", "--missing"], input="".join(f"{x}\n" for x in lines),
                          capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def _with_path(bare: Path, tree: str, path: str, blob: str) -> str:
    """``tree`` with a blob at ``path`` (any name, as a hostile client would write it): the new tree's id."""
    head, _, rest = path.partition("/")
    entries = [] if not tree else run_git(bare, "ls-tree", "-z", tree).split("\0")
    kept, sub = [], ""
    for entry in filter(None, entries):
        meta, name = entry.split("\t", 1)
        if name == head:
            sub = meta.split()[2] if rest else ""
        else:
            kept.append(entry)
    new = f"040000 tree {_with_path(bare, sub, rest, blob)}\t{head}" if rest else f"100644 blob {blob}\t{head}"
    return _mktree(bare, [*kept, new])


def push_hostile(bare: Path, path: str) -> str:
    """Commit, straight into the bare remote's main, its tree plus a file at ``path``; return the commit."""
    blob = run_git(bare, "hash-object", "-w", "--stdin", input="[core]\n\thooksPath = /tmp\n").strip()
    tip = run_git(bare, "rev-parse", "main").strip()
    tree = _with_path(bare, run_git(bare, "rev-parse", "main^{tree}").strip(), path, blob)
    commit = run_git(bare, "commit-tree", tree, "-p", tip, "-m", f"add {path}").strip()
    run_git(bare, "update-ref", "refs/heads/main", commit, tip)
    return commit


@pytest.fixture
def remote(alpha: Any, tmp_path: Path) -> tuple[Vault, Path]:
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    vault: Vault = alpha
    assert sync(vault, set_upstream=str(bare)).pushed
    return vault, bare


@pytest.mark.parametrize("path", HOSTILE)
@pytest.mark.parametrize("diverged", [False, True], ids=["fast-forward", "merge"])
def test_sync_refuses_a_remote_tree_git_would_not_check_out(remote: tuple[Vault, Path], path: str,
                                                            diverged: bool) -> None:
    vault, bare = remote
    root = vault.root
    if diverged:
        vault.add_fact("Local fact written before the sync", topics=["project-alpha"])
    commit = push_hostile(bare, path)
    # git agrees the tree is not one to check out (with the protections a Mac or Windows clone has on)
    probe = subprocess.run(["git", "-C", str(root), "fetch", "-q", str(bare), "main"], capture_output=True)
    assert probe.returncode == 0
    assert subprocess.run(["git", "-C", str(root), "-c", "core.protectHFS=true", "-c", "core.protectNTFS=true",
                           "read-tree", "-n", "-m", "-u", "HEAD", commit],
                          capture_output=True, env={**GIT_IDENTITY}).returncode != 0 or path == ".."
    before = run_git(root, "rev-parse", "HEAD").strip()
    status = run_git(root, "status", "--porcelain")
    with pytest.raises(AmError) as caught:
        sync(vault)
    text = f"{caught.value} {caught.value.hint}"
    assert repr(path)[1:-1] in text, text  # the path as repr shows it: an invisible code point made visible
    assert commit[:12] in text, text
    assert "uncommitted" not in text
    assert "git rm" in text
    assert run_git(root, "rev-parse", "HEAD").strip() == before
    assert run_git(root, "status", "--porcelain") == status
    assert not (root / ".git" / "config").read_text().count("hooksPath = /tmp")
    # the remote drops the path: the next sync goes through
    fixed = run_git(bare, "commit-tree", f"{commit}^^{{tree}}".replace("^^", "~1^"), "-p", commit,
                    "-m", "drop it").strip()
    run_git(bare, "update-ref", "refs/heads/main", fixed, commit)
    report = sync(vault)
    assert report.after is not None
    assert run_git(root, "status", "--porcelain") == ""
