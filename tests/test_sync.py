"""`am sync` against a real Git server on loopback (`git daemon`): convergence, contested facts, the merge driver, pushes never forced."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import GIT_IDENTITY, PYTHON, fsck_clean, run_git, subprocess_env
from gitserver import git_daemon, make_bare, only_fast_forwards

from am.cli.main import cli
from am.errors import DirtyFileError, GitError, UsageError
from am.records.codec import parse_record, render_record
from am.records.model import replace
from am.sync import merge_branch, sync
from am.upkeep.check import check_vault
from am.vault import Vault


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A bare repository served by `git daemon` on 127.0.0.1: (URL, path of the bare repository)."""
    base = tmp_path / "server"
    base.mkdir()
    bare = make_bare(base)
    with git_daemon(base) as url:
        yield f"{url}/vault.git", bare


@pytest.fixture
def pair(alpha: Any, server: tuple[str, Path], tmp_path: Path) -> Iterator[tuple[Vault, Vault]]:
    """Two clones of one vault, both synced with the server: (a, b)."""
    url, _ = server
    a: Vault = alpha
    report = sync(a, set_upstream=url)
    assert report.pushed
    b = clone(url, tmp_path / "b", actor="agent-b")
    yield a, b
    b.close()


def clone(url: str, path: Path, *, actor: str) -> Vault:
    run_git(path.parent, "clone", "-q", url, str(path))
    run_git(path, "config", "user.name", GIT_IDENTITY["GIT_AUTHOR_NAME"])
    run_git(path, "config", "user.email", GIT_IDENTITY["GIT_AUTHOR_EMAIL"])
    return Vault.open(path, actor=actor)


def ids_in(root: Path, rev: str = "HEAD", top: str = "facts") -> set[str]:
    return {Path(p).stem for p in run_git(root, "ls-tree", "-r", "--name-only", rev, top).split()}


def record_at(root: Path, rel: str) -> Any:
    return parse_record((root / rel).read_text(encoding="utf-8"), rel)


def edit(root: Path, rel: str, message: str, **fields: Any) -> None:
    """Change a record's fields by hand (as a person in Obsidian would) and commit it with the git CLI."""
    record = record_at(root, rel)
    (root / rel).write_text(render_record(replace(record, **fields)), encoding="utf-8")
    run_git(root, "commit", "-q", "-am", message)


def fact_path(root: Path, fact_id: str) -> str:
    found = [p for p in run_git(root, "ls-files", "facts").split() if Path(p).stem == fact_id]
    assert len(found) == 1, found
    return found[0]


def test_two_clones_converge_within_two_rounds(pair: tuple[Vault, Vault], server: tuple[str, Path]) -> None:
    a, b = pair
    written = set()
    for i in range(50):
        written.add(a.add_fact(f"Machine A learned thing {i}.", topics=["project-alpha"]).record.id)
        written.add(b.add_fact(f"Machine B learned thing {i}.", topics=["project-alpha"]).record.id)
    assert len(written) == 100
    for _round in range(2):
        sync(a)
        sync(b)
    _, bare = server
    assert ids_in(a.root) == ids_in(b.root) == ids_in(bare, "main") == written
    assert run_git(a.root, "rev-parse", "HEAD").strip() == run_git(b.root, "rev-parse", "HEAD").strip()
    assert len(only_fast_forwards(bare)) == 3  # set-upstream, a, then b's merge; round two moves nothing
    for v in (a, b):
        assert run_git(v.root, "status", "--porcelain", "--untracked-files=all").strip() == ""
        assert check_vault(v).errors == []
        fsck_clean(v.root)
    # The merge commit says what it is; the cache followed (search finds the other machine's fact).
    merges = run_git(b.root, "log", "--merges", "--format=%B").split("\n")
    assert "Am-Op: sync.merge" in merges
    assert len(b.list_facts()) == 100


def test_the_same_fact_changed_on_both_sides_is_kept_twice_and_contested(
        pair: tuple[Vault, Vault], server: tuple[str, Path]) -> None:
    a, b = pair
    fid = a.add_fact("Alpha offers getUser(id) only.", topics=["project-alpha"], id="fact-getuser").record.id
    sync(a)
    sync(b)
    rel = fact_path(a.root, fid)
    edit(a.root, rel, "a edits", body="Alpha offers getUser(id) and getUsers(ids).\n")
    edit(b.root, rel, "b edits", body="Alpha offers getUser(id), rate limited to 10/s.\n")
    sync(a)
    dry = sync(b, dry_run=True)
    assert dry.action == "merge" and len(dry.contested) == 2
    assert run_git(b.root, "log", "-1", "--format=%s").strip() == "b edits"  # a dry run changes nothing
    report = sync(b)
    sync(a)
    assert report.action == "merge" and report.pushed
    assert run_git(a.root, "rev-parse", "HEAD").strip() == run_git(b.root, "rev-parse", "HEAD").strip()
    facts = {f.id: f for f in b.list_facts()}
    contested = sorted(f for f in facts if facts[f].status == "contested")
    assert len(contested) == 2 and fid in contested
    bodies = {facts[f].body for f in contested}
    assert bodies == {"Alpha offers getUser(id) and getUsers(ids).\n", "Alpha offers getUser(id), rate limited to 10/s.\n"}
    relations = [r for r in b.list_relations() if r.rel == "conflicts-with"]
    assert len(relations) == 1 and {relations[0].from_, relations[0].to} == set(contested)
    assert check_vault(b).errors == []
    message = run_git(b.root, "log", "-1", "--format=%B", report.merge_commit or "HEAD")
    assert f"Am-Record: {fid}" in message and "Am-Op: sync.merge" in message
    # The pack shows both in its contested section.
    out = CliRunner().invoke(cli, ["--vault", str(b.root), "slice", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert sorted(f["id"] for f in json.loads(out.output)["contested"]) == contested
    for root in (a.root, b.root):
        assert "<<<<<<<" not in "".join(p.read_text() for p in (root / "facts").rglob("*.md"))
    only_fast_forwards(server[1])


def test_git_pull_through_the_merge_driver_gives_what_am_sync_gives(
        pair: tuple[Vault, Vault], server: tuple[str, Path], tmp_path: Path) -> None:
    a, b = pair
    fid = a.add_fact("The cache is Redis 6.", topics=["project-alpha"], id="fact-cache").record.id
    a.add_fact("Deploys run on Fridays.", topics=["project-alpha"], id="fact-deploys", tags=["ops"])
    sync(a)
    sync(b)
    rel, deploys = fact_path(a.root, fid), fact_path(a.root, "fact-deploys")
    edit(a.root, rel, "a edits", body="The cache is Redis 7.\n")
    edit(a.root, deploys, "a tags", tags=("ops", "friday"))
    edit(b.root, rel, "b edits", body="The cache is Valkey 8.\n")
    edit(b.root, deploys, "b tags", tags=("ops", "release"), confidence="high")
    sync(a)
    # Installed last, so the edits above do not each start am's commit hooks (a second apiece).
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(b.root), "hooks", "install"],
                          check=False, capture_output=True, text=True, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    assert "merge=am" in (b.root / ".gitattributes").read_text()
    assert "merge-driver" in run_git(b.root, "config", "merge.am.driver")
    # A copy of b, merged by am instead of git, for comparison.
    c_root = tmp_path / "c"
    shutil.copytree(b.root, c_root, symlinks=True)
    run_git(b.root, "-c", "pull.rebase=false", "pull", "-q", "--no-edit")
    # The post-merge hook's commit of the contested copy (it said "of 1 facts").
    assert run_git(b.root, "log", "-1", "--format=%s").strip() == "sync: keep both versions of 1 fact changed on both sides"
    run_git(c_root, "fetch", "-q", "origin")
    run_git(c_root, "branch", "theirs", "origin/main")
    with Vault.open(c_root, actor="agent-b") as c:
        merged = merge_branch(c, "theirs")
    assert merged.action == "merge"
    for root in (b.root, c_root):
        assert run_git(root, "status", "--porcelain").strip() == ""
        text = "".join(p.read_text() for p in (root / "facts").rglob("*.md"))
        assert "<<<<<<<" not in text and ">>>>>>>" not in text
    tree = {top: run_git(b.root, "rev-parse", f"HEAD:{top}").strip() for top in ("facts", "relations", "topics")}
    assert tree == {top: run_git(c_root, "rev-parse", f"HEAD:{top}").strip() for top in tree}
    with Vault.open(b.root) as vb:
        facts = {f.id: f for f in vb.list_facts()}
        assert sorted(f.status for f in facts.values() if f.id.startswith(fid)) == ["contested", "contested"]
        assert set(facts["fact-deploys"].tags) == {"ops", "friday", "release"}
        assert facts["fact-deploys"].confidence == "high"
        assert len([r for r in vb.list_relations() if r.rel == "conflicts-with"]) == 1
        assert check_vault(vb).errors == []


def _shared_then_edited_on_a(pair: tuple[Vault, Vault], fid: str, text: str, edited: str) -> str:
    """Both clones hold fact ``fid``; a edits its text and syncs. Return the fact's path."""
    a, b = pair
    a.add_fact(text, topics=["project-alpha"], id=fid)
    sync(a)
    sync(b)
    rel = fact_path(a.root, fid)
    edit(a.root, rel, "a edits", body=edited)
    sync(a)
    return rel


def test_git_pull_rebase_through_the_merge_driver_keeps_both_versions(pair: tuple[Vault, Vault]) -> None:
    b = pair[1]
    fid = "fact-cache"
    rel = _shared_then_edited_on_a(pair, fid, "The cache is Redis 6.", "The cache is Redis 7.\n")
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(b.root), "hooks", "install"],
                          check=False, capture_output=True, text=True, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    edit(b.root, rel, "b edits", body="The cache is Valkey 8.\n")
    proc = subprocess.run(["git", "-C", str(b.root), "pull", "-q", "--rebase"], check=False, capture_output=True,
                          text=True, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    assert run_git(b.root, "status", "--porcelain").strip() == ""
    with Vault.open(b.root) as vb:
        facts = [f for f in vb.list_facts() if f.id.startswith(fid)]
        assert sorted(f.body for f in facts) == ["The cache is Redis 7.\n", "The cache is Valkey 8.\n"]
        assert [f.status for f in facts] == ["contested", "contested"]
        assert len([r for r in vb.list_relations() if r.rel == "conflicts-with"]) == 1
        assert check_vault(vb).errors == []


@pytest.mark.parametrize("how", ["cherry-pick", "stash-pop", "revert"])
def test_a_git_command_no_hook_completes_gets_a_text_conflict_not_a_split(alpha: Any, how: str) -> None:
    """Only a merge or a rebase has a hook that commits a split's contested copy; elsewhere Git's conflict stands."""
    vault: Vault = alpha
    root = vault.root
    fid = vault.add_fact("The cache is Redis 6.", topics=["project-alpha"], id="fact-cache").record.id
    rel = fact_path(root, fid)
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "hooks", "install"],
                          check=False, capture_output=True, text=True, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    if how == "cherry-pick":
        run_git(root, "switch", "-q", "-c", "side")
        edit(root, rel, "side edits", body="The cache is Redis 7.\n")
        run_git(root, "switch", "-q", "main")
        edit(root, rel, "main edits", body="The cache is Valkey 8.\n")
        command = ["cherry-pick", "side"]
    elif how == "stash-pop":
        text = record_at(root, rel)
        (root / rel).write_text(render_record(replace(text, body="The cache is Redis 7.\n")), encoding="utf-8")
        run_git(root, "stash", "-q")
        edit(root, rel, "main edits", body="The cache is Valkey 8.\n")
        command = ["stash", "pop"]
    else:
        edit(root, rel, "first edit", body="The cache is Redis 7.\n")
        edit(root, rel, "second edit", body="The cache is Valkey 8.\n")
        command = ["revert", "--no-edit", "HEAD~1"]
    head = run_git(root, "rev-parse", "HEAD").strip()
    done = subprocess.run(["git", "-C", str(root), *command], check=False, capture_output=True, text=True,
                          env=subprocess_env())
    # Before: the driver kept one side as "contested" and named a copy no hook ever wrote, so the
    # other side's text was gone (cherry-pick and revert even committed that, with the picked am trailers).
    assert done.returncode != 0, done.stdout + done.stderr
    assert run_git(root, "rev-parse", "HEAD").strip() == head
    text = (root / rel).read_text(encoding="utf-8")
    assert "<<<<<<<" in text and "Valkey 8" in text and ("Redis 7" in text or "Redis 6" in text)


def test_expire_against_supersede_takes_the_later_lifecycle_state(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    fid = a.add_fact("Alpha has no rate limit.", topics=["project-alpha"], id="fact-limit", tags=["api"]).record.id
    sync(a)
    sync(b)
    a.expire_fact(fid, reason="limits came in")
    rel = fact_path(a.root, fid)
    edit(a.root, rel, "a tags", tags=("api", "limits"))
    new = b.supersede_fact(fid, "Alpha limits clients to 10 requests a second.", reason="measured").record.id
    edit(b.root, rel, "b tags", tags=("security",))
    sync(a)
    sync(b)
    sync(a)
    for v in (a, b):
        old = v.get_fact(fid)
        assert old.status == "superseded" and old.superseded_by == new
        assert set(old.tags) == {"limits", "security"}  # 'api' was removed on one side: removed
        assert check_vault(v).errors == []


def test_a_push_the_server_refuses_is_an_error_not_a_success(pair: tuple[Vault, Vault], server: tuple[str, Path]) -> None:
    a, _ = pair
    _, bare = server
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'memory is frozen today' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = run_git(bare, "rev-parse", "main").strip()
    a.add_fact("A fact the server will refuse.", topics=["project-alpha"])
    with pytest.raises(GitError, match="refused"):
        sync(a)
    assert run_git(bare, "rev-parse", "main").strip() == before


def test_a_fetch_that_fails_says_why_not_the_boilerplate_git_ends_with(pair: tuple[Vault, Vault], tmp_path: Path) -> None:
    a, _ = pair
    for remote, why in (("nosuch", "'nosuch' does not appear to be a git repository"),
                        (str(tmp_path / "gone.git"), "does not appear to be a git repository")):
        with pytest.raises(GitError) as caught:
            sync(a, remote)
        assert why in str(caught.value) and "and the repository exists" not in str(caught.value)


def test_a_remote_rewritten_by_a_force_push_stops_the_sync_and_is_not_pushed_back(
        pair: tuple[Vault, Vault], server: tuple[str, Path]) -> None:
    a, b = pair
    _, bare = server
    run_git(bare, "config", "receive.denyNonFastForwards", "false")  # this server lets people force
    before = run_git(bare, "rev-parse", "main").strip()
    b.add_fact("A fact someone takes back.", topics=["project-alpha"], id="fact-taken-back")
    sync(b)
    sync(a)
    run_git(b.root, "reset", "-q", "--hard", before)
    run_git(b.root, "push", "-q", "--force", "origin", "main")
    head = run_git(a.root, "rev-parse", "HEAD").strip()
    for _ in range(2):  # it stays stopped until someone decides
        with pytest.raises(GitError, match="rewritten") as caught:
            sync(a)
        assert "git fetch origin" in (caught.value.hint or "")
        assert run_git(bare, "rev-parse", "main").strip() == before  # the taken-back fact is not pushed back
        assert run_git(a.root, "rev-parse", "HEAD").strip() == head
    run_git(a.root, "fetch", "-q", "origin")  # the hint's way to publish a's history again
    assert sync(a).pushed and "fact-taken-back" in ids_in(bare)


def test_a_remote_that_moves_during_the_sync_is_fetched_and_merged_again(
        pair: tuple[Vault, Vault], monkeypatch: pytest.MonkeyPatch) -> None:
    from am.git.program import transport

    a, b = pair
    a.add_fact("A's fact.", topics=["project-alpha"], id="fact-from-a")
    b.add_fact("B's fact.", topics=["project-alpha"], id="fact-from-b")
    real_fetch = transport.fetch
    calls: list[int] = []

    def fetch_then_b_pushes(root: Path, gitdir: Path, name: str, branch: str, *, named: bool) -> str | None:
        found = real_fetch(root, gitdir, name, branch, named=named)
        calls.append(1)
        if len(calls) == 1 and root == a.root:  # between a's fetch and a's push, b lands a commit
            sync(b)
        return found

    monkeypatch.setattr(transport, "fetch", fetch_then_b_pushes)
    report = sync(a)
    assert report.rounds == 2 and report.pushed
    assert {"fact-from-a", "fact-from-b"} <= ids_in(a.root)


def test_an_uncommitted_edit_in_the_way_stops_the_sync_before_anything_changes(pair: tuple[Vault, Vault]) -> None:
    b = pair[1]
    rel = _shared_then_edited_on_a(pair, "fact-shared", "Shared fact.", "Shared fact, edited on a.\n")
    (b.root / rel).write_text((b.root / rel).read_text() + "\nAn unsaved thought.\n")
    head = run_git(b.root, "rev-parse", "HEAD").strip()
    with pytest.raises(DirtyFileError, match=rel):
        sync(b)
    assert run_git(b.root, "rev-parse", "HEAD").strip() == head
    assert "An unsaved thought." in (b.root / rel).read_text()


def test_am_sync_command_line(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    b.add_fact("From the command line.", topics=["project-alpha"])
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(b.root), "sync", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["pushed"] is True and data["action"] == "up-to-date"
    out = runner.invoke(cli, ["--vault", str(a.root), "sync", "--dry-run"])
    assert out.exit_code == 0 and "would fast-forward" in out.output
    out = runner.invoke(cli, ["--vault", str(a.root), "sync"])
    assert out.exit_code == 0 and "fast-forward" in out.output
    assert ids_in(a.root) == ids_in(b.root)
    # Only local commits: a dry run names the remote's tip and says what it would push.
    theirs = run_git(a.root, "rev-parse", "origin/main").strip()
    a.add_fact("Not pushed yet.", topics=["project-alpha"])
    ours = run_git(a.root, "rev-parse", "HEAD").strip()
    out = runner.invoke(cli, ["--vault", str(a.root), "sync", "--dry-run"])
    assert out.exit_code == 0 and out.output == (f"nothing to merge: up to date with origin/main ({theirs[:10]})\n"
                                                 f"would push {ours[:10]} to origin/main\n")
    assert run_git(a.root, "rev-parse", "origin/main").strip() == theirs


def test_the_upstream_read_from_git_config_agrees_with_git(tmp_path: Path) -> None:
    from am.git.program.transport import _tracked_from_config, tracked

    root = tmp_path / "r"
    run_git(tmp_path, "init", "-q", "-b", "main", str(root))
    run_git(root, "commit", "-q", "--allow-empty", "-m", "start")
    assert tracked(root, "main") is None
    run_git(root, "remote", "add", "up", "https://example.com/x.git")
    run_git(root, "config", "branch.main.remote", "up")
    run_git(root, "config", "branch.main.merge", "refs/heads/trunk")
    run_git(root, "config", "branch.other.remote", "origin")
    assert _tracked_from_config(root / ".git", "main") == ("up", "trunk")
    config = root / ".git" / "config"
    config.write_text(config.read_text().replace("merge = refs/heads/trunk", 'merge = "refs/heads/odd"'))
    assert _tracked_from_config(root / ".git", "main") is None  # quoted: left to git
    assert tracked(root, "main") == ("up", "odd")


def test_a_merge_resolved_by_hand_gets_no_contested_copies(pair: tuple[Vault, Vault]) -> None:
    from am.upkeep.merges import complete_merge

    a, b = pair
    fid = a.add_fact("The queue is RabbitMQ.", topics=["project-alpha"], id="fact-queue").record.id
    sync(a)
    sync(b)
    rel = fact_path(a.root, fid)
    edit(a.root, rel, "a edits", body="The queue is Kafka.\n")
    edit(b.root, rel, "b edits", body="The queue is NATS.\n")
    sync(a)
    # No driver in b: git stops on the conflict, and a person writes the text they mean.
    proc = subprocess.run(["git", "-C", str(b.root), "-c", "pull.rebase=false", "pull", "-q", "--no-edit"],
                          check=False, capture_output=True, text=True, env=subprocess_env())
    assert proc.returncode != 0
    (b.root / rel).write_text(render_record(replace(record_at(a.root, rel), body="The queue is NATS, then Kafka.\n")))
    run_git(b.root, "add", rel)
    run_git(b.root, "commit", "-q", "--no-edit")
    assert complete_merge(b) is None
    assert [f.id for f in b.list_facts() if f.id.startswith(fid)] == [fid]


def test_a_fact_superseded_on_both_sides_keeps_one_successor_and_contests_the_other(
        pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    fid = a.add_fact("Alpha answers in 200 ms.", topics=["project-alpha"], id="fact-latency").record.id
    sync(a)
    sync(b)
    one = a.supersede_fact(fid, "Alpha answers in 120 ms.", reason="new cache").record.id
    two = b.supersede_fact(fid, "Alpha answers in 90 ms.", reason="new hardware").record.id
    sync(a)
    sync(b)
    sync(a)
    winner, loser = sorted((one, two))
    for v in (a, b):
        assert v.get_fact(fid).superseded_by == winner
        assert v.get_fact(loser).status == "contested" and fid not in v.get_fact(loser).supersedes
        assert any(r.rel == "conflicts-with" and {r.from_, r.to} == {winner, loser} for r in v.list_relations())
        assert check_vault(v).errors == []


def test_files_that_are_not_records_merge_by_lines_or_stop_the_sync(pair: tuple[Vault, Vault]) -> None:
    from am.errors import ConflictError

    a, b = pair
    ignore = ".gitignore"
    base = (a.root / ignore).read_text()
    (a.root / ignore).write_text("# machine a\n" + base)
    run_git(a.root, "commit", "-q", "-am", "a ignores")
    (b.root / ignore).write_text(base + "*.swp\n")
    run_git(b.root, "commit", "-q", "-am", "b ignores")
    sync(a)
    sync(b)
    assert (b.root / ignore).read_text() == "# machine a\n" + base + "*.swp\n"
    (a.root / ignore).write_text("# machine a, again\n" + base + "*.swp\n")
    run_git(a.root, "commit", "-q", "-am", "a again")
    (b.root / ignore).write_text("# machine b\n" + base + "*.swp\n")
    run_git(b.root, "commit", "-q", "-am", "b again")
    sync(a)
    head = run_git(b.root, "rev-parse", "HEAD").strip()
    with pytest.raises(ConflictError, match=".gitignore"):
        sync(b)
    assert run_git(b.root, "rev-parse", "HEAD").strip() == head


def test_hooks_uninstall_unregisters_the_merge_driver(alpha: Any) -> None:
    vault: Vault = alpha
    root = vault.root
    runner = CliRunner()
    installed = runner.invoke(cli, ["--vault", str(root), "hooks", "install"], catch_exceptions=False)
    assert installed.exit_code == 0, installed.output
    assert "merge-driver" in run_git(root, "config", "merge.am.driver")
    # A setting of the user's own in another section survives.
    run_git(root, "config", "merge.mine.driver", "true")
    removed = runner.invoke(cli, ["--vault", str(root), "hooks", "uninstall", "--format", "json"],
                            catch_exceptions=False)
    assert removed.exit_code == 0, removed.output
    assert {"name": "merge-driver", "path": "merge.am.driver", "action": "removed"} in json.loads(removed.stdout)
    for key in ("merge.am.driver", "merge.am.name"):
        found = subprocess.run(["git", "-C", str(root), "config", "--get", key], check=False, capture_output=True)
        assert found.returncode == 1
    assert run_git(root, "config", "merge.mine.driver").strip() == "true"
    assert "merge=am" in (root / ".gitattributes").read_text()  # committed, shared by every clone: kept
    again = runner.invoke(cli, ["--vault", str(root), "hooks", "uninstall"], catch_exceptions=False)
    assert again.exit_code == 0 and "merge-driver" not in again.output
    # Someone else's merge.am driver is not am's to remove.
    run_git(root, "config", "merge.am.driver", "my-own-tool %A")
    runner.invoke(cli, ["--vault", str(root), "hooks", "uninstall"], catch_exceptions=False)
    assert run_git(root, "config", "merge.am.driver").strip() == "my-own-tool %A"


def test_set_upstream_to_a_remote_that_cannot_be_reached_changes_no_setting(
        pair: tuple[Vault, Vault], tmp_path: Path) -> None:
    a, b = pair
    config = run_git(a.root, "config", "--local", "--list")
    with pytest.raises(GitError, match="nothing was changed"):
        sync(a, set_upstream=str(tmp_path / "no-such-vault.git"))
    assert run_git(a.root, "config", "--local", "--list") == config  # origin still points at the server
    run_git(b.root, "remote", "remove", "origin")
    config = run_git(b.root, "config", "--local", "--list")
    with pytest.raises(GitError, match="nothing was changed"):
        sync(b, set_upstream=str(tmp_path / "no-such-vault.git"))
    assert run_git(b.root, "config", "--local", "--list") == config  # no remote added


@pytest.mark.parametrize("url", ["", "  "])
def test_set_upstream_to_an_empty_url_is_refused_and_changes_nothing(
        pair: tuple[Vault, Vault], server: tuple[str, Path], url: str) -> None:
    a, b = pair
    b.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"])
    config = run_git(b.root, "config", "--local", "--list")
    with pytest.raises(UsageError, match="is not a remote URL") as caught:
        sync(b, set_upstream=url)
    assert caught.value.exit_code == 2 and "give a URL" in str(caught.value.hint)
    assert run_git(b.root, "config", "--local", "--list") == config
    assert run_git(b.root, "rev-parse", "HEAD") != run_git(server[1], "rev-parse", "main")  # nothing pushed


def test_sync_is_refused_while_a_git_merge_is_unfinished(pair: tuple[Vault, Vault], server: tuple[str, Path],
                                                         tmp_path: Path) -> None:
    from test_vault import _conflicted

    a, b = pair
    b.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"])
    _conflicted(b.root, "merge")
    config, tip = run_git(b.root, "config", "--local", "--list"), run_git(server[1], "rev-parse", "main")
    for upstream in (None, str(tmp_path / "elsewhere.git")):
        with pytest.raises(GitError, match="a git merge is in progress") as caught:
            sync(b, set_upstream=upstream)
        assert "git merge --abort" in str(caught.value.hint) and "has uncommitted changes" not in str(caught.value)
    assert run_git(b.root, "config", "--local", "--list") == config
    assert run_git(server[1], "rev-parse", "main") == tip and (b.root / ".git" / "MERGE_HEAD").exists()


def test_a_merge_into_a_vault_of_a_newer_format_is_refused_a_fast_forward_is_not(
        pair: tuple[Vault, Vault], server: tuple[str, Path]) -> None:
    """A newer am raised the vault's format: this am does not merge (write) its records, as it writes none."""
    a, b = pair
    settings = a.root / ".am" / "vault.yml"
    settings.write_text(settings.read_text().replace("format: 1", "format: 2"))
    run_git(a.root, "commit", "-q", "-am", "a newer am: format 2")
    sync(a)
    b.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"])
    head, tip = run_git(b.root, "rev-parse", "HEAD"), run_git(server[1], "rev-parse", "main")
    with pytest.raises(UsageError, match="format 2") as caught:
        sync(b)
    assert caught.value.exit_code == 2 and "upgrade am" in str(caught.value.hint)
    assert run_git(b.root, "rev-parse", "HEAD") == head and run_git(server[1], "rev-parse", "main") == tip
    assert run_git(b.root, "status", "--porcelain").strip() == ""
    # A fast-forward writes nothing of am's: the clone takes the newer vault as git pull would.
    run_git(b.root, "reset", "-q", "--hard", "HEAD~1")
    assert sync(b).action == "fast-forward"
    assert "format: 2" in (b.root / ".am" / "vault.yml").read_text()


def _newer_format_branch_and_both_edit(v: Vault) -> str:
    """A branch ``newer`` where a newer am raised the format and edited fact-cache; main edited it too."""
    root = v.root
    v.add_fact("The cache is Redis 6.", topics=["project-alpha"], id="fact-cache")
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "hooks", "install"],
                          check=False, capture_output=True, text=True, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    rel = fact_path(root, "fact-cache")
    run_git(root, "switch", "-q", "-c", "newer")
    settings = root / ".am" / "vault.yml"
    settings.write_text(settings.read_text().replace("format: 1", "format: 2"))
    edit(root, rel, "a newer am: format 2", body="The cache is Redis 7.\n")
    run_git(root, "switch", "-q", "main")
    edit(root, rel, "ours", body="The cache is Valkey 8.\n")
    return rel


def test_git_merge_of_a_newer_format_is_a_conflict_the_driver_leaves_as_git_would(alpha: Any) -> None:
    """The merge driver refuses as am merge does: Git's line merge in the file, marked as a conflict, no commit."""
    root = alpha.root
    rel = _newer_format_branch_and_both_edit(alpha)
    head = run_git(root, "rev-parse", "HEAD")
    proc = subprocess.run(["git", "-C", str(root), "merge", "newer", "-m", "merge"], check=False,
                          capture_output=True, text=True, env=subprocess_env())
    assert proc.returncode == 1 and "format 2" in proc.stderr and "upgrade am" in proc.stderr, proc.stderr
    assert run_git(root, "rev-parse", "HEAD") == head and (root / ".git" / "MERGE_HEAD").exists()
    assert run_git(root, "diff", "--name-only", "--diff-filter=U").split() == [rel]
    text = (root / rel).read_text()
    assert "<<<<<<< ours\nThe cache is Valkey 8.\n=======\nThe cache is Redis 7.\n>>>>>>> theirs\n" in text
    assert "status: active" in text  # not split into contested copies


def test_the_post_merge_hook_writes_nothing_into_a_vault_of_a_newer_format(alpha: Any) -> None:
    """A merge whose driver did not check (an older am's) is not completed with am's contested copies either."""
    root = alpha.root
    _newer_format_branch_and_both_edit(alpha)
    driver = run_git(root, "config", "merge.am.driver").strip()
    # The driver without the names git merge gives it of the other side: as an am that did not look.
    run_git(root, "config", "merge.am.driver", f"env $(env | grep -o '^GITHEAD_[0-9a-f]*' | sed 's/^/-u /') {driver}")
    proc = subprocess.run(["git", "-C", str(root), "merge", "newer", "-m", "merge"], check=False,
                          capture_output=True, text=True, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    assert "post-merge: .am/vault.yml: format 2" in proc.stderr and "wrote nothing" in proc.stderr, proc.stderr
    assert run_git(root, "log", "-1", "--format=%s").strip() == "merge"  # no am commit after Git's merge
    assert run_git(root, "status", "--porcelain").strip() == ""


def test_a_dry_run_on_a_branch_the_remote_lacks_does_not_call_it_up_to_date(pair: tuple[Vault, Vault]) -> None:
    a, _ = pair
    run_git(a.root, "switch", "-q", "-c", "notes")  # a new branch: no upstream, origin has no such branch
    a.add_fact("Only on notes.", topics=["project-alpha"])
    ours = run_git(a.root, "rev-parse", "HEAD").strip()
    out = CliRunner().invoke(cli, ["--vault", str(a.root), "sync", "--dry-run"])
    assert out.exit_code == 0 and out.output == ("nothing to merge: origin/notes does not exist yet\n"
                                                 f"would push {ours[:10]} to origin/notes\n")
    out = CliRunner().invoke(cli, ["--vault", str(a.root), "sync"])
    assert out.exit_code == 0 and out.output == f"pushed {ours[:10]} to origin/notes\n"


@pytest.mark.parametrize("renamer", ["a", "b"])
def test_a_fact_renamed_in_obsidian_and_superseded_elsewhere_stays_one_file(pair: tuple[Vault, Vault],
                                                                          renamer: str) -> None:
    a, b = pair
    fid = a.add_fact("Users are stored in Postgres.", topics=["project-alpha"], id="fact-db").record.id
    sync(a)
    sync(b)
    rel = fact_path(a.root, fid)
    person, agent = (a, b) if renamer == "a" else (b, a)
    readable = str(Path(rel).parent / "Users in Postgres.md")
    text = (person.root / rel).read_text(encoding="utf-8").replace("in Postgres.", "in Postgres 16.")
    (person.root / rel).unlink()
    (person.root / readable).write_text(text, encoding="utf-8")  # an Obsidian edit and rename
    run_git(person.root, "add", "-A")
    run_git(person.root, "commit", "-q", "-m", "vault backup")
    new = agent.supersede_fact(fid, "Users are stored in MySQL.", reason="migrated").record.id
    sync(a)
    sync(b)
    sync(a)
    for v in (a, b):
        files = run_git(v.root, "ls-files", "facts").splitlines()
        assert rel not in files and readable in files  # one file of the id, under the person's name
        old = parse_record((v.root / readable).read_text(encoding="utf-8"), readable)
        assert old.status == "superseded" and old.superseded_by == new  # the agent's supersession
        assert "Postgres 16." in old.body  # the person's edit
        assert check_vault(v).errors == []
    assert run_git(a.root, "rev-parse", "HEAD^{tree}") == run_git(b.root, "rev-parse", "HEAD^{tree}")


def test_a_sync_after_a_git_reset_says_what_the_reset_left_off_the_branch(pair: tuple[Vault, Vault]) -> None:
    """Unpushed am commits dropped by git reset --hard: the sync (a no-op, answered before click) said nothing."""
    a, _ = pair
    for i in range(2):
        a.add_fact(f"Not pushed {i}.", topics=["project-alpha"], id=f"fact-unpushed-{i}")
    run_git(a.root, "reset", "-q", "--hard", "HEAD~2")

    def am_sync() -> subprocess.CompletedProcess[str]:
        return subprocess.run([PYTHON, "-m", "am.cli.entry", "--vault", str(a.root), "sync"], capture_output=True,
                              text=True, env=subprocess_env())

    proc = am_sync()
    assert proc.returncode == 0, proc.stderr
    assert "warning: 2 am commits left main in a git reset" in proc.stderr and "am recover --apply" in proc.stderr
    ok = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(a.root), "recover", "--apply"],
                        capture_output=True, text=True, env=subprocess_env())
    assert ok.returncode == 0, ok.stderr
    proc = am_sync()
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    assert {"fact-unpushed-0", "fact-unpushed-1"} <= ids_in(a.root, "origin/main")
