"""The `am` program's entry (am/cli/entry.py): a no-op `am sync` answered without click, everything else as before.

Against a real `git daemon` on loopback. The oracle for each answer is the
click command line (`python -m am.cli.main`) run on the same vault.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, run_git, subprocess_env
from gitserver import git_daemon, make_bare

from am.sync import sync
from am.vault import Vault

ENTRY = [PYTHON, "-m", "am.cli.entry"]
CLICK = [PYTHON, "-m", "am.cli.main"]

# Runs the entry in-process, then says which heavy modules the run imported.
PROBE = """
import json, sys
from am.cli import entry
try:
    entry.main(sys.argv[1:])
except SystemExit as done:
    code = done.code
heavy = sorted(m for m in ("click", "pygit2", "am.vault", "am.sync", "typing", "dataclasses", "sqlite3")
               if m in sys.modules)
sys.stderr.write("PROBE " + json.dumps({"code": code, "heavy": heavy}) + "\\n")
"""


@pytest.fixture
def served(alpha: Any, tmp_path: Path) -> Iterator[tuple[Vault, str]]:
    """The test's vault with a `git daemon` remote as its upstream, synced: (vault, URL)."""
    base = tmp_path / "server"
    base.mkdir()
    make_bare(base)
    with git_daemon(base) as url:
        vault: Vault = alpha
        assert sync(vault, set_upstream=f"{url}/vault.git").pushed
        yield vault, f"{url}/vault.git"


def am(command: list[str], *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, env=subprocess_env(**env),
                          check=False)


def probe(*args: str, cwd: Path | None = None, **env: str) -> tuple[str, dict[str, Any]]:
    proc = subprocess.run([PYTHON, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True,
                          env=subprocess_env(**env), check=False)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("PROBE "))
    return proc.stdout, json.loads(line.removeprefix("PROBE "))


def test_a_no_op_sync_prints_what_the_command_line_prints_without_click(served: tuple[Vault, str]) -> None:
    vault, _ = served
    root = str(vault.root)
    expected = am(CLICK, "--vault", root, "sync")
    assert expected.returncode == 0 and expected.stdout.startswith("nothing to merge: up to date with origin/main (")
    for args in (("--vault", root, "sync"), (f"--vault={root}", "sync"), ("--vault", root, "sync", "origin")):
        out, seen = probe(*args)
        assert (out, seen) == (expected.stdout, {"code": 0, "heavy": []}), args
    # Found from the working folder (a subfolder of the vault), as Vault.open finds it.
    out, seen = probe("sync", cwd=vault.root / ".am")
    assert (out, seen["code"], seen["heavy"]) == (expected.stdout, 0, [])


def test_a_sync_with_work_falls_back_and_pushes(served: tuple[Vault, str], tmp_path: Path) -> None:
    vault, url = served
    added = vault.add_fact("Pushed by the entry's fallback.", topics=["project-alpha"]).record.id
    out, seen = probe("--vault", str(vault.root), "sync")
    assert seen["code"] == 0 and "click" in seen["heavy"]
    assert out.startswith("pushed ")
    tip = run_git(vault.root, "rev-parse", "HEAD").strip()
    assert run_git(vault.root, "ls-remote", url, "refs/heads/main").split()[0] == tip
    # The other side moved: the entry's fetch sees it and the full sync fast-forwards.
    other = tmp_path / "other"
    run_git(tmp_path, "clone", "-q", url, str(other))
    assert any(p.endswith(f"{added}.md") for p in run_git(other, "ls-files", "facts").split())
    (other / "notes.txt").write_text("a plain file\n")
    run_git(other, "add", "notes.txt")
    run_git(other, "commit", "-q", "-m", "notes", "--author", "B <b@example.com>")
    run_git(other, "push", "-q", "origin", "main")
    done = am(ENTRY, "--vault", str(vault.root), "sync")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("fast-forward to origin/main")
    assert (vault.root / "notes.txt").read_text() == "a plain file\n"


def test_other_forms_go_to_the_command_line(served: tuple[Vault, str]) -> None:
    vault, _ = served
    root = str(vault.root)
    as_json = am(ENTRY, "--vault", root, "sync", "--format", "json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["action"] == "up-to-date"
    dry = am(ENTRY, "--vault", root, "sync", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("nothing to merge: up to date with origin/main (")
    assert "would push" not in dry.stdout
    helped = am(ENTRY, "sync", "--help")
    assert helped.returncode == 0 and "Example: am sync --set-upstream" in helped.stdout
    version = am(ENTRY, "--version")
    assert version.returncode == 0 and version.stdout.startswith("am, version")
    # A remote the branch does not track: the command line's own answer.
    other = am(ENTRY, "--vault", root, "sync", "nowhere")
    assert (other.returncode, other.stderr) == (am(CLICK, "--vault", root, "sync", "nowhere").returncode,
                                                am(CLICK, "--vault", root, "sync", "nowhere").stderr)
    assert other.returncode != 0


def test_errors_read_as_the_command_lines(served: tuple[Vault, str], tmp_path: Path) -> None:
    vault, _ = served
    root = str(vault.root)
    run_git(vault.root, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    fast, slow = am(ENTRY, "--vault", root, "sync"), am(CLICK, "--vault", root, "sync")
    assert fast.returncode == slow.returncode != 0
    assert fast.stderr == slow.stderr
    assert fast.stderr.startswith("Error: could not fetch from origin")
    outside = am(ENTRY, "sync", cwd=tmp_path)
    assert outside.returncode != 0 and "not inside a vault" in outside.stderr


def test_the_quick_answer_needs_the_remote_the_tracking_ref_and_the_branch_to_agree(
        served: tuple[Vault, str], tmp_path: Path) -> None:
    vault, url = served
    root = str(vault.root)
    tip = run_git(vault.root, "rev-parse", "HEAD").strip()
    # A remote branch whose name ends in refs/heads/main (ls-remote's pattern matches name tails) at another commit:
    # the quick answer reads only refs/heads/main itself.
    other = tmp_path / "other"
    run_git(tmp_path, "clone", "-q", url, str(other))
    run_git(other, "commit", "-q", "--allow-empty", "-m", "elsewhere", "--author", "B <b@example.com>")
    run_git(other, "push", "-q", "origin", "HEAD:refs/heads/x/refs/heads/main")
    out, seen = probe("--vault", root, "sync")
    assert seen == {"code": 0, "heavy": []} and out.startswith(f"nothing to merge: up to date with origin/main ({tip[:10]})")
    # The remote-tracking ref behind the branch (as after a push by other means): the full sync fetches and mends it.
    run_git(vault.root, "update-ref", "refs/remotes/origin/main", run_git(vault.root, "rev-parse", "HEAD~1").strip())
    out, seen = probe("--vault", root, "sync")
    assert seen["code"] == 0 and "click" in seen["heavy"] and out.startswith("nothing to merge")
    assert run_git(vault.root, "rev-parse", "refs/remotes/origin/main").strip() == tip
    out, seen = probe("--vault", root, "sync")
    assert seen == {"code": 0, "heavy": []}
    # The remote moved on: not answered quickly, and the full sync fast-forwards.
    run_git(other, "push", "-q", "origin", "HEAD:refs/heads/main")
    out, seen = probe("--vault", root, "sync")
    assert seen["code"] == 0 and "click" in seen["heavy"] and out.startswith("fast-forward to origin/main")


def test_a_plain_merge_runs_without_click_and_says_what_the_command_line_says(alpha: Any, tmp_path: Path) -> None:
    root = alpha.root
    agent = am(CLICK, "--vault", str(root), "--vault-branch", "agent-x", "fact", "add", "The agent's guess.",
               "--topic", "project-alpha", "--id", "fact-guess")
    assert agent.returncode == 0, agent.stderr
    alpha.add_fact("Meanwhile on main.", topics=["project-alpha"], id="fact-main")
    alpha.close()
    twin = tmp_path / "twin"  # the oracle: the same vault, merged by the click command line
    run_git(tmp_path, "clone", "-q", "--no-local", str(root), str(twin))
    shutil.copytree(root / ".am", twin / ".am", dirs_exist_ok=True)
    run_git(twin, "branch", "-q", "agent-x", "origin/agent-x")
    env = {"AM_NOW": "2026-11-30T10:00:00+00:00", "AM_ACTOR": "merger"}
    out, seen = probe("--vault", str(root), "merge", "agent-x", **env)
    expected = am(CLICK, "--vault", str(twin), "merge", "agent-x", **env)
    assert expected.returncode == 0 and expected.stdout.startswith("merge branch agent-x in commit ")
    assert seen == {"code": 0, "heavy": sorted(["pygit2", "am.vault", "am.sync", "typing", "dataclasses"])}
    assert out.split(" in commit ")[0] == expected.stdout.split(" in commit ")[0]
    assert out.split("\n", 1)[1:] == expected.stdout.split("\n", 1)[1:]
    for repo in (root, twin):
        assert run_git(repo, "log", "-1", "--format=%an%n%B", "HEAD").replace(str(twin), str(root)) == \
               run_git(root, "log", "-1", "--format=%an%n%B", "HEAD")
        assert len(run_git(repo, "rev-list", "--parents", "-n1", "HEAD").split()) == 3
    assert run_git(root, "ls-tree", "-r", "HEAD^{tree}") == run_git(twin, "ls-tree", "-r", "HEAD^{tree}")
    assert run_git(root, "status", "--porcelain") == ""
    # Errors read as the command line's; options go to click.
    fast, slow = am(ENTRY, "--vault", str(root), "merge", "nowhere"), am(CLICK, "--vault", str(root), "merge", "nowhere")
    assert (fast.returncode, fast.stderr) == (slow.returncode, slow.stderr) and fast.returncode != 0
    assert "no branch 'nowhere'" in fast.stderr
    dry = am(ENTRY, "--vault", str(root), "merge", "agent-x", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("nothing to merge: up to date with branch agent-x")
