"""Signing, hooks and identities of am's commits (issue 14, security)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_git

from adversarial._helpers import add_fact, fact_id, head_files, one_line_error
from am.vault import Vault


_IDENTITY_ENV = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")


@pytest.mark.parametrize("source", ["config", "environment"])
def test_a_user_name_with_a_newline_cannot_forge_a_trailer(vault: Vault, monkeypatch: pytest.MonkeyPatch,
                                                           source: str) -> None:
    root = vault.root
    for name in _IDENTITY_ENV:  # the environment comes first, as for git
        monkeypatch.delenv(name, raising=False)
    if source == "config":
        run_git(root, "config", "user.name", "Eve\nAm-Actor: root")
        run_git(root, "config", "user.email", "eve@example.com\nAm-Op: vault.init")
    else:
        for name in _IDENTITY_ENV:
            monkeypatch.setenv(name, "Eve\nAm-Actor: root" if name.endswith("NAME") else "eve@example.com\nAm-Op: x")
    v = Vault.open(root)
    v.add_topic(title="Alpha", kind="project", id="project-alpha")
    actors = run_git(root, "log", "-1", "--format=%(trailers:key=Am-Actor,valueonly)").strip().splitlines()
    assert len(actors) == 1 and ":" not in actors[0] and actors[0].startswith("Eve"), actors
    ops = run_git(root, "log", "-1", "--format=%(trailers:key=Am-Op,valueonly)").strip().splitlines()
    assert ops == ["topic.add"]
    assert "\n" not in run_git(root, "log", "-1", "--format=%an%ae%cn%ce").strip()
    v.close()


def test_a_user_name_with_angle_brackets_is_cleaned_not_a_crash(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    root = vault.root
    for name in _IDENTITY_ENV:
        monkeypatch.delenv(name, raising=False)
    run_git(root, "config", "user.name", "Mallory <m@evil>")
    run_git(root, "config", "user.email", "<m@example.com>")
    v = Vault.open(root)
    v.add_topic(title="Alpha", kind="project", id="project-alpha")
    who = run_git(root, "log", "-1", "--format=%an|%ae|%cn|%ce").strip()
    assert "<" not in who and ">" not in who and "Mallory" in who and "m@example.com" in who, who
    v.close()


def test_a_repository_that_signs_every_commit_is_refused_clearly(alpha: Vault) -> None:
    root = alpha.root
    run_git(root, "config", "commit.gpgsign", "true")
    before = run_git(root, "rev-parse", "HEAD").strip()
    proc = add_fact(root, "Would be unsigned.")
    line = one_line_error(proc)
    assert proc.returncode == 11 and "commit.gpgsign" in line and "am.allowUnsigned" in line, line
    assert run_git(root, "rev-parse", "HEAD").strip() == before
    assert run_git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""
    run_git(root, "config", "am.allowUnsigned", "true")
    fact_id(add_fact(root, "Unsigned, as the person allowed."))


def test_am_runs_no_git_hooks_and_says_so(alpha: Vault) -> None:
    root = alpha.root
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho refused >&2\nexit 1\n")
    hook.chmod(0o755)
    fid = fact_id(add_fact(root, "Committed by am without git's client hooks."))
    assert any(fid in p for p in head_files(root, "facts"))
    doc = (REPO_ROOT / "docs" / "hooks.md").read_text()
    assert "## Which git hooks am's own commits run" in doc
    section = doc.split("## Which git hooks am's own commits run", 1)[1].split("\n## ", 1)[0]
    for name in ("pre-commit", "commit-msg", "post-commit", "reference-transaction"):
        assert name in section, name


def test_docs_say_what_signing_does(tmp_path: Path) -> None:
    decisions = (REPO_ROOT / "docs" / "decisions" / "git.md").read_text()
    assert "commit.gpgsign" in decisions and "am.allowUnsigned" in decisions
