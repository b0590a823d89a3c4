"""One pack per batch, and the merging of small packs (am/git/formats/packs.py), checked with the git CLI.

git itself is the oracle: ``git verify-pack`` re-reads every pack am wrote or
merged, ``git cat-file`` reads objects back, ``git fsck --strict`` checks the
whole repository.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path, PurePosixPath

import pygit2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from am.git import Change, GitStore
from am.git.coord.group import Request
from am.git.formats import packs
from am.git.formats.packs import _geometric_split, _ofs_distance, _read_distance, make_delta, stage_pack, tidy

from conftest import PYTHON, fsck_clean, run_git, subprocess_env

WHO = ("Test Person", "person@example.com")


@pytest.fixture
def store(tmp_path: Path) -> GitStore:
    return GitStore.init(tmp_path / "v")


def _pack_names(root: Path) -> list[str]:
    return sorted(n[:-5] for n in os.listdir(root / ".git" / "objects" / "pack") if n.endswith(".pack"))


def _loose_count(root: Path) -> int:
    return int(next(line.split()[1] for line in run_git(root, "count-objects", "-v").splitlines()
                    if line.startswith("count:")))


def _verify_every_pack(root: Path) -> None:
    for name in _pack_names(root):
        run_git(root, "verify-pack", str(root / ".git" / "objects" / "pack" / f"{name}.idx"))


def _commit(store: GitStore, n: int) -> str:
    path = PurePosixPath(f"facts/2026/01/{n % 28 + 1:02d}/f{n}.md")
    with store.write_lock():
        return store.commit([Change(path, f"fact {n}\n".encode())], message=f"fact {n}\n", author=WHO)


def test_a_staged_pack_is_one_git_reads_back_byte_for_byte(store: GitStore) -> None:
    rng = random.Random(7)
    datas = [b"", b"x", b"fifteen bytes!!", b"sixteen bytes!!!", bytes(rng.randrange(256) for _ in range(70_000)),
             "一个用中文写的事实。\n".encode()]
    objects = [(pygit2.hash(d).raw, 3, d) for d in datas]  # 3: blob
    pack_dir = store.gitdir / "objects" / "pack"
    pending = stage_pack(pack_dir, objects, sync=True)
    assert _pack_names(store.root) == []  # nothing visible before install
    pending.install(sync=True)
    assert _pack_names(store.root) == [pending.name]
    verbose = run_git(store.root, "verify-pack", "-v", str(pack_dir / f"{pending.name}.idx"))
    assert f"non delta: {len(datas)} objects" in verbose
    for data in datas:
        read = subprocess.run(["git", "-C", str(store.root), "cat-file", "blob", str(pygit2.hash(data))],
                              capture_output=True, check=True)
        assert read.stdout == data
    assert not [n for n in os.listdir(pack_dir) if n.startswith("tmp_")]


def _versions() -> list[tuple[bytes, bytes]]:
    """(source, target) pairs a delta must get right: edits anywhere, long runs, nothing in common."""
    rng = random.Random(11)
    big = rng.randbytes(150_000)  # common runs over 64 KiB: more than one copy instruction
    text = b"".join(b"100644 f-%05d.md\0" % i + rng.randbytes(20) for i in range(200))
    return [
        (text, text[:2000] + b"100644 f-new.md\0" + bytes(20) + text[2000:]),  # an entry added mid-tree
        (text, b"100644 a.md\0" + bytes(20) + text),  # at the start
        (text, text + b"100644 z.md\0" + bytes(20)),  # at the end
        (text, text[:1000] + text[1037:]),  # an entry removed
        (big, big[:70_000] + rng.randbytes(300) + big[70_000:]),  # an insert longer than one instruction
        (big, big[:-1] + b"!"),
        (text + text, text + b"x" + text),  # a repeated source: prefix and suffix overlap
        (rng.randbytes(3000), rng.randbytes(3000)),  # nothing in common: stored whole
    ]


def test_stored_deltas_are_read_back_by_git_byte_for_byte(store: GitStore) -> None:
    pack_dir = store.gitdir / "objects" / "pack"
    objects: dict[bytes, bytes] = {}  # a pack holds each object once (as libgit2's writes to the sink do)
    bases, wanted = {}, []
    for source, target in _versions():
        s_id, t_id = pygit2.hash(source).raw, pygit2.hash(target).raw
        objects.setdefault(s_id, source)
        objects[t_id] = target
        bases[t_id] = s_id
        wanted.append(target)
    pending = stage_pack(pack_dir, [(raw, 3, data) for raw, data in objects.items()], sync=False, bases=bases)
    pending.install(sync=False)
    verbose = run_git(store.root, "verify-pack", "-v", str(pack_dir / f"{pending.name}.idx"))
    assert f"chain length = 1: {len(wanted) - 1} objects" in verbose  # all but the unrelated pair
    for data in wanted:
        read = subprocess.run(["git", "-C", str(store.root), "cat-file", "blob", str(pygit2.hash(data))],
                              capture_output=True, check=True)
        assert read.stdout == data


def _apply_delta(source: bytes, delta: bytes) -> bytes:
    """Git's patch-delta, as its documentation describes the format (an oracle for make_delta's corner cases)."""
    def size(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = delta[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value, at
    source_size, at = size(0)
    target_size, at = size(at)
    assert source_size == len(source)
    out = bytearray()
    while at < len(delta):
        op = delta[at]
        at += 1
        if op & 0x80:
            offset = length = 0
            for i in range(4):
                if op & (1 << i):
                    offset |= delta[at] << (8 * i)
                    at += 1
            for i in range(3):
                if op & (0x10 << i):
                    length |= delta[at] << (8 * i)
                    at += 1
            out += source[offset:offset + (length or 0x10000)]
        else:
            assert op, "opcode 0 is reserved"
            out += delta[at:at + op]
            at += op
    assert len(out) == target_size
    return bytes(out)


@given(st.binary(max_size=300), st.binary(max_size=300), st.binary(max_size=300), st.binary(max_size=300))
def test_a_delta_rebuilds_its_target(head: bytes, old: bytes, new: bytes, tail: bytes) -> None:
    source, target = head + old + tail, head + new + tail
    assert _apply_delta(source, make_delta(source, target)) == target
    assert _apply_delta(target, make_delta(target, source)) == source


@given(st.integers(min_value=1, max_value=2**40))
def test_an_offset_delta_s_distance_reads_back(distance: int) -> None:
    encoded = _ofs_distance(distance)
    assert _read_distance(encoded + b"rest", 0) == (distance, len(encoded))


def test_a_batch_writes_each_folder_once_whole_then_as_deltas(store: GitStore) -> None:
    root = store.root
    for n in range(40):  # a day folder big enough (~1.5 KB of tree) to be worth a delta
        with store.write_lock():
            store.commit([Change(PurePosixPath(f"facts/2026/01/02/f{n:03d}.md"), f"fact {n}\n".encode())],
                         message=f"fact {n}\n", author=WHO)
    requests = [Request((Change(PurePosixPath(f"facts/2026/01/02/g{n:03d}.md"), f"more {n}\n".encode()),),
                        f"more {n}\n", WHO, None) for n in range(6)]
    before = set(_pack_names(root))
    with store.write_lock():
        store._commit_batch(requests)
    (batch_pack,) = set(_pack_names(root)) - before
    verbose = run_git(root, "verify-pack", "-v", str(root / ".git" / "objects" / "pack" / f"{batch_pack}.idx"))
    # Six versions of the day's folder: the first whole, each next a delta of the one before.
    for depth in range(1, 6):
        assert f"chain length = {depth}: 1 object" in verbose
    assert run_git(root, "ls-tree", "--name-only", "HEAD:facts/2026/01/02").split() == (
        [f"f{n:03d}.md" for n in range(40)] + [f"g{n:03d}.md" for n in range(6)])
    for n in range(6):
        assert run_git(root, "show", f"HEAD~{5 - n}:facts/2026/01/02/g{n:03d}.md") == f"more {n}\n"
    fsck_clean(root)


def test_a_discarded_pack_leaves_nothing(store: GitStore) -> None:
    pack_dir = store.gitdir / "objects" / "pack"
    pending = stage_pack(pack_dir, [(pygit2.hash(b"a").raw, 3, b"a")], sync=False)
    pending.discard()
    assert os.listdir(pack_dir) == []


def test_each_commit_of_am_lands_in_a_pack_and_no_loose_object_is_written(store: GitStore) -> None:
    for n in range(5):
        _commit(store, n)
    root = store.root
    assert _loose_count(root) == 0
    assert len(_pack_names(root)) == 5  # one per write: fewer than TIDY_AT, so none merged yet
    assert run_git(root, "rev-list", "--count", "HEAD").strip() == "5"
    assert run_git(root, "show", "HEAD:facts/2026/01/05/f4.md") == "fact 4\n"
    _verify_every_pack(root)
    fsck_clean(root)


def test_small_packs_are_merged_and_every_object_stays_readable(store: GitStore) -> None:
    root = store.root
    commits = [_commit(store, n) for n in range(60)]
    names = _pack_names(root)
    assert len(names) < 20, names  # 60 writes, 60 packs written, merged once TIDY_AT of them pile up
    sizes = sorted((root / ".git" / "objects" / "pack" / f"{n}.pack").stat().st_size for n in names)
    assert len(sizes) < 60
    _verify_every_pack(root)
    fsck_clean(root)
    assert run_git(root, "rev-list", "HEAD").split() == commits[::-1]
    for n in range(60):
        assert run_git(root, "show", f"HEAD:facts/2026/01/{n % 28 + 1:02d}/f{n}.md") == f"fact {n}\n"


def test_a_merge_copies_git_s_own_delta_packs_intact_and_leaves_kept_packs_alone(store: GitStore) -> None:
    root = store.root
    # A pack written by git with deltas: similar large files, repacked.
    text = "\n".join(f"line {i}: the cache keeps sessions for 30 minutes" for i in range(400))
    for k in range(4):
        (root / "notes.md").write_text(text + f"\nedit {k}\n")
        run_git(root, "add", "notes.md")
        run_git(root, "commit", "-q", "-m", f"edit {k}")
    run_git(root, "repack", "-a", "-d", "-f", "-q")
    git_pack = _pack_names(root)
    assert len(git_pack) == 1
    verbose = run_git(root, "verify-pack", "-v", str(root / ".git" / "objects" / "pack" / f"{git_pack[0]}.idx"))
    assert "chain length = 1" in verbose  # git did write deltas
    kept = root / ".git" / "objects" / "pack" / f"{git_pack[0]}.keep"
    kept.write_text("")
    for n in range(8):
        _commit(store, n)
    assert git_pack[0] in _pack_names(root)  # a .keep pack is never merged away
    kept.unlink()
    for n in range(8, 40):
        _commit(store, n)
    assert git_pack[0] not in _pack_names(root)  # merged with am's packs, its deltas copied as they were
    _verify_every_pack(root)
    fsck_clean(root)
    assert run_git(root, "show", "HEAD:notes.md").endswith("edit 3\n")
    for k in range(4):  # the versions git stored as deltas of each other
        assert run_git(root, "show", f"HEAD~{43 - k}:notes.md").endswith(f"edit {k}\n")


def test_packs_sharing_an_object_are_merged_holding_it_once(store: GitStore) -> None:
    pack_dir = store.gitdir / "objects" / "pack"
    shared = (pygit2.hash(b"shared").raw, 3, b"shared")
    for k in range(6):
        own = f"own {k}".encode()
        objects = [(pygit2.hash(own).raw, 3, own)] + ([shared] if k in (0, 1, 4) else [])
        stage_pack(pack_dir, objects, sync=False).install(sync=False)
    assert tidy(pack_dir) == 6
    (merged,) = _pack_names(store.root)
    verbose = run_git(store.root, "verify-pack", "-v", str(pack_dir / f"{merged}.idx"))
    assert "non delta: 7 objects" in verbose  # git's verify-pack refuses a pack holding an object twice
    for k in range(6):
        assert run_git(store.root, "cat-file", "blob", str(pygit2.hash(f"own {k}".encode()))) == f"own {k}"
    assert run_git(store.root, "cat-file", "blob", str(pygit2.hash(b"shared"))) == "shared"


def test_a_delta_pack_sharing_a_delta_base_with_another_is_merged_its_deltas_pointed_at_the_copy_kept(
        store: GitStore) -> None:
    root = store.root
    pack_dir = store.gitdir / "objects" / "pack"
    rng = random.Random(3)
    # git packs versions of a text as offset deltas, and noise that makes its pack the largest (merged last).
    text = "\n".join(f"line {i}: the cache keeps sessions for 30 minutes" for i in range(300))
    ids = [run_git(root, "hash-object", "-w", "--stdin", input=text + f"\nversion {k}\n").strip() for k in range(3)]
    noise = run_git(root, "hash-object", "-w", "--stdin", input="".join(rng.choice("abcdefgh") for _ in range(40_000)))
    run_git(root, "pack-objects", "-q", "--delta-base-offset", str(pack_dir / "pack"),
            input="\n".join([*ids, noise.strip()]) + "\n")
    (git_pack,) = _pack_names(root)
    bases = {}
    for line in run_git(root, "verify-pack", "-v", str(pack_dir / f"{git_pack}.idx")).splitlines():
        fields = line.split()
        if len(fields) == 7 and fields[0] in ids:
            bases[fields[0]] = fields[6]  # id, type, size, size in pack, offset, depth, base
    assert bases, "git wrote no deltas"
    shared = next(iter(bases.values()))  # a delta base: the copy merged first (am's) becomes the base
    data = subprocess.run(["git", "-C", str(root), "cat-file", "blob", shared], capture_output=True,
                          check=True).stdout
    for k in range(6):  # am packs smaller than git's, so merged before it; one holds the base git's deltas use
        own = f"own {k} ".encode() + rng.randbytes(4000)
        objects = [(pygit2.hash(own).raw, 3, own)] + ([(bytes.fromhex(shared), 3, data)] if k == 0 else [])
        stage_pack(pack_dir, objects, sync=False).install(sync=False)
    assert tidy(pack_dir) == 7
    (merged,) = _pack_names(root)
    verbose = run_git(root, "verify-pack", "-v", str(pack_dir / f"{merged}.idx"))  # checks every CRC and delta
    assert f"chain length = 1: {len(bases)} object" in verbose  # git's deltas kept, not expanded
    for k, oid in enumerate(ids):
        assert run_git(root, "cat-file", "blob", oid).endswith(f"version {k}\n")
    run_git(root, "fsck", "--strict")  # no branch yet: every object is dangling, none may be broken


def test_merging_is_left_to_git_when_a_multi_pack_index_exists(store: GitStore) -> None:
    for n in range(3):
        _commit(store, n)
    run_git(store.root, "multi-pack-index", "write")
    names = _pack_names(store.root)
    assert tidy(store.gitdir / "objects" / "pack") == 0
    assert _pack_names(store.root) == names


@pytest.mark.parametrize("marker", [".keep", ".mtimes", ".promisor"])
def test_kept_cruft_and_promisor_packs_are_never_merged(store: GitStore, marker: str) -> None:
    pack_dir = store.gitdir / "objects" / "pack"
    names = []
    for k in range(5):
        pending = stage_pack(pack_dir, [(pygit2.hash(f"o{k}".encode()).raw, 3, f"o{k}".encode())], sync=False)
        pending.install(sync=False)
        names.append(pending.name)
    (pack_dir / f"{names[0]}{marker}").write_bytes(b"")
    assert tidy(pack_dir) == 4
    assert names[0] in _pack_names(store.root)
    assert len(_pack_names(store.root)) == 2


def test_stale_temporary_pack_files_are_removed_fresh_ones_kept(store: GitStore) -> None:
    pack_dir = store.gitdir / "objects" / "pack"
    old = stage_pack(pack_dir, [(pygit2.hash(b"old").raw, 3, b"old")], sync=False)
    young = stage_pack(pack_dir, [(pygit2.hash(b"young").raw, 3, b"young")], sync=False)
    past = time.time() - 2 * 3600
    for tmp in (old.tmp_pack, old.tmp_idx):
        os.utime(tmp, (past, past))
    tidy(pack_dir)
    assert not old.tmp_pack.exists() and not old.tmp_idx.exists()
    assert young.tmp_pack.exists() and young.tmp_idx.exists()


def test_a_reader_opened_before_a_merge_still_reads_every_object(store: GitStore) -> None:
    reader = pygit2.Repository(str(store.root))
    commits = [_commit(store, n) for n in range(packs.TIDY_AT - 1)]
    for c in commits[:3]:
        assert reader[c].message  # this handle has opened some of the packs
    assert len(_pack_names(store.root)) == packs.TIDY_AT - 1
    commits.append(_commit(store, packs.TIDY_AT - 1))  # the write that makes the merge worth it
    assert len(_pack_names(store.root)) == 1
    for n, c in enumerate(commits):
        commit = reader[c].peel(pygit2.Commit)
        assert commit.message == f"fact {n}\n"
        assert reader[commit.tree.id].peel(pygit2.Tree)["facts"].type_str == "tree"


@pytest.mark.parametrize(("sizes", "split"), [
    ([], 0),
    ([10], 0),
    ([1, 1], 2),                 # two equal packs: merge both
    ([1, 4, 16], 0),             # already a progression
    ([1, 1, 4, 16], 2),          # the two small ones merge (2 is at most half of 4)
    ([1, 1, 1, 4, 16], 4),       # 3 small ones make 3 > 4/2: the 4 joins
    ([1, 1, 1, 1, 1, 1, 1, 8, 24, 100], 9),  # 7 + 8 + 24 = 39: more than half of 100 is not
])
def test_geometric_split_follows_git_repack_geometric_2(sizes: list[int], split: int) -> None:
    assert _geometric_split(sizes) == split


def test_without_syncfs_the_pack_and_its_index_are_fsynced_before_they_are_renamed(
        store: GitStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from am.git import common

    monkeypatch.setattr(common, "_syncfs", None)
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    _commit(store, 0)
    assert any(n.startswith("tmp_pack_am_") for n in synced), synced
    assert any(n.startswith("tmp_idx_am_") for n in synced), synced
    assert "pack" in synced  # the folder, once both are renamed
    assert _loose_count(store.root) == 0
    fsck_clean(store.root)


def test_writers_in_separate_processes_get_their_packs_merged(alpha: object, vault_path: Path) -> None:
    # Each `am fact add` is a process of its own: the merge is decided from the pack folder, not a count kept in memory,
    # and a process finishes a merge it started before it exits.
    for n in range(packs.TIDY_AT + 1):
        proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault_path), "fact", "add",
                               f"Fact {n} written by its own process.", "--topic", "project-alpha"],
                              env=subprocess_env(), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    names = _pack_names(vault_path)
    assert len(names) < packs.TIDY_AT, names
    assert not [n for n in os.listdir(vault_path / ".git" / "objects" / "pack") if n.startswith("tmp_")]
    _verify_every_pack(vault_path)
    fsck_clean(vault_path)
    assert "Fact 8 written" in run_git(vault_path, "log", "-1", "--format=%s")


def test_a_linked_worktree_writes_its_packs_into_the_main_repository(tmp_path: Path) -> None:
    main = tmp_path / "main"
    run_git(tmp_path, "init", "-q", "-b", "main", str(main))
    run_git(main, "commit", "-q", "--allow-empty", "-m", "start")
    run_git(main, "worktree", "add", "-q", str(tmp_path / "side"), "-b", "side")
    side = GitStore.open(tmp_path / "side")
    commits = [_commit(side, n) for n in range(3)]
    assert not (side.gitdir / "objects").exists()  # the worktree's own git folder holds no objects
    assert len(_pack_names(main)) == 3
    assert run_git(main, "rev-list", "side").split()[:3] == commits[::-1]
    assert run_git(main, "show", "side:facts/2026/01/03/f2.md") == "fact 2\n"
    fsck_clean(main)
