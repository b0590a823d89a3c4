"""Issue 36.14: a `.am/vault.yml` am cannot read, made on another clone, names the commit that made it.

Before: `am sync` fast-forwarded onto it, and from then on every command of this clone, `am sync`
included, stopped at ".am/vault.yml:3: invalid YAML" with no word of where the file came from.
Now sync refuses to take it in, naming the other side's commit, and a vault that has it (by
`git pull`, or an edit) names the commit that last changed it, or the uncommitted edit, and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from am.errors import InvalidRecordError
from am.sync import sync
from am.vault import Vault
from tests.conftest import run_git

BAD = "name: test\nformat: [1\n"


def _other_clone_pushes_bad_settings(a: Any, tmp_path: Path) -> tuple[Path, str]:
    """Share ``a`` through a bare remote; a second clone commits an unreadable vault.yml and pushes it."""
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    assert sync(a, set_upstream=str(bare)).pushed
    b = tmp_path / "b"
    run_git(tmp_path, "clone", "-q", str(bare), str(b))
    (b / ".am" / "vault.yml").write_text(BAD)
    run_git(b, "commit", "-q", "-am", "settings: tidy")
    run_git(b, "push", "-q", "origin", "main")
    return bare, run_git(b, "rev-parse", "HEAD").strip()


def test_sync_does_not_fast_forward_onto_settings_it_cannot_read(alpha: Any, tmp_path: Path) -> None:
    bare, bad = _other_clone_pushes_bad_settings(alpha, tmp_path)
    head = run_git(alpha.root, "rev-parse", "HEAD").strip()
    with pytest.raises(InvalidRecordError) as caught:
        sync(alpha)
    message = f"{caught.value}; {caught.value.hint}"
    assert ".am/vault.yml" in message and "invalid YAML" in message and bad[:10] in message, message
    assert "nothing was changed" in message and "git revert" in message, message
    assert run_git(alpha.root, "rev-parse", "HEAD").strip() == head
    assert run_git(alpha.root, "status", "--porcelain").strip() == ""
    alpha.add_fact("Writes go on while the remote's settings are broken.", topics=["project-alpha"])
    # Merging (this clone has a commit of its own) is refused the same way, naming the same commit.
    with pytest.raises(InvalidRecordError) as merged:
        sync(alpha)
    assert bad[:10] in str(merged.value.hint), merged.value.hint


def test_a_vault_with_unreadable_settings_names_the_commit_that_made_them(alpha: Any, tmp_path: Path) -> None:
    _, bad = _other_clone_pushes_bad_settings(alpha, tmp_path)
    run_git(alpha.root, "pull", "-q", "--ff-only", "origin", "main")  # git pull has no such check
    with pytest.raises(InvalidRecordError) as caught:
        Vault.open(alpha.root)
    assert str(caught.value).startswith(".am/vault.yml:3: invalid YAML"), caught.value
    hint = str(caught.value.hint)
    assert f"commit {bad[:10]}" in hint and "settings: tidy" in hint and f"git revert {bad[:10]}" in hint, hint
    # The way out it names works: the revert, then every command again.
    run_git(alpha.root, "revert", "--no-edit", bad[:10])
    Vault.open(alpha.root).close()


def test_an_uncommitted_edit_is_named_as_such(alpha: Any) -> None:
    (alpha.root / ".am" / "vault.yml").write_text(BAD)
    with pytest.raises(InvalidRecordError) as caught:
        Vault.open(alpha.root)
    assert "not committed" in str(caught.value.hint) and "git checkout -- .am/vault.yml" in str(caught.value.hint)


def test_records_in_a_future_day_folder_brought_by_sync_do_not_stop_writes(alpha: Any, tmp_path: Path) -> None:
    """Issue 36.14's second half, as far as it was reproduced: a well-formed record and a broken one under
    facts/2031/01/01/, fast-forwarded by am sync, leave this clone's writes working (a guard, not a fix)."""
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    assert sync(alpha, set_upstream=str(bare)).pushed
    b = tmp_path / "b"
    run_git(tmp_path, "clone", "-q", str(bare), str(b))
    day = b / "facts" / "2031" / "01" / "01"
    day.mkdir(parents=True)
    (day / "f-20310101-0000-aaaaaa.md").write_text(
        "---\ntype: fact\nid: f-20310101-0000-aaaaaa\ntopics: [project-alpha]\nstatus: active\nconfidence: medium\n"
        "provenance: human\ncreated: 2031-01-01T00:00:00+00:00\n---\nFrom a clock in 2031.\n")
    (day / "f-20310101-0000-bbbbbb.md").write_text("---\ntype: fact\nid: f-20310101-0000-bbbbbb\ntopics: [x\n---\n")
    run_git(b, "add", "-A")
    run_git(b, "commit", "-q", "-m", "facts from 2031")
    run_git(b, "push", "-q", "origin", "main")
    assert sync(alpha).action == "fast-forward"
    written = alpha.add_fact("Written after the 2031 folder came in.", topics=["project-alpha"])
    assert str(written.paths[0]) in run_git(alpha.root, "ls-tree", "-r", "--name-only", "HEAD", "facts").split()
    assert "f-20310101-0000-aaaaaa" in {f.id for f in alpha.list_facts()}
