"""The demo vault: its files round-trip byte for byte, and materialise_demo gives a realistic, clean history."""

from __future__ import annotations

from pathlib import Path

import pytest

from am.demo import demo_source, materialise_demo
from am.errors import UsageError
from am.records.model import Fact
from am.records.codec import decode_record_bytes, parse_record, render_record
from am.records.schemas import check_record, schema_problems
from am.records.codec import record_to_meta

from conftest import fsck_clean, run_git

DEMO = Path(__file__).resolve().parent.parent / "vaults" / "demo"


def test_demo_source_is_the_checked_in_folder() -> None:
    assert demo_source().resolve() == DEMO.resolve() or (demo_source() / ".am" / "vault.yml").is_file()


def test_every_demo_file_round_trips_and_validates() -> None:
    files = sorted(DEMO.rglob("*.md"))
    chinese = 0
    for path in files:
        data = path.read_bytes()
        record = parse_record(decode_record_bytes(data, path=str(path)), str(path))
        assert render_record(record).encode() == data, path
        check_record(record, path=str(path))
        assert schema_problems(record_to_meta(record)) == [], path
        chinese += any("\u4e00" <= ch <= "\u9fff" for ch in data.decode())
    assert chinese >= 2, "the demo should have some records written in Chinese"


def test_materialise_demo_history(tmp_path: Path, am_home: Path) -> None:
    vault = materialise_demo(tmp_path / "demo")
    root = vault.root
    files = sorted(p.relative_to(DEMO).as_posix() for p in DEMO.rglob("*.md"))
    tracked = sorted(run_git(root, "ls-files", "topics", "facts", "relations").split())
    assert tracked == files
    for rel in files:
        assert (root / rel).read_bytes() == (DEMO / rel).read_bytes(), rel
        assert run_git(root, "show", f"HEAD:{rel}").encode() == (DEMO / rel).read_bytes()
    log = run_git(root, "log", "--reverse", "--format=%an|%aI|%s|%(trailers:key=Am-Op,valueonly,separator=%x2C)")
    entries = [line.split("|") for line in log.splitlines()]
    assert entries[0][2].startswith("vault: init")
    ops = [e[3] for e in entries]
    assert "fact.supersede" in ops and "relation.add" in ops and "topic.add" in ops
    # One commit per record, except a supersede, which writes two files in one commit.
    supersedes = [r for _, r in vault.iter_records() if isinstance(r, Fact) and r.supersedes]
    assert len(entries) == 1 + len(files)
    assert supersedes
    # Several authors, dated by the records, in order.
    assert len({e[0] for e in entries[1:]}) >= 2
    dates = [e[1] for e in entries[1:]]
    assert dates[0].startswith("2026-09")
    assert run_git(root, "status", "--porcelain") == ""
    assert run_git(root, "log", "--merges", "--format=%H") == ""
    fsck_clean(root)
    for sha in run_git(root, "log", "--format=%H", "--grep=^Am-Op: fact.supersede").split():
        assert len(run_git(root, "show", "--name-only", "--format=", sha).split()) == 2


def test_materialise_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("mine")
    with pytest.raises(UsageError):
        materialise_demo(tmp_path / "x")
    assert (tmp_path / "x" / "file").read_text() == "mine"


def test_demo_facts_name_real_commits_of_the_demo_code(tmp_path: Path) -> None:
    from am.demo import DEMO_CODE_COMMITS, build_demo_code

    built = build_demo_code(tmp_path / "code")
    assert built == DEMO_CODE_COMMITS  # fixed content, authors and dates: the same ids everywhere
    fsck_clean(tmp_path / "code")
    assert run_git(tmp_path / "code", "branch", "--format=%(refname:short)").split() == [
        "feat-batch", "feat-rate-limit", "main"]
    named = set()
    for path in DEMO.rglob("*.md"):
        record = parse_record(path.read_text(encoding="utf-8"), str(path))
        if isinstance(record, Fact) and record.commit:
            named.add(record.commit)
            assert any(full.startswith(record.commit) for full in built.values()), path
    assert len(named) >= 3


def test_a_second_demo_names_every_name_it_would_take(tmp_path: Path) -> None:
    from am.errors import CollisionError

    materialise_demo(tmp_path / "first").close()
    with pytest.raises(CollisionError) as err:
        materialise_demo(tmp_path / "second")
    said = str(err.value)
    # README: "refused because the names demo and project-alpha are taken"; both are named, with both fixes.
    assert "repo name 'project-alpha'" in said and "vault name 'demo'" in said
    assert "--replace" in err.value.hint and "cd into the first demo" in err.value.hint
    assert not (tmp_path / "second").exists() and not (tmp_path / "second-code").exists()
    materialise_demo(tmp_path / "third", replace_names=True).close()
