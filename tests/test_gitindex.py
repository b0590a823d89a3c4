"""am's splicing writer of Git's index, checked against the git CLI (the independent oracle)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from am.git.formats.gitindex import GitIndex, IndexUnsupported
from am.git.light import hash_blob

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@e"}


def git(repo: Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=ENV,
                          input=data).stdout.decode()


def make_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    return repo


def stage(repo: Path, index: GitIndex, rel: str, text: str) -> None:
    """Write a file and set its entry the way am does (blob written with git hash-object -w)."""
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    oid = git(repo, "hash-object", "-w", rel).strip()
    index.set(rel, bytes.fromhex(oid), path.stat())


FILES = {"a.md": "a\n", "facts/2026/11/29/f-1.md": "one\n", "facts/2026/11/29/f-2.md": "two\n",
         "facts/2026/11/30/f-3.md": "three\n", "topics/t.md": "t\n", "z/deep/er/x.md": "x\n"}


def test_parse_and_write_back_git_s_own_index_byte_for_byte(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, FILES)
    git(repo, "write-tree")  # git keeps the TREE extension after a commit
    data = (repo / ".git/index").read_bytes()
    index = GitIndex.parse(data)
    assert index.tree is not None and len(index) == len(FILES)
    assert index.to_bytes() == data
    assert index.staged("topics/t.md") == hash_blob(b"t\n")
    assert index.staged("nope.md") is None


def test_changed_entries_match_what_git_add_writes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, FILES)
    twin = tmp_path / "twin"
    subprocess.run(["git", "clone", "-q", str(repo), str(twin)], check=True)
    index, _ = GitIndex.read(repo / ".git/index")
    changes = {"facts/2026/11/29/f-1.md": "one, changed\n", "facts/2026/12/01/f-4.md": "new folder\n",
               "b.md": "new at the top\n", "facts/2026/11/29/f-0.md": "sorts first\n"}
    for rel, text in changes.items():
        stage(repo, index, rel, text)
        (twin / rel).parent.mkdir(parents=True, exist_ok=True)
        (twin / rel).write_text(text)
        git(twin, "add", rel)
    (repo / "z/deep/er/x.md").unlink()
    index.remove("z/deep/er/x.md")
    git(twin, "rm", "-q", "z/deep/er/x.md")
    tmp = repo / ".git/index.new"
    index.write(tmp)
    os.replace(tmp, repo / ".git/index")
    assert git(repo, "ls-files", "-s") == git(twin, "ls-files", "-s")
    # The cached trees were invalidated along every changed path: write-tree agrees with git's own index.
    assert git(repo, "write-tree") == git(twin, "write-tree")
    # Stat data right: without refreshing, git sees no file in the work tree differ from its entry.
    assert git(repo, "diff-files") == ""
    assert git(repo, "status", "--porcelain") == git(twin, "status", "--porcelain")
    git(repo, "fsck", "--strict")
    # Our file reads back to the same entries.
    again = GitIndex.parse((repo / ".git/index").read_bytes())
    assert again.paths == index.paths


def test_cached_tree_stays_valid_off_the_changed_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, FILES)
    git(repo, "write-tree")
    index, _ = GitIndex.read(repo / ".git/index")
    stage(repo, index, "facts/2026/11/29/f-1.md", "changed\n")
    assert index.tree is not None
    assert index.tree.count == -1
    by_name = {c.name: c for c in index.tree.children}
    assert by_name[b"facts"].count == -1 and by_name[b"topics"].count >= 0 and by_name[b"z"].count >= 0
    days = {c.name: c for c in by_name[b"facts"].children[0].children[0].children}
    assert days[b"29"].count == -1 and days[b"30"].count >= 0


def test_a_file_replacing_a_folder_drops_its_cached_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, FILES)
    git(repo, "write-tree")
    index, _ = GitIndex.read(repo / ".git/index")
    index.remove("z/deep/er/x.md")
    (repo / "z/deep/er/x.md").unlink()
    for folder in ("z/deep/er", "z/deep"):
        (repo / folder).rmdir()
    (repo / "z/deep").write_text("now a file\n")
    stage(repo, index, "z/deep", "now a file\n")
    tmp = repo / ".git/index.new"
    index.write(tmp)
    os.replace(tmp, repo / ".git/index")
    tree = git(repo, "write-tree").strip()
    assert git(repo, "ls-tree", "-r", "--name-only", tree).split() == sorted(
        [p for p in FILES if not p.startswith("z/")] + ["z/deep"])


def test_racily_clean_entry_whose_file_changed_is_smudged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, FILES)
    index, _ = GitIndex.read(repo / ".git/index")
    stage(repo, index, "a.md", "same size 1\n")
    mtime = (repo / "a.md").stat().st_mtime_ns
    # Someone rewrites the file with the same size and time: only the content differs.
    (repo / "a.md").write_text("same size 2\n")
    os.utime(repo / "a.md", ns=(mtime, mtime))
    assert index.smudge_racy(repo, mtime) == 1
    tmp = repo / ".git/index.new"
    index.write(tmp)
    os.replace(tmp, repo / ".git/index")
    assert git(repo, "status", "--porcelain") == "MM a.md\n"  # staged one version, the work tree has another


def test_racily_clean_entry_that_still_matches_is_kept(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, FILES)
    index, _ = GitIndex.read(repo / ".git/index")
    stage(repo, index, "a.md", "fine\n")
    assert index.smudge_racy(repo, (repo / "a.md").stat().st_mtime_ns) == 0
    assert index.racy == {b"a.md"}
    assert index.smudge_racy(repo, (repo / "a.md").stat().st_mtime_ns + 1) == 0
    assert index.racy == set()  # older than the index now: stat data is enough


@pytest.mark.parametrize("setup", [
    ["update-index", "--index-version", "4"],
    ["update-index", "--split-index"],
])
def test_formats_it_does_not_handle_are_refused(tmp_path: Path, setup: list[str]) -> None:
    repo = make_repo(tmp_path, FILES)
    git(repo, *setup)
    with pytest.raises(IndexUnsupported):
        GitIndex.parse((repo / ".git/index").read_bytes())


def test_conflict_entries_are_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, FILES)
    blob = git(repo, "hash-object", "-w", "a.md").strip()
    git(repo, "update-index", "--index-info", data=f"100644 {blob} 1\tc.md\n100644 {blob} 2\tc.md\n".encode())
    with pytest.raises(IndexUnsupported):
        GitIndex.parse((repo / ".git/index").read_bytes())


def test_a_torn_or_damaged_file_is_an_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, FILES)
    data = (repo / ".git/index").read_bytes()
    for bad in (data[:-7], data[:40] + b"x" + data[41:], b""):
        with pytest.raises(ValueError):
            GitIndex.parse(bad)


def test_an_index_written_with_skip_hash_is_read(tmp_path: Path) -> None:
    """git >= 2.40 with index.skipHash (feature.manyFiles) leaves the trailer zero."""
    repo = make_repo(tmp_path, FILES)
    data = (repo / ".git/index").read_bytes()
    index = GitIndex.parse(data[:-20] + bytes(20))
    assert index.paths == GitIndex.parse(data).paths
    assert index.to_bytes() == data  # am always writes the real hash, which git accepts either way


def test_missing_index_reads_as_empty(tmp_path: Path) -> None:
    index, mtime = GitIndex.read(tmp_path / "index")
    assert len(index) == 0 and mtime == 0
    assert GitIndex.parse(index.to_bytes()).paths == []


names = st.text(alphabet="abcz-._/é中", min_size=1, max_size=12).filter(
    lambda s: all(p not in ("", ".", "..", ".git") for p in s.split("/")))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.booleans(), names), min_size=1, max_size=12))
def test_random_edits_agree_with_git(tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[bool, str]]) -> None:
    tmp = tmp_path_factory.mktemp("h")
    repo = make_repo(tmp, {"seed.md": "s\n"})
    index, _ = GitIndex.read(repo / ".git/index")
    model: dict[str, str] = {"seed.md": hash_blob(b"s\n")}
    for n, (add, name) in enumerate(ops):
        if any(name.startswith(p + "/") or p.startswith(name + "/") for p in model if p != name):
            continue  # a file and a folder of one name: not a state git allows
        if add:
            text = f"{n}\n"
            full = repo / name
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(text)
            blob = git(repo, "hash-object", "-w", "--", name).strip()
            index.set(name, bytes.fromhex(blob), full.stat())
            model[name] = blob
        elif name in model:
            index.remove(name)
            (repo / name).unlink()
            for parent in (repo / name).parents:
                if parent == repo or any(parent.iterdir()):
                    break
                parent.rmdir()
            del model[name]
    target = repo / ".git/index.new"
    index.write(target)
    os.replace(target, repo / ".git/index")
    listed = git(repo, "ls-files", "-s", "-z").split("\0")
    got = {line.split("\t", 1)[1]: line.split()[1] for line in listed if line}
    assert got == model


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from(["set", "remove", "edit"]), st.integers(0, 29)), min_size=1,
                    max_size=25))
def test_kept_blocks_match_a_fresh_join_after_every_write(tmp_path_factory: pytest.TempPathFactory,
                                                          ops: list[tuple[str, int]]) -> None:
    """Consecutive writes reuse joined blocks of entries; each file must equal one written from scratch."""
    import am.git.formats.gitindex as gitindex

    tmp = tmp_path_factory.mktemp("b")
    names = [f"d{n % 4}/f{n:02d}.md" for n in range(30)]
    repo = make_repo(tmp, {name: "s\n" for name in names[::2]})
    model = {name: hash_blob(b"s\n") for name in names[::2]}
    kept = gitindex._BLOCK, gitindex._HASH_ASIDE, gitindex._IOV_MAX
    # Many blocks from few entries, every write hashed on the helper thread, writev in small batches.
    gitindex._BLOCK, gitindex._HASH_ASIDE, gitindex._IOV_MAX = 3, 0, 2
    try:
        index, _ = GitIndex.read(repo / ".git/index")
        for n, (op, which) in enumerate(ops):
            name = names[which]
            if op == "set" or (op == "edit" and name in model):
                (repo / name).parent.mkdir(exist_ok=True)
                (repo / name).write_text(f"{n}\n")
                blob = git(repo, "hash-object", "-w", "--", name).strip()
                index.set(name, bytes.fromhex(blob), (repo / name).stat())
                model[name] = blob
            elif op == "remove" and name in model:
                index.remove(name)
                (repo / name).unlink()
                del model[name]
            index.smudge_racy(repo, 0)
            data = index.to_bytes()
            fresh = GitIndex.parse(data)
            assert fresh.to_bytes() == data  # a parse has no kept blocks: a join from scratch
            target = repo / ".git/index.new"
            index.write(target)
            assert target.read_bytes() == data
            os.replace(target, repo / ".git/index")
            listed = git(repo, "ls-files", "-s", "-z").split("\0")
            assert {line.split("\t", 1)[1]: line.split()[1] for line in listed if line} == model
        git(repo, "diff-files", "--quiet")  # stat data and smudged entries agree with the files
    finally:
        gitindex._BLOCK, gitindex._HASH_ASIDE, gitindex._IOV_MAX = kept


def test_index_replaced_by_git_between_staging_and_install_keeps_both(tmp_path: Path, monkeypatch:
                                                                       pytest.MonkeyPatch) -> None:
    """am stages Git's index before its flush; a `git add` landing before the branch moves must survive."""
    from am.git.staging import Staging
    from am.vault import Vault

    monkeypatch.setenv("AM_HOME", str(tmp_path / "home"))
    root = tmp_path / "vault"
    vault = Vault.init(root, name="t", actor="tester", register=False)
    vault.add_topic(title="Alpha", kind="project", id="project-alpha")
    (root / "mine.txt").write_text("a person's staged file\n")
    original = Staging.lock_index_for_move

    def git_add_first(self: Staging) -> None:
        git(root, "add", "mine.txt")  # git replaces .git/index while am's staged copy waits
        original(self)  # then am takes the index lock and moves the branch

    monkeypatch.setattr(Staging, "lock_index_for_move", git_add_first)
    result = vault.add_fact("staged around a git add", topics=["project-alpha"])
    monkeypatch.setattr(Staging, "lock_index_for_move", original)
    fact = str(result.paths[0])
    assert git(root, "diff", "--cached", "--name-only") == "mine.txt\n"  # theirs kept, ours matches HEAD
    assert git(root, "ls-files", "-s", fact).split()[1] == git(root, "rev-parse", f"HEAD:{fact}").strip()
    assert git(root, "diff-files") == ""
    vault.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from(["set", "remove"]), st.integers(0, 59)), max_size=8),
       racy_from=st.integers(0, 39))
def test_a_read_taking_blocks_over_from_the_previous_index_equals_a_full_parse(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        ops: list[tuple[str, int]], racy_from: int) -> None:
    """Another writer changed the index: the blocks this process still holds are taken over, the rest parsed."""
    import am.git.formats.gitindex as gitindex

    monkeypatch.setattr(gitindex, "_BLOCK", 4)  # many blocks from few entries
    tmp = tmp_path_factory.mktemp("p")
    names = [f"d{n % 3}/f{n:02d}.md" for n in range(60)]
    repo = make_repo(tmp, {name: f"{name}\n" for name in names[::3]})
    data0 = (repo / ".git/index").read_bytes()
    previous = GitIndex.parse(data0, 0)  # time 0: every entry may be racily clean
    other = GitIndex.parse(data0, 0)  # another process's copy, which it edits and writes
    for n, (op, which) in enumerate(ops):
        path = repo / names[which]
        if op == "set":
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"{n}\n")
            other.set(names[which], bytes.fromhex(hash_blob(path.read_bytes())), path.stat())
        else:
            other.remove(names[which])
    data1 = other.to_bytes()
    times = sorted(os.stat(repo / name).st_mtime_ns for name in names if (repo / name).exists())
    mtime = times[min(racy_from, len(times) - 1)]  # entries at least this new are racily clean in the new file
    full = GitIndex.parse(data1, mtime)
    taken = GitIndex.parse(data1, mtime, previous=(previous, 0))
    assert taken.paths == full.paths
    assert taken.entries == full.entries
    assert taken.racy == full.racy
    assert taken.to_bytes() == data1
    if not ops:
        assert len(taken._blocks) == len(previous.entries) // 4  # nothing changed: every whole block taken over


def test_blocks_are_taken_up_to_the_first_change_and_never_from_a_newer_index(tmp_path: Path) -> None:
    import am.git.formats.gitindex as gitindex

    names = [f"facts/2026/11/{day:02d}/f-{n}.md" for day in range(1, 29) for n in range(40)]
    repo = make_repo(tmp_path, {name: "x\n" for name in names})
    data0 = (repo / ".git/index").read_bytes()
    previous = GitIndex.parse(data0, 10)
    stage(repo, other := GitIndex.parse(data0, 10), "facts/2026/11/30/f-new.md", "new\n")  # today's folder: the end
    data1 = other.to_bytes()
    taken = GitIndex.parse(data1, 20, previous=(previous, 10))
    assert len(taken._blocks) == len(names) // gitindex._BLOCK  # all but the entries after the new one
    assert taken.to_bytes() == data1 == GitIndex.parse(data1, 20).to_bytes()
    older = GitIndex.parse(data1, 5, previous=(previous, 10))  # a file older than the one remembered: parse it all
    assert older._blocks == [] and older.entries == taken.entries


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(st.integers(0, 39), min_size=1, max_size=12), min_size=1, max_size=5))
def test_a_batch_of_entries_set_at_once_agrees_with_git(tmp_path_factory: pytest.TempPathFactory,
                                                        batches: list[list[int]]) -> None:
    """set_many merges new paths in one pass: entries, kept blocks and the cached tree all as git sees them."""
    from am.git.formats import gitindex

    tmp = tmp_path_factory.mktemp("m")
    names = [f"d{n % 3}/{'s/' if n % 5 == 0 else ''}f{n:02d}.md" for n in range(40)]
    repo = make_repo(tmp, {name: "s\n" for name in names[::3]})
    git(repo, "write-tree")  # a TREE extension to invalidate
    model = {name: hash_blob(b"s\n") for name in names[::3]}
    kept = gitindex._BLOCK
    gitindex._BLOCK = 3  # many blocks from few entries
    try:
        index, _ = GitIndex.read(repo / ".git/index")
        for n, batch in enumerate(batches):
            items = []
            for k, which in enumerate(batch):  # a path twice in a batch: the later one wins
                name = names[which]
                (repo / name).parent.mkdir(parents=True, exist_ok=True)
                (repo / name).write_text(f"{n} {k}\n")
                blob = git(repo, "hash-object", "-w", "--", name).strip()
                items.append((name, bytes.fromhex(blob), (repo / name).stat()))
                model[name] = blob
            index.set_many(items)
            assert index.paths == sorted(index.paths) and len(index.paths) == len(set(index.paths))
            data = index.to_bytes()
            assert GitIndex.parse(data).to_bytes() == data  # kept blocks equal a join from scratch
            target = repo / ".git/index.new"
            index.write(target)
            os.replace(target, repo / ".git/index")
            listed = git(repo, "ls-files", "-s", "-z").split("\0")
            assert {line.split("\t", 1)[1]: line.split()[1] for line in listed if line} == model
            tree = git(repo, "write-tree").strip()  # uses the cached trees still marked valid
            listed = git(repo, "ls-tree", "-r", "-z", tree).split("\0")
            assert {line.split("\t", 1)[1]: line.split()[2] for line in listed if line} == model
            index, _ = GitIndex.read(repo / ".git/index")  # git's write-tree rewrote it
        git(repo, "diff-files", "--quiet")
    finally:
        gitindex._BLOCK = kept
