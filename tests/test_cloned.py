"""A vault cloned from a teammate: pushed to a real `git daemon` on loopback, cloned with the git CLI on "another
machine" (its own $AM_HOME, another Git identity), and used with `am` as a subprocess.

The clone is made as people make them: plain `git clone` (no hooks, no merge driver, no registry entry),
`--depth 1` (shallow) and `--filter=blob:none` (partial). The git CLI is the oracle for what the history holds.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, run_git, subprocess_env
from gitserver import git_daemon, make_bare

from am.sync import sync

OTHER = {"GIT_AUTHOR_NAME": "Bo Other", "GIT_AUTHOR_EMAIL": "bo@example.com",
         "GIT_COMMITTER_NAME": "Bo Other", "GIT_COMMITTER_EMAIL": "bo@example.com"}


@pytest.fixture
def served(alpha: Any, tmp_path: Path) -> Iterator[tuple[Any, str, str]]:
    """The teammate's vault with a history, pushed to a `git daemon` that serves partial clones: (vault, URL, fact id).

    The fact is written, edited and contested, so it has three versions, the first two older than the tip.
    """
    base = tmp_path / "server"
    base.mkdir()
    bare = make_bare(base)
    run_git(bare, "config", "uploadpack.allowFilter", "true")
    with git_daemon(base) as url:
        vault = alpha
        fid = vault.add_fact("Alpha caches user profiles.", topics=["project-alpha"]).record.id
        vault.edit_fact(fid, "Alpha caches user profiles for 5 minutes.")
        vault.set_fact_status(fid, "contested", reason="seen otherwise")
        for n in range(3):
            vault.add_fact(f"Later fact number {n}.", topics=["project-alpha"])
        # As am init does: hooks, and .gitattributes committed with merge=am (the driver stays in this clone).
        assert am(vault.root, tmp_path / "teammate-home", "hooks", "install").returncode == 0
        assert "merge=am" in run_git(vault.root, "show", "HEAD:.gitattributes")
        assert sync(vault, set_upstream=f"{url}/vault.git").pushed
        yield vault, f"{url}/vault.git", fid


def clone(url: str, dest: Path, *options: str) -> Path:
    run_git(dest.parent, "clone", "-q", *options, url, str(dest))
    return dest


def am(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run am on the other machine: its own $AM_HOME and Git identity, standing in the clone."""
    return subprocess.run([PYTHON, "-m", "am.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          env=subprocess_env(AM_HOME=str(home), **OTHER), check=False)


def versions_by_git(root: Path, path: str) -> list[str]:
    """The commits that changed ``path``, newest first, as the git CLI sees them in ``root``."""
    return run_git(root, "log", "--format=%H", "--", path).split()



def other_home(tmp_path: Path) -> Path:
    """This machine's AM_HOME: not the teammate's."""
    home = tmp_path / "other-home"
    home.mkdir()
    return home


def edit_on_both_sides(vault: Any, here: Path, home: Path, fid: str) -> None:
    """The fact edited here (committed, not pushed) and differently by the teammate (pushed)."""
    assert am(here, home, "fact", "edit", fid, "Alpha caches user profiles for 10 minutes.").returncode == 0
    vault.edit_fact(fid, "Alpha caches user profiles for 7 minutes.")
    assert sync(vault).pushed

def test_history_and_blame_in_a_partial_clone_fetch_what_git_left_out(served: tuple[Any, str, str],
                                                                       tmp_path: Path) -> None:
    vault, url, fid = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "partial", "--filter=blob:none")
    assert run_git(here, "config", "remote.origin.promisor").strip() == "true"
    path = str(vault.locate(fid))
    expected = versions_by_git(vault.root, path)
    assert len(expected) == 3
    # The older versions' blobs are not in the clone: git left them on the server.
    old = run_git(here, "rev-parse", f"{expected[-1]}:{path}").strip()
    missing = run_git(here, "rev-list", "--objects", "--missing=print", "HEAD").split()
    assert f"?{old}" in missing

    proc = am(here, home, "history", fid, "--format", "json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    got = json.loads(proc.stdout)
    assert [v["commit"] for v in got["versions"]] == list(reversed(expected))
    assert got["versions"][0]["body"].strip() == "Alpha caches user profiles."
    assert got["versions"][-1]["frontmatter"]["status"] == "contested"

    proc = am(here, home, "blame", fid, "--format", "json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    fields = {b["field"]: b["commit"] for b in json.loads(proc.stdout)}
    assert fields["status"] == expected[0] and fields["created"] == expected[-1]


def test_a_pack_since_an_old_one_in_a_partial_clone_reads_the_old_records(served: tuple[Any, str, str],
                                                                          tmp_path: Path) -> None:
    vault, url, fid = served
    home = other_home(tmp_path)
    # The pack the teammate handed over, then a change of the fact pushed after it.
    proc = am(vault.root, tmp_path / "teammate-home", "slice", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    pack_id = json.loads(proc.stdout)["pack_id"]
    later = next(f.id for f in vault.list_facts() if f.body.strip() == "Later fact number 0.")
    vault.edit_fact(later, "Later fact number zero.")  # its version in the pack is one the clone leaves out
    vault.add_fact("Added after the pack.", topics=["project-alpha"])
    assert sync(vault).pushed

    here = clone(url, tmp_path / "partial", "--filter=blob:none")
    proc = am(here, home, "slice", "--since", pack_id)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "Changes: 1 added" in proc.stdout and "Added after the pack." in proc.stdout


def test_a_partial_clone_that_cannot_reach_its_remote_says_so(served: tuple[Any, str, str], tmp_path: Path) -> None:
    _, url, fid = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "partial", "--filter=blob:none")
    run_git(here, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    head_before = run_git(here, "rev-parse", "HEAD")
    proc = am(here, home, "history", fid)
    assert proc.returncode == 11 and "Traceback" not in proc.stderr, proc.stderr
    assert "partial clone (git clone --filter)" in proc.stderr and "'origin'" in proc.stderr
    assert "without --filter" in proc.stderr
    assert run_git(here, "rev-parse", "HEAD") == head_before and not run_git(here, "status", "--porcelain")


def test_history_in_a_shallow_clone_starts_where_the_clone_does_and_says_so(served: tuple[Any, str, str],
                                                                           tmp_path: Path) -> None:
    vault, url, fid = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "shallow", "--depth", "1")
    tip = run_git(here, "rev-parse", "HEAD").strip()
    assert (here / ".git" / "shallow").read_text().split() == [tip]
    path = str(vault.locate(fid))
    # The fact was last written three commits before the tip: git's shallow history holds only the tip.
    assert versions_by_git(here, path) == [tip] and versions_by_git(vault.root, path)[0] != tip

    proc = am(here, home, "history", fid, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert [(v["commit"], v["op"], v["actor"], v["frontmatter"]["status"]) for v in got["versions"]] == [
        (tip, "shallow-base", "(shallow)", "contested")]
    assert "shallow clone" in got["shallow"] and "git fetch --unshallow" in got["shallow"]
    assert "git fetch --unshallow" in proc.stderr

    proc = am(here, home, "blame", fid)
    assert proc.returncode == 0, proc.stderr
    assert f"{tip[:10]}  (shallow)" in proc.stdout and "git fetch --unshallow" in proc.stderr

    proc = am(here, home, "log")
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 1
    assert f"stops at {tip[:10]}" in proc.stderr and "git fetch --unshallow" in proc.stderr

    proc = am(here, home, "undo", tip)
    assert proc.returncode == 2 and "shallow clone" in proc.stderr and "first commit" not in proc.stderr

    # A pack the teammate made before the clone's depth.
    first = versions_by_git(vault.root, path)[-1]
    proc = am(here, home, "slice", "--since", f"p-{first[:12]}-000000")
    assert proc.returncode == 2 and "shallow clone" in proc.stderr and "git fetch --unshallow" in proc.stderr

    # A time before the clone's history: not "the whole vault is new since then".
    for args in (("slice", "--since", "2020-01-01"), ("slice", "--as-of", "2020-01-01"),
                 ("export", "--as-of", "2020-01-01", "-o", str(tmp_path / "out.jsonl"))):
        proc = am(here, home, *args)
        assert proc.returncode == 2 and "this vault is a shallow clone" in proc.stderr, (args, proc.stderr)
        assert "new since then" not in proc.stderr and "git fetch --unshallow" in proc.stderr

    # Deepened, the same commands give the whole history, and no note.
    run_git(here, "fetch", "-q", "--unshallow")
    proc = am(here, home, "history", fid, "--format", "json")
    got = json.loads(proc.stdout)
    assert [v["commit"] for v in got["versions"]] == list(reversed(versions_by_git(vault.root, path)))
    assert got["shallow"] is None and proc.stderr == ""


def test_sync_does_not_publish_conflict_markers_a_plain_git_pull_committed(served: tuple[Any, str, str],
                                                                          tmp_path: Path) -> None:
    vault, url, fid = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "plain")
    assert run_git(here, "config", "--get", "merge.am.driver", check=False) == ""  # a clone carries no config
    edit_on_both_sides(vault, here, home, fid)
    # git pull without the merge driver: Git's line merge leaves markers; with no pre-commit hook they commit.
    pulled = subprocess.run(["git", "-C", str(here), "pull", "--no-rebase", "-q"], capture_output=True, text=True,
                            env=subprocess_env(**OTHER), check=False)
    assert pulled.returncode == 1 and "CONFLICT" in pulled.stdout + pulled.stderr
    run_git(here, "commit", "-q", "-a", "-m", "merge")
    path = str(vault.locate(fid))
    assert "<<<<<<< " in run_git(here, "show", f"HEAD:{path}")
    served_tip = run_git(here, "ls-remote", "origin", "refs/heads/main").split()[0]
    head = run_git(here, "rev-parse", "HEAD")

    proc = am(here, home, "sync")
    assert proc.returncode == 9, proc.stdout + proc.stderr
    assert f"{path}:" in proc.stderr and "conflict markers" in proc.stderr and "am hooks install" in proc.stderr
    assert run_git(here, "ls-remote", "origin", "refs/heads/main").split()[0] == served_tip
    assert run_git(here, "rev-parse", "HEAD") == head and not run_git(here, "status", "--porcelain")

    # Resolved by hand and committed, it syncs.
    (here / path).write_text(run_git(here, "show", f"HEAD^2:{path}"))
    run_git(here, "commit", "-q", "-a", "-m", "resolve")
    proc = am(here, home, "sync")
    assert proc.returncode == 0 and "pushed" in proc.stdout, proc.stderr


def test_a_driverless_pull_left_unfinished_names_the_way_out_and_the_way_works(served: tuple[Any, str, str],
                                                                               tmp_path: Path) -> None:
    vault, url, fid = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "plain")
    edit_on_both_sides(vault, here, home, fid)
    env = subprocess_env(AM_HOME=str(home), **OTHER)
    pulled = subprocess.run(["git", "-C", str(here), "pull", "--no-rebase", "-q"], capture_output=True, text=True,
                            env=env, check=False)
    assert pulled.returncode == 1
    path = str(vault.locate(fid))
    head = run_git(here, "rev-parse", "HEAD")

    proc = am(here, home, "fact", "add", "Something else.", "--topic", "project-alpha")
    assert proc.returncode == 11, proc.stderr
    assert path in proc.stderr and "no am merge driver" in proc.stderr
    assert "git merge --abort, run am hooks install, then git pull again" in proc.stderr
    assert run_git(here, "rev-parse", "HEAD") == head

    # The way it names: abort, install, pull again.
    run_git(here, "merge", "--abort")
    assert am(here, home, "hooks", "install").returncode == 0
    pulled = subprocess.run(["git", "-C", str(here), "pull", "--no-rebase", "-q"], capture_output=True, text=True,
                            env=env, check=False)
    assert pulled.returncode == 0, pulled.stderr
    assert "<<<<<<<" not in (here / path).read_text() and not run_git(here, "status", "--porcelain")
    proc = am(here, home, "check")
    assert proc.returncode == 0, proc.stdout
    listed = am(here, home, "fact", "list", "--status", "contested").stdout
    assert "10 minutes" in listed and "7 minutes" in listed

    # With the driver registered, an unfinished merge is refused as before: finish or abort it.
    (here / ".git" / "MERGE_HEAD").write_text(head)
    proc = am(here, home, "fact", "add", "Something else.", "--topic", "project-alpha")
    assert proc.returncode == 11 and "finish it with git commit" in proc.stderr and "merge driver" not in proc.stderr


def test_registering_a_plain_clone_names_what_it_lacks_and_whose_name_the_project_files_use(
        served: tuple[Any, str, str], tmp_path: Path) -> None:
    _, url, _ = served
    home = other_home(tmp_path)
    first = clone(url, tmp_path / "first")
    proc = am(tmp_path, home, "vault", "add", "team", str(first))
    assert proc.returncode == 0, proc.stderr
    assert "lacks am's merge driver and git hooks" in proc.stderr and "am --vault team hooks install" in proc.stderr
    # The vault calls itself "test": the name the committed .mcp.json and hooks pass to am --vault.
    assert f"register this clone under it as well: am vault add test {first.resolve()}" in proc.stderr
    assert am(tmp_path, home, "vault", "add", "test", str(first)).returncode == 0

    second = clone(url, tmp_path / "second")
    assert am(second, home, "hooks", "install").returncode == 0
    proc = am(tmp_path, home, "vault", "add", "second", str(second))
    assert proc.returncode == 0 and "lacks" not in proc.stderr, proc.stderr
    assert f"on this machine 'test' is another folder ({first.resolve()})" in proc.stderr
    # Which clone am --vault test reaches: the first, as the note says.
    shown = am(tmp_path, home, "--vault", "test", "vault", "list").stdout
    assert f"test                     {first.resolve()}" in shown


def test_a_sync_in_a_plain_clone_says_a_git_pull_would_leave_markers(served: tuple[Any, str, str],
                                                                      tmp_path: Path) -> None:
    vault, url, _ = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "plain")
    vault.add_fact("Brought by the sync.", topics=["project-alpha"])
    assert sync(vault).pushed
    proc = am(here, home, "sync")
    assert proc.returncode == 0 and "fast-forward" in proc.stdout, proc.stderr
    assert "no am merge driver" in proc.stderr and "am hooks install" in proc.stderr
    proc = am(here, home, "sync")  # nothing to do: nothing more said
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr

    assert am(here, home, "hooks", "install").returncode == 0
    vault.add_fact("Brought by the second sync.", topics=["project-alpha"])
    assert sync(vault).pushed
    proc = am(here, home, "sync")
    assert proc.returncode == 0 and "fast-forward" in proc.stdout and "merge driver" not in proc.stderr, proc.stderr


def test_a_code_clone_registered_at_a_path_this_machine_lacks_is_named_with_the_fix(
        served: tuple[Any, str, str], tmp_path: Path) -> None:
    _, url, _ = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "plain")
    code = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code))
    (code / "a.py").write_text("x = 1\n")
    run_git(code, "add", "a.py")
    run_git(code, "commit", "-q", "-m", "c1")
    assert am(here, home, "repo", "add", "alpha", str(code)).returncode == 0
    assert am(here, home, "fact", "add", "Alpha reads a.py.", "--topic", "project-alpha", "--repo", "alpha",
              "--branch", "main").returncode == 0
    # The registry names a folder this machine does not have (copied from the teammate's, or the clone moved).
    code.rename(tmp_path / "elsewhere")
    fix = "register this machine's clone: am repo add alpha PATH --replace"

    proc = am(here, home, "slice", "--repo", "alpha", "--branch", "main")
    assert proc.returncode == 0 and f"registered at {code} is not on this machine ({fix})" in proc.stdout
    proc = am(here, home, "stale", "--repo", "alpha", "--branch", "main")
    assert "is not on this machine" in proc.stdout and fix in proc.stdout
    proc = am(here, home, "check")
    assert "am repo add alpha PATH --replace" in proc.stdout
    proc = am(here, home, "fact", "add", "Alpha caches.", "--topic", "project-alpha", "--repo", "alpha",
              "--branch", "main")
    assert proc.returncode == 13 and proc.stderr.count("--replace") == 1 and "--unverified" in proc.stderr
    # The fix it names works.
    assert am(here, home, "repo", "add", "alpha", str(tmp_path / "elsewhere"), "--replace").returncode == 0
    proc = am(here, home, "slice", "--repo", "alpha", "--branch", "main")
    assert "not on this machine" not in proc.stdout and "commit ancestry" in proc.stdout


def test_a_sync_that_brings_conflict_markers_a_plain_git_push_published_says_so(served: tuple[Any, str, str],
                                                                                tmp_path: Path) -> None:
    vault, url, fid = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "plain")
    edit_on_both_sides(vault, here, home, fid)
    env = subprocess_env(**OTHER)
    assert subprocess.run(["git", "-C", str(here), "pull", "--no-rebase", "-q"], capture_output=True,
                          env=env, check=False).returncode == 1
    run_git(here, "commit", "-q", "-a", "-m", "merge")
    run_git(here, "push", "-q", "origin", "main")  # plain git: nothing of am's on the way
    path = str(vault.locate(fid))

    teammate = tmp_path / "teammate-home"
    proc = am(vault.root, teammate, "sync", "--dry-run")
    assert proc.returncode == 0 and f"would bring Git's conflict markers in records ({path}:" in proc.stdout
    proc = am(vault.root, teammate, "sync", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["action"] == "fast-forward" and [m.split(":")[0] for m in got["conflict_markers"]] == [path]
    # A sync that brings none says nothing of them.
    proc = am(vault.root, teammate, "sync", "--format", "json")
    assert json.loads(proc.stdout)["conflict_markers"] == []


def _obsidian_backup(root: Path, layout: str) -> None:
    """What Obsidian and obsidian-git do on one machine: rewrite the window layout, then git add -A and commit."""
    (root / ".obsidian" / "workspace.json").write_text('{\n  "active": "%s"\n}\n' % layout)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "--allow-empty", "-m", f"vault backup: {layout}")


def test_two_machines_in_obsidian_sync_without_clashing_on_the_window_layout(tmp_path: Path) -> None:
    base = tmp_path / "server"
    base.mkdir()
    make_bare(base)
    teammate, home = tmp_path / "teammate-home", tmp_path / "other-home"
    with git_daemon(base) as url:
        mine = tmp_path / "mine"
        assert am(tmp_path, teammate, "init", "--obsidian", str(mine)).returncode == 0
        ignored = run_git(mine, "show", "HEAD:.gitignore").split()
        assert ".obsidian/workspace.json" in ignored and ".obsidian/workspace-mobile.json" in ignored
        assert am(mine, teammate, "sync", "--set-upstream", f"{url}/vault.git").returncode == 0
        theirs = clone(f"{url}/vault.git", tmp_path / "theirs")
        assert am(theirs, home, "hooks", "install").returncode == 0
        for root, who, layout in ((mine, teammate, "a1"), (theirs, home, "b2"), (mine, teammate, "a3")):
            _obsidian_backup(root, layout)
            proc = am(root, who, "sync")
            assert proc.returncode == 0, proc.stderr
        assert "workspace.json" not in run_git(mine, "ls-files", ".obsidian")
        assert (theirs / ".obsidian" / "workspace.json").read_text() == '{\n  "active": "b2"\n}\n'


def test_a_clash_on_a_tracked_window_layout_names_it_and_the_way_out(tmp_path: Path) -> None:
    base = tmp_path / "server"
    base.mkdir()
    make_bare(base)
    teammate, home = tmp_path / "teammate-home", tmp_path / "other-home"
    with git_daemon(base) as url:
        mine = tmp_path / "mine"
        assert am(tmp_path, teammate, "init", "--obsidian", str(mine)).returncode == 0
        # A vault set up before the layout was ignored: obsidian-git committed it.
        (mine / ".gitignore").write_text(".am/cache/\n")
        _obsidian_backup(mine, "a1")
        assert am(mine, teammate, "sync", "--set-upstream", f"{url}/vault.git").returncode == 0
        theirs = clone(f"{url}/vault.git", tmp_path / "theirs")
        _obsidian_backup(theirs, "b2")
        _obsidian_backup(mine, "a3")
        assert am(mine, teammate, "sync").returncode == 0
        head = run_git(theirs, "rev-parse", "HEAD")
        proc = am(theirs, home, "sync")
        assert proc.returncode == 9 and "Obsidian's window layout of one machine" in proc.stderr
        assert "git checkout --ours .obsidian/workspace.json" in proc.stderr and "am obsidian setup" in proc.stderr
        assert run_git(theirs, "rev-parse", "HEAD") == head
        # The way it names.
        run_git(theirs, "merge", "-q", "origin/main", check=False)
        run_git(theirs, "checkout", "--ours", ".obsidian/workspace.json")
        run_git(theirs, "commit", "-q", "-a", "-m", "merge")
        assert am(theirs, home, "obsidian", "setup").returncode == 0
        run_git(theirs, "rm", "-q", "--cached", ".obsidian/workspace.json")
        run_git(theirs, "commit", "-q", "-m", "layout out of Git")
        proc = am(theirs, home, "sync")
        assert proc.returncode == 0 and "pushed" in proc.stdout, proc.stderr
        assert "workspace.json" not in run_git(theirs, "ls-files", ".obsidian")


def test_undo_in_a_partial_clone_fetches_the_versions_it_reverts(served: tuple[Any, str, str],
                                                                 tmp_path: Path) -> None:
    vault, url, fid = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "partial", "--filter=blob:none")
    path = str(vault.locate(fid))
    edit = versions_by_git(vault.root, path)[1]  # the edit: its parent's version is one the clone left out
    assert f"?{run_git(here, 'rev-parse', f'{edit}^:{path}').strip()}" in run_git(
        here, "rev-list", "--objects", "--missing=print", "HEAD").split()
    # The later status change touched other lines, so the edit reverts cleanly: the text as first written.
    proc = am(here, home, "undo", edit)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert (here / path).read_text().rstrip().endswith("Alpha caches user profiles.")
    assert run_git(here, "show", f"HEAD:{path}") == (here / path).read_text()
    assert "status: contested" in (here / path).read_text() and not run_git(here, "status", "--porcelain")


def test_am_init_adopts_a_second_clone_of_a_vault_under_the_name_given(served: tuple[Any, str, str],
                                                                       tmp_path: Path) -> None:
    _, url, _ = served
    home = other_home(tmp_path)
    first, second = clone(url, tmp_path / "first"), clone(url, tmp_path / "second")
    proc = am(first, home, "init", ".")
    assert proc.returncode == 0 and "vault test ready" in proc.stdout, proc.stderr
    proc = am(second, home, "init", ".")  # the vault's own name is the first clone's here
    assert proc.returncode == 6 and "choose another name" in proc.stderr
    proc = am(second, home, "init", ".", "--name", "test-2")
    assert proc.returncode == 0, proc.stderr
    assert "vault test-2 ready" in proc.stdout and "am --vault test-2 " in proc.stdout
    assert f"on this machine 'test' is another folder ({first.resolve()})" in proc.stderr
    listed = json.loads(am(tmp_path, home, "vault", "list", "--format", "json").stdout)
    assert {v["name"]: v["path"] for v in listed} == {"test": str(first.resolve()), "test-2": str(second.resolve())}
    assert run_git(second, "config", "--get", "merge.am.driver").strip()  # adopted: hooks and driver as for the first
    assert run_git(second, "show", "HEAD:.am/vault.yml").startswith("name: test\n")  # the shared name unchanged
    assert not run_git(second, "status", "--porcelain")


def test_setup_from_a_second_clone_names_the_clone_its_vault_name_reaches(served: tuple[Any, str, str],
                                                                          tmp_path: Path) -> None:
    _, url, _ = served
    home = other_home(tmp_path)
    first, second = clone(url, tmp_path / "first"), clone(url, tmp_path / "second")
    assert am(first, home, "init", ".").returncode == 0
    assert am(second, home, "init", ".", "--name", "test-2").returncode == 0
    project = tmp_path / "project"
    run_git(tmp_path, "init", "-q", str(project))
    proc = am(project, home, "--vault", "test-2", "setup", "claude-code", "--print")
    assert proc.returncode == 0, proc.stderr
    assert f"vault name 'test' is registered on this machine for {first.resolve()}" in proc.stderr
    assert f"am vault add test {second.resolve()} --replace" in proc.stderr
    assert "am init" not in proc.stderr  # adopting it under 'test' is refused: the name is the first clone's
    proc = am(second, home, "init", ".", "--name", "test")
    assert proc.returncode == 6


def test_vault_list_in_an_unregistered_clone_names_the_clone_and_how_to_adopt_it(served: tuple[Any, str, str],
                                                                                  tmp_path: Path) -> None:
    _, url, _ = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "plain")
    proc = am(here / "facts", home, "vault", "list")
    assert proc.returncode == 0 and "create one with" not in proc.stderr
    assert f"the vault at {here.resolve()} is not registered on this machine" in proc.stderr
    assert f"am init {here.resolve()}" in proc.stderr
    assert am(here, home, "init", str(here)).returncode == 0  # the way it names
    proc = am(here, home, "vault", "list")
    assert proc.stdout.split() == ["test", str(here.resolve())] and proc.stderr == ""


def test_fact_list_names_a_fact_a_driverless_pull_left_unreadable(served: tuple[Any, str, str],
                                                                  tmp_path: Path) -> None:
    vault, url, fid = served
    home = other_home(tmp_path)
    here = clone(url, tmp_path / "plain")
    # Both sides change the same frontmatter lines: Git's markers land in the YAML.
    assert am(here, home, "fact", "expire", fid, "--reason", "gone here").returncode == 0
    vault.set_fact_status(fid, "pending-review", reason="check it there")
    assert sync(vault).pushed
    pulled = subprocess.run(["git", "-C", str(here), "pull", "--no-rebase", "-q"], capture_output=True, text=True,
                            env=subprocess_env(**OTHER), check=False)
    assert pulled.returncode == 1
    path = str(vault.locate(fid))
    assert "<<<<<<< " in (here / path).read_text().split("\n---\n", 1)[0]
    proc = am(here, home, "fact", "list")
    assert proc.returncode == 0 and fid not in proc.stdout and "Later fact number 0." in proc.stdout
    assert f"1 record file could not be read and is not listed ({path}" in proc.stderr
    assert "am check says why" in proc.stderr


def test_marked_records_reads_the_files_hand_commits_changed_as_they_are_at_the_tip(alpha: Any) -> None:
    from am.sync.engine import marked_records

    vault = alpha
    base = vault.store.head()
    fid = vault.add_fact("Written by am.", topics=["project-alpha"]).record.id
    path = str(vault.locate(fid))
    text = (vault.root / path).read_text()
    broken = text.replace("status: active\n", "<<<<<<< HEAD\nstatus: active\n=======\nstatus: expired\n>>>>>>> x\n")
    (vault.root / path).write_text(broken)
    run_git(vault.root, "commit", "-q", "-a", "-m", "hand merge")
    marked = run_git(vault.root, "rev-parse", "HEAD").strip()
    store = vault.store.opened()
    line = broken.splitlines().index("<<<<<<< HEAD") + 1
    assert marked_records(store, base, marked) == [f"{path}:{line}"]
    later = vault.add_fact("Another, by am.", topics=["project-alpha"]).record.id  # am writes after it: still found
    assert marked_records(store, base, vault.store.head()) == [f"{path}:{line}"]
    (vault.root / path).write_text(text)
    run_git(vault.root, "commit", "-q", "-a", "-m", "resolved by hand")
    assert marked_records(store, base, run_git(vault.root, "rev-parse", "HEAD").strip()) == []
    assert marked_records(store, marked, run_git(vault.root, "rev-parse", "HEAD").strip()) == []
    assert later


def _code_clone(where: Path, origin: str | None) -> Path:
    run_git(where.parent, "init", "-q", "-b", "main", str(where))
    (where / "a.py").write_text("x = 1\n")
    run_git(where, "add", "a.py")
    run_git(where, "commit", "-q", "-m", "c1")
    if origin is not None:
        run_git(where, "remote", "add", "origin", origin)
    return where


def test_repo_add_on_another_machine_keeps_the_remote_the_teammate_recorded(served: tuple[Any, str, str],
                                                                            tmp_path: Path) -> None:
    vault, url, _ = served
    teammate = tmp_path / "teammate-home"
    theirs = _code_clone(tmp_path / "their-code", "https://example.com/org/alpha.git")
    assert am(vault.root, teammate, "repo", "add", "alpha", str(theirs)).returncode == 0
    assert am(vault.root, teammate, "sync").returncode == 0
    shared = "repos:\n  alpha: https://example.com/org/alpha.git\n"
    assert shared in run_git(vault.root, "show", "HEAD:.am/vault.yml")

    home = other_home(tmp_path)
    here = clone(url, tmp_path / "plain")
    head = run_git(here, "rev-parse", "HEAD")
    # The same repository by ssh, and a clone with no remote at all: neither rewrites what every machine shares.
    for n, origin in enumerate(("git@example.com:org/alpha.git", None)):
        mine = _code_clone(tmp_path / f"my-code-{n}", origin)
        proc = am(here, home, "repo", "add", "alpha", str(mine), "--replace")
        assert proc.returncode == 0, proc.stderr
        assert "recorded" not in proc.stdout and "names https://example.com/org/alpha.git as alpha's remote" in proc.stderr
        assert run_git(here, "rev-parse", "HEAD") == head and shared in (here / ".am" / "vault.yml").read_text()
    proc = am(here, home, "sync")
    assert proc.returncode == 0 and "nothing to merge" in proc.stdout


def test_a_committed_conflict_is_counted_by_fact_list_and_slice_and_a_body_conflict_is_marked(
        served: tuple[Any, str, str], tmp_path: Path) -> None:
    # A plain git pull (no merge driver) puts markers in one fact's frontmatter and in another's body; then
    # git commit -a commits them. The first is unreadable: no list or pack may leave it out in silence, though
    # the working tree now equals HEAD. The second parses: its pack text must not pass for the fact's.
    vault, url, fid = served
    home = tmp_path / "other-home"
    home.mkdir()
    here = clone(url, tmp_path / "plain")
    later = next(f.id for f in vault.list_facts() if f.body.strip() == "Later fact number 1.")
    assert am(here, home, "fact", "expire", fid, "--reason", "gone here").returncode == 0
    assert am(here, home, "fact", "edit", later, "Later fact number one, here.").returncode == 0
    before = json.loads(am(here, home, "slice", "--format", "json").stdout)["pack_id"]
    vault.set_fact_status(fid, "pending-review", reason="check it there")
    vault.edit_fact(later, "Later fact number one, there.")
    assert sync(vault).pushed
    pulled = subprocess.run(["git", "-C", str(here), "pull", "--no-rebase", "-q"], capture_output=True, text=True,
                            env=subprocess_env(**OTHER), check=False)
    assert pulled.returncode == 1
    subprocess.run(["git", "-C", str(here), "commit", "-qam", "merge"], env=subprocess_env(**OTHER), check=True)
    assert run_git(here, "status", "--porcelain") == ""
    path, body = str(vault.locate(fid)), str(vault.locate(later))
    assert "<<<<<<< " in run_git(here, "show", f"HEAD:{path}").split("\n---\n", 1)[0]
    assert "<<<<<<< " in run_git(here, "show", f"HEAD:{body}").split("\n---\n", 1)[1]
    for fmt in ("text", "json"):
        proc = am(here, home, "fact", "list", "--format", fmt)
        assert proc.returncode == 0 and fid not in proc.stdout and "Later fact number 0." in proc.stdout
        assert f"1 record file could not be read and is not listed ({path}: am check says why)" in proc.stderr
    # The fact whose text holds markers is listed by its first line of text, marked; not as '<<<<<<< HEAD'.
    row = next(line for line in am(here, home, "fact", "list").stdout.splitlines() if line.startswith(later))
    assert "<<<<<<<" not in row and "[conflict markers: am check] Later fact number one, here." in row, row
    proc = am(here, home, "slice")
    assert proc.returncode == 0, proc.stderr
    assert f"1 record file unreadable, not in this pack (`{path}`: am check says why)" in proc.stdout
    assert f"1 record file could not be read and is not in this pack ({path}: am check says why)" in proc.stderr
    marked = [line for line in proc.stdout.splitlines() if later in line]
    assert marked and all("conflict markers" in line for line in marked), proc.stdout
    proc = am(here, home, "slice", "--format", "json")
    pack = json.loads(proc.stdout)
    assert pack["vault"]["unreadable"] == [path]
    shown = [f for t in pack["topics"] for f in t["facts"] if f["id"] == later]
    assert shown and shown[0]["conflict_markers"] is True
    assert all(f["conflict_markers"] is False for t in pack["topics"] for f in t["facts"] if f["id"] != later)
    # What changed since the pack made before the pull: the edited fact, marked; the unreadable file, in a note.
    delta = json.loads(am(here, home, "slice", "--since", before, "--format", "json").stdout)
    assert [(c["id"], c["conflict_markers"]) for c in delta["changes"]["changed"]] == [(later, True)]
    assert any(f"1 record file could not be read and is in no pack ({path}: am check" in n for n in delta["notes"])
