"""The cache: incremental updates equal a fresh rebuild, corruption is repaired, lookups go through it.

Each scenario changes the vault the way a person or Git would (the git CLI is
the independent actor), lets the cache catch up incrementally, and compares
everything it holds with a cache built from scratch in another folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from am.cache.index import Index, body_links, segment
from am.records.links import link_targets
from am.records.model import Fact
from am.records.codec import render_record
from am.cache.textseg import segment_for_index
from am.vault import Vault
from tests.conftest import run_git, subprocess_env


def fact_text(fid: str, body: str, *, topics: str = "[project-alpha]", status: str = "active",
              created: str = "2026-09-23T12:00:00+08:00") -> str:
    return (f"---\ntype: fact\nid: {fid}\ntopics: {topics}\nstatus: {status}\nconfidence: high\n"
            f"provenance: human\ncreated: {created}\n---\n{body}\n")


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def fresh_dump(vault_path: Path, tmp_path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Return the content of a cache built from scratch over a copy of the vault."""
    copy = tmp_path / f"copy-{len(list(tmp_path.glob('copy-*')))}"
    shutil.copytree(vault_path, copy, ignore=shutil.ignore_patterns("cache"))
    with Vault.open(copy) as v:
        index = Index.open(v)
        try:
            assert index.rebuilt == "missing"
            return index.dump()
        finally:
            index.close()


def assert_same_as_fresh(index: Index, vault_path: Path, tmp_path: Path) -> None:
    result = index.refresh()
    assert result.rebuilt is None
    mine, fresh = index.dump(), fresh_dump(vault_path, tmp_path)
    for table in fresh:
        assert mine[table] == fresh[table], table
    # The file count the rolling sweep sizes itself by is kept by deltas, not count(*).
    kept = index.conn.execute("SELECT value FROM meta WHERE key = 'files'").fetchone()
    assert kept is None or int(kept[0]) == len(mine["files"])


@pytest.fixture
def seeded(alpha: Vault, vault_path: Path, git: Callable[..., str]) -> Vault:
    """Return a vault with a topic, three facts (English, Chinese, Japanese) and a relation, committed."""
    alpha.add_topic(title="Redis", kind="tool", id="tool-redis", aliases=["缓存"])
    alpha.add_fact("Alpha keeps sessions in [[tool-redis]]; see [[ghost-topic]].", topics=["project-alpha"],
                   id="fact-sessions")
    alpha.add_fact("主分支上没有限流，查询走从库。", topics=["project-alpha"], id="fact-zh")
    alpha.add_fact("先週のデプロイで障害が発生した。", topics=["project-alpha"], id="fact-ja")
    alpha.add_relation("project-alpha", "depends-on", "tool-redis")
    return alpha


def test_lookup_and_lists_go_through_the_cache(seeded: Vault, vault_path: Path) -> None:
    cache = seeded.cache()
    assert cache is not None
    assert (vault_path / ".am/cache/index.sqlite").is_file()
    assert seeded.locate("fact-zh") == cache.lookup("fact-zh")
    assert str(seeded.locate("fact-zh")).endswith("/fact-zh.md")
    assert seeded.locate("nothing-here") is None
    assert [t.id for t in seeded.list_topics()] == ["project-alpha", "tool-redis"]
    assert {f.id for f in seeded.list_facts()} == {"fact-sessions", "fact-zh", "fact-ja"}
    assert [r.id for r in seeded.list_relations(topic="tool-redis")] == ["project-alpha--depends-on--tool-redis"]
    # The same records a scan of the files gives.
    scanned = sorted((str(p), r) for p, r in seeded.iter_records())
    assert sorted((str(p), r) for p, r in cache.records()) == scanned


def test_filtered_lists_narrow_in_the_cache_and_equal_a_scan_of_the_files(seeded: Vault) -> None:
    # list_facts/list_relations hand topic and status to the cache's SQL (a 20k-fact vault decoded every fact to
    # keep a few hundred); what they return must stay what filtering a scan of the files returns.
    seeded.add_topic(title="Billing", kind="project", id="project-billing")
    seeded.add_fact("Billing runs nightly.", topics=["project-billing", "tool-redis"], id="fact-billing")
    seeded.expire_fact("fact-ja", reason="no longer true")
    seeded.add_relation("project-billing", "depends-on", "tool-redis")
    facts = [r for _, r in seeded.iter_records() if isinstance(r, Fact)]
    for topic in (None, "project-alpha", "tool-redis", "project-billing", "nothing"):
        for status in (None, "active", "expired", "superseded"):
            want = sorted(f.id for f in facts if (topic is None or topic in f.topics)
                          and (status is None or f.status == status))
            assert sorted(f.id for f in seeded.list_facts(topic=topic, status=status)) == want, (topic, status)
    assert [f.id for f in seeded.list_facts(topic="tool-redis", status="active")] == ["fact-billing"]
    assert [r.id for r in seeded.list_relations(topic="tool-redis", status="active")] == [
        "project-alpha--depends-on--tool-redis", "project-billing--depends-on--tool-redis"]
    assert seeded.list_relations(topic="project-alpha", status="expired") == []


def test_own_write_updates_the_cache_in_the_same_step(seeded: Vault, git: Callable[..., str]) -> None:
    cache = seeded.cache()
    result = seeded.add_fact("Batch lookups landed.", topics=["project-alpha"], id="fact-batch")
    assert cache.head == result.commit == git("rev-parse", "HEAD").strip()
    assert cache.lookup("fact-batch") == result.paths[0]
    assert cache.refresh().checked == 0  # nothing left to do: the folder's new time was noted


def test_a_file_someone_saved_beside_ams_write_is_still_taken_in(seeded: Vault, vault_path: Path) -> None:
    cache = seeded.cache()
    first = seeded.add_fact("First of the day.", topics=["project-alpha"], id="fact-first")
    folder = vault_path / first.paths[0].parent
    # Saved by hand into the same folder, then am writes there too before any check.
    mine = Fact(id="fact-by-hand", topics=("project-alpha",), body="Written in Obsidian.\n",
                created="2026-11-01T10:00:00+00:00")
    (folder / "fact-by-hand.md").write_text(render_record(mine))
    seeded.add_fact("Second of the day.", topics=["project-alpha"], id="fact-second")
    # am noticed a name it did not know in that folder and left it to the next check.
    assert cache.refresh().changed == 1
    assert cache.lookup("fact-by-hand") is not None


def test_an_edit_between_ams_commit_and_its_cache_update_is_dirty(seeded: Vault, vault_path: Path, tmp_path: Path,
                                                                   git: Callable[..., str]) -> None:
    """The write hands the cache the blobs it committed; the file's own bytes still decide what is dirty."""
    cache = seeded.cache()
    hook = seeded.writer.after_write
    edited: list[str] = []

    def edit_then_update(commit: str, paths: object, base: object = None, **kw: object) -> None:
        rel = str(next(iter(paths)))  # type: ignore[call-overload]
        target = vault_path / rel
        target.write_text(target.read_text(encoding="utf-8").replace("landed", "was edited"), encoding="utf-8")
        edited.append(rel)
        assert kw.get("blobs") == {rel: git("rev-parse", f"HEAD:{rel}").strip()}
        hook(commit, paths, base, **kw)  # type: ignore[arg-type]

    seeded.writer.after_write = edit_then_update  # type: ignore[method-assign]
    seeded.add_fact("Batch lookups landed.", topics=["project-alpha"], id="fact-edited")
    assert cache.status().dirty == edited
    got = cache.get("fact-edited")
    assert got is not None and "was edited" in got[1].body
    assert_same_as_fresh(cache, vault_path, tmp_path)


def test_full_sweep_on_every_command_when_asked(seeded: Vault, vault_path: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AM_CACHE_SWEEP", "0")
    path = vault_path / str(seeded.locate("fact-ja"))
    path.write_text(path.read_text(encoding="utf-8").replace("障害", "遅延"), encoding="utf-8")
    assert_same_as_fresh(seeded.cache(), vault_path, tmp_path)


def test_unchanged_vault_reads_no_file(seeded: Vault) -> None:
    cache = seeded.cache()
    cache.refresh(full=True)
    result = cache.refresh()
    assert (result.checked, result.changed, result.removed) == (0, 0, 0)


def test_links_and_dangling(seeded: Vault) -> None:
    links = seeded.cache().links(source="fact-sessions")
    assert [(link.target, link.dangling) for link in links] == [("ghost-topic", True), ("tool-redis", False)]
    assert [link.source for link in seeded.cache().links(dangling=True)] == ["fact-sessions"]


# ---------------------------------------------------------------- incremental == fresh


def test_add_modify_delete_by_hand_commit(seeded: Vault, vault_path: Path, tmp_path: Path,
                                          git: Callable[..., str]) -> None:
    index = seeded.cache()
    write(vault_path, "facts/2026/09/24/fact-new.md", fact_text("fact-new", "A new one about [[tool-redis]]."))
    git("add", "-A")
    git("commit", "-qm", "add")
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert index.lookup("fact-new") is not None
    path = vault_path / str(seeded.locate("fact-zh"))
    path.write_text(path.read_text(encoding="utf-8").replace("没有限流", "已经限流"), encoding="utf-8")
    git("commit", "-qam", "modify")
    assert_same_as_fresh(index, vault_path, tmp_path)
    git("rm", "-q", str(seeded.locate("fact-ja")))
    git("commit", "-qm", "delete")
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert index.lookup("fact-ja") is None


def test_rename(seeded: Vault, vault_path: Path, tmp_path: Path, git: Callable[..., str]) -> None:
    index = seeded.cache()
    old = str(seeded.locate("fact-zh"))
    git("mv", old, "facts/moved-by-hand.md")
    git("commit", "-qm", "rename")
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert index.lookup("fact-zh") == PurePosixPath("facts/moved-by-hand.md")


def test_branch_switch_reset_and_merge(seeded: Vault, vault_path: Path, tmp_path: Path,
                                       git: Callable[..., str]) -> None:
    index = seeded.cache()
    git("switch", "-qc", "feat")
    write(vault_path, "facts/2026/10/01/fact-feat.md", fact_text("fact-feat", "Only on the branch."))
    git("add", "-A")
    git("commit", "-qm", "feat")
    assert_same_as_fresh(index, vault_path, tmp_path)
    git("switch", "-q", "main")
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert index.lookup("fact-feat") is None
    write(vault_path, "facts/2026/10/02/fact-main.md", fact_text("fact-main", "On main meanwhile."))
    git("add", "-A")
    git("commit", "-qm", "main")
    git("merge", "-q", "--no-edit", "feat")
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert index.lookup("fact-feat") is not None and index.lookup("fact-main") is not None
    git("reset", "-q", "--hard", "HEAD~3")
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert index.lookup("fact-feat") is None


def test_uncommitted_hand_edits(seeded: Vault, vault_path: Path, tmp_path: Path) -> None:
    index = seeded.cache()
    # A new, untracked file changes its folder: found without a sweep.
    write(vault_path, "facts/2026/09/23/fact-untracked.md", fact_text("fact-untracked", "Not committed."))
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert index.status().dirty == ["facts/2026/09/23/fact-untracked.md"]
    # Saved again, in place: a known dirty file is re-checked on every command.
    write(vault_path, "facts/2026/09/23/fact-untracked.md", fact_text("fact-untracked", "Edited again."))
    assert_same_as_fresh(index, vault_path, tmp_path)
    # An in-place edit of a clean tracked file is found by the rolling sweep
    # (which covers every file on every command in a vault this small).
    rel = str(seeded.locate("fact-sessions"))
    path = vault_path / rel
    path.write_text(path.read_text(encoding="utf-8").replace("keeps sessions", "keeps tokens"), encoding="utf-8")
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert rel in index.status().dirty
    # Deleted without Git.
    path.unlink()
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert index.lookup("fact-sessions") is None


def test_broken_file_is_listed_and_lookup_names_it(seeded: Vault, vault_path: Path, tmp_path: Path) -> None:
    write(vault_path, "topics/tool-broken.md", "---\ntype: topic\nid: [oops\n---\n")
    index = seeded.cache()
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert [p for p, _ in index.status().invalid] == ["topics/tool-broken.md"]
    from am.errors import InvalidRecordError

    with pytest.raises(InvalidRecordError):
        seeded.locate("tool-broken")


def test_another_process_sees_the_same(seeded: Vault, vault_path: Path) -> None:
    seeded.close()
    code = ("import sys; from am.vault import Vault\n"
            f"v = Vault.open({str(vault_path)!r}); print(v.cache().lookup('fact-ja')); v.close()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("fact-ja.md")


# ---------------------------------------------------------------- corruption


def _damage(db: Path, mode: str) -> None:
    data = db.read_bytes()
    if mode == "garbage-header":
        db.write_bytes(b"this is not sqlite" + data[18:])
    elif mode == "truncated":
        db.write_bytes(data[: len(data) // 2 + 100])
    elif mode == "flipped-page":
        page = 4096
        middle = (len(data) // page // 2) * page
        db.write_bytes(data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + page]) + data[middle + page:])
    elif mode == "zero-length":
        db.write_bytes(b"")
    else:
        raise AssertionError(mode)


@pytest.mark.parametrize("mode", ["garbage-header", "truncated", "flipped-page", "zero-length"])
def test_corrupt_file_is_moved_aside_and_rebuilt(seeded: Vault, vault_path: Path, tmp_path: Path,
                                                 mode: str) -> None:
    seeded.close()
    db = vault_path / ".am/cache/index.sqlite"
    _damage(db, mode)
    with Vault.open(vault_path) as v:
        index = v.cache()
        assert index.rebuilt is not None
        assert index.lookup("fact-zh") is not None
        assert index.dump() == fresh_dump(vault_path, tmp_path)
    if mode != "zero-length":
        assert list((vault_path / ".am/cache/aside").glob("index.sqlite.*"))


def test_a_page_damaged_after_the_stamp_is_one_error_and_the_next_command_rebuilds(seeded: Vault,
                                                                                  vault_path: Path) -> None:
    """Damage the stamp cannot see (the disk flipped a page after am stamped the file) shows only when a
    query reads that page: that command fails with one line, and the next one checks the file and rebuilds it."""
    import sqlite3

    from am.cache.file import CacheFile
    from am.cache.rows import SCHEMA_VERSION

    seeded.close()
    db = vault_path / ".am/cache/index.sqlite"
    conn = sqlite3.connect(db)
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'records'").fetchone()
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(db.read_bytes())
    data[(root - 1) * size + 8:root * size] = b"\xa5" * (size - 8)
    db.write_bytes(bytes(data))
    CacheFile(db, schema=SCHEMA_VERSION).write_stamp()  # the file matches its stamp: the open trusts it

    def am(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(vault_path), *args],
                              capture_output=True, text=True, env=subprocess_env())

    first = am("search", "限流")
    assert first.returncode == 1 and "Traceback" not in first.stderr, first.stderr
    assert first.stderr.startswith("Error: the search cache failed") and "run the command again" in first.stderr
    again = am("search", "限流")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("fact-zh")
    assert list((vault_path / ".am/cache/aside").glob("index.sqlite.*"))


def test_deleted_wal_loses_only_what_git_can_redo(seeded: Vault, vault_path: Path, tmp_path: Path) -> None:
    seeded.close()
    # A process writes to the cache and dies without closing it: the WAL holds its work.
    code = ("import os; from am.vault import Vault\n"
            f"v = Vault.open({str(vault_path)!r}, actor='tester')\n"
            "v.add_fact('Written just before the crash.', topics=['project-alpha'], id='fact-crash')\n"
            "os._exit(0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env())
    assert out.returncode == 0, out.stderr
    wal = vault_path / ".am/cache/index.sqlite-wal"
    assert wal.exists() and wal.stat().st_size > 0
    wal.unlink()
    with Vault.open(vault_path) as v:
        index = v.cache()
        assert index.lookup("fact-crash") is not None
        assert index.dump() == fresh_dump(vault_path, tmp_path)


def test_older_format_is_rebuilt(seeded: Vault, vault_path: Path) -> None:
    cache = seeded.cache()
    cache.conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema'")
    seeded.close()
    with Vault.open(vault_path) as v:
        assert v.cache().rebuilt == "older format 0"
        assert v.cache().lookup("fact-zh") is not None


def test_newer_format_is_rebuilt_and_called_newer(seeded: Vault, vault_path: Path) -> None:
    # An older am on the same machine (hooks it installed) meets the cache a newer am built: it said "older format".
    cache = seeded.cache()
    cache.conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema'")
    seeded.close()
    with Vault.open(vault_path) as v:
        assert (v.cache().rebuilt or "").startswith("newer format 999, written by a newer am")
        assert v.cache().lookup("fact-zh") is not None
    assert not (vault_path / ".am/cache/aside").exists()


def test_missing_cache_folder_is_rebuilt(seeded: Vault, vault_path: Path) -> None:
    seeded.close()
    shutil.rmtree(vault_path / ".am/cache")
    with Vault.open(vault_path) as v:
        assert v.cache().rebuilt == "missing"
        assert len(v.list_facts()) == 3


def test_unreadable_cache_falls_back_to_the_files(seeded: Vault, vault_path: Path) -> None:
    seeded.close()
    shutil.rmtree(vault_path / ".am/cache")
    (vault_path / ".am/cache").write_text("a file where the folder should be")
    with Vault.open(vault_path) as v:
        assert v.cache() is None
        assert str(v.locate("fact-zh")).endswith("fact-zh.md")
        assert len(v.list_facts()) == 3
    (vault_path / ".am/cache").unlink()


# ---------------------------------------------------------------- fast paths equal the reference


_TEXT = st.text(alphabet=st.sampled_from(list("ab Z9_-.,，。限流查询先週のデプロイ한국ｶﾀ１\n\t々〆") + ["é", "²"]), max_size=40)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_segment_equals_textseg(text: str) -> None:
    assert segment(text) == segment_for_index(text)


_MD = st.lists(st.sampled_from(list("[]|#:ab-x `<>\\&~\n*") + ["[[a]]", "[[b|c]]", "    ", "[[v:d]]", "\n\n"]),
               max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(_MD)
def test_body_links_equal_links_module(body: str) -> None:
    mine = [f"{v}:{t}" if v else t for t, v in body_links(body)]
    assert mine == link_targets(body)


def test_progress_is_reported_on_rebuild(seeded: Vault) -> None:
    calls: list[tuple[int, int]] = []
    seeded.cache().rebuild(progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1][0] == calls[-1][1] == 6
    assert os.path.exists(seeded.cache().path)


def test_concurrent_writers_and_readers_keep_the_cache_exact(seeded: Vault, vault_path: Path,
                                                             tmp_path: Path) -> None:
    seeded.close()
    code = ("import sys; from am.vault import Vault\n"
            f"v = Vault.open({str(vault_path)!r}, actor='w' + sys.argv[1])\n"
            "for i in range(4):\n"
            "    v.add_fact(f'writer {sys.argv[1]} fact {i} 限流', topics=['project-alpha'], id=f'fact-w{sys.argv[1]}-{i}')\n"
            "    assert v.cache().lookup(f'fact-w{sys.argv[1]}-{i}') is not None\n"
            "v.close()\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(n)], env=subprocess_env(),
                              stderr=subprocess.PIPE, text=True) for n in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with Vault.open(vault_path) as v:
        index = v.cache()
        assert index.rebuilt is None
        assert len([r for r in index.record_values(type="fact") if r.id.startswith("fact-w")]) == 16
        assert index.dump() == fresh_dump(vault_path, tmp_path)


def test_a_cache_closed_by_the_garbage_collector_inside_a_locked_section_does_not_hang(
        seeded: Vault, vault_path: Path) -> None:
    import gc
    import threading

    leaked = Vault.open(vault_path)
    assert leaked.cache() is not None
    index = seeded.cache()
    done = threading.Event()

    def work() -> None:
        nonlocal leaked
        with index._handle.locked(exclusive=True):
            del leaked  # its cache's finalizer runs here, in the thread that holds the lock
            gc.collect()
        done.set()

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert done.is_set(), "closing a cache from a finalizer deadlocked"
    assert index.refresh().rebuilt is None


def test_rebase_and_a_garbage_collected_old_head(seeded: Vault, vault_path: Path, tmp_path: Path,
                                                 git: Callable[..., str]) -> None:
    index = seeded.cache()
    git("switch", "-qc", "feat")
    write(vault_path, "facts/2026/10/01/fact-feat.md", fact_text("fact-feat", "On the branch."))
    git("add", "-A")
    git("commit", "-qm", "feat")
    assert_same_as_fresh(index, vault_path, tmp_path)
    git("switch", "-q", "main")
    write(vault_path, "facts/2026/10/02/fact-main.md", fact_text("fact-main", "On main."))
    git("add", "-A")
    git("commit", "-qm", "main")
    assert_same_as_fresh(index, vault_path, tmp_path)
    git("switch", "-q", "feat")
    git("rebase", "-q", "main")
    assert_same_as_fresh(index, vault_path, tmp_path)
    # Rewrite the branch again and collect the commit the cache knew: no diff is possible.
    git("commit", "-q", "--amend", "-m", "feat, reworded")
    git("reflog", "expire", "--expire=now", "--all")
    git("gc", "-q", "--prune=now")
    write(vault_path, "facts/2026/10/01/fact-feat.md", fact_text("fact-feat", "Edited after the gc."))
    assert_same_as_fresh(index, vault_path, tmp_path)
    assert index.lookup("fact-main") is not None and index.lookup("fact-feat") is not None


def test_tree_changes_equal_libgit2s_diff(seeded: Vault, vault_path: Path, git: Callable[..., str]) -> None:
    write(vault_path, "facts/2026/10/01/fact-x.md", fact_text("fact-x", "x"))
    git("add", "-A")
    git("commit", "-qm", "x")
    git("mv", "facts/2026/10/01/fact-x.md", "facts/fact-x.md")
    git("commit", "-qm", "move")
    commits = git("rev-list", "HEAD").split()
    store = seeded.store
    for old in commits:
        for new in commits[:3]:
            assert sorted(store.tree_changes(old, new)) == sorted(store.diff_paths(old, new))


def test_tree_changes_in_a_big_folder_match_gits_diff_tree(tmp_path: Path) -> None:
    # A bulk import's day folder holds thousands of files: two versions of it are compared by libgit2 (in C),
    # with what the Python walk returns for small folders: the git CLI's diff-tree is the oracle.
    from am.git import GitStore

    root = tmp_path / "big"
    run_git(tmp_path, "init", "-q", "-b", "main", str(root))
    day = root / "facts" / "2026" / "09" / "23"
    day.mkdir(parents=True)
    for i in range(700):
        (day / f"fact-{i:04d}.md").write_text(f"fact {i}\n")
    (root / "facts" / "small.md").write_text("small\n")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "base")
    old = run_git(root, "rev-parse", "HEAD").strip()
    (day / "fact-0001.md").write_text("changed\n")  # modified
    (day / "fact-0002.md").unlink()  # deleted
    (day / "fact-0700.md").write_text("new\n")  # added
    (day / "fact-0003.md").chmod(0o755)  # the mode alone: no change of content
    (day / "fact-0004.md").unlink()
    (day / "fact-0004.md").symlink_to("fact-0005.md")  # a file that became a link
    (day / "fact-0006.md").unlink()
    (day / "fact-0006.md").mkdir()
    (day / "fact-0006.md" / "inner.md").write_text("a folder now\n")  # a file that became a folder
    (root / "facts" / "small.md").write_text("small, changed\n")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "changes")
    new = run_git(root, "rev-parse", "HEAD").strip()
    blob_modes = {"100644", "100755", "120000"}

    def oracle(a: str, b: str) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for line in run_git(root, "diff-tree", "-r", "--no-renames", a, b).splitlines():
            meta, path = line.split("\t", 1)
            old_mode, new_mode, old_id, new_id, _ = meta.lstrip(":").split()
            if new_mode in blob_modes and (old_mode not in blob_modes or old_id != new_id):
                out[path] = new_id
            elif old_mode in blob_modes and new_mode not in blob_modes:
                out[path] = None
        return out

    store = GitStore.open(root)
    for a, b in ((old, new), (new, old)):
        got = store.tree_changes(a, b)
        assert len(got) == len(dict(got)) and dict(got) == oracle(a, b)
    assert dict(store.tree_changes(old, new))["facts/2026/09/23/fact-0006.md/inner.md"] is not None


def test_folder_names_one_connection_remembers_are_dropped_when_another_changes_the_cache(
        seeded: Vault, vault_path: Path, tmp_path: Path) -> None:
    # Two handles in one process share what the last write learnt of its folder;
    # the cache's names token tells them when another connection changed the rows.
    other = Vault.open(vault_path)
    try:
        seeded.add_fact("The first write of the day.", topics=["project-alpha"], id="fact-one")
        day = (vault_path / str(seeded.locate("fact-one"))).parent
        seeded.add_fact("A second one.", topics=["project-alpha"], id="fact-two")
        kept = (day / "fact-two.md").read_bytes()
        (day / "fact-two.md").unlink()  # removed by hand...
        other.cache().refresh()  # ...and seen gone by another connection, which drops its row
        (day / "fact-two.md").write_bytes(kept)  # then put back
        other.add_fact("A third one, written through the other handle.", topics=["project-alpha"], id="fact-three")
        seeded.add_fact("A fourth one.", topics=["project-alpha"], id="fact-four")
        assert_same_as_fresh(seeded.cache(), vault_path, tmp_path)
        assert seeded.cache().lookup("fact-two") is not None
    finally:
        other.close()


def test_a_second_open_in_one_process_keeps_the_first_connection_s_locks(seeded: Vault, vault_path: Path) -> None:
    # Closing any descriptor of a file drops every POSIX lock the process holds on it. If a
    # second handle read the cache file's header with open()/close(), the first handle's
    # SQLite locks would be gone, and a process closing its last connection would take
    # itself for the last user and delete the -shm file from under this one.
    first = seeded.cache()
    assert first is not None and first.lookup("fact-zh") is not None
    shm = vault_path / ".am/cache/index.sqlite-shm"
    assert shm.exists()
    with Vault.open(vault_path) as second:
        assert second.cache() is not None
        code = "import sys\nfrom am.vault import Vault\nwith Vault.open(sys.argv[1]) as v:\n    assert v.cache()\n"
        subprocess.run([sys.executable, "-c", code, str(vault_path)], check=True, env=subprocess_env())
        assert shm.exists()  # the other process saw this one still using the file
    with Vault.open(vault_path) as third:
        index = third.cache()
        assert index is not None and index.lookup("fact-ja") is not None
    assert first.lookup("fact-ja") is not None


def test_own_write_hands_its_records_to_the_cache_and_the_tests_prove_they_parse_back(
        seeded: Vault, vault_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache takes a record am just wrote from the write; AM_CHECK_KNOWN=1 (every test) parses it back too."""
    cache = seeded.cache()
    assert cache is not None
    seeded.add_fact("Handed over, not parsed again.", topics=["project-alpha"], id="fact-handed")
    assert_same_as_fresh(cache, vault_path, tmp_path)  # the handed record is the one a fresh build parses
    assert not seeded.writer.known  # nothing left behind once the write returned
    # The hand-over is real: a record that is not what the bytes say is taken as given when unchecked...
    path, record = cache.get("fact-handed")
    data = (vault_path / path).read_bytes()
    lie = replace(record, body="not what the file says\n")
    (vault_path / path).write_bytes(data.replace(b"Handed over", b"Handled over"))  # a file cache.after_commit reads
    changed = (vault_path / path).read_bytes()
    monkeypatch.setenv("AM_CHECK_KNOWN", "0")
    head = seeded.store.head()
    assert head is not None
    cache.after_commit(head, [PurePosixPath(str(path))], known={str(path): (changed, lie)})
    assert cache.get("fact-handed")[1].body == "not what the file says\n"
    # ...and caught when checked, as in every other test of the suite.
    monkeypatch.setenv("AM_CHECK_KNOWN", "1")
    (vault_path / path).write_bytes(data)
    with pytest.raises(AssertionError, match="does not parse back to itself"):
        cache.after_commit(head, [PurePosixPath(str(path))], known={str(path): (data, lie)})
