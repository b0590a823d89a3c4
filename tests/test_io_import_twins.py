"""`am import` writes no twin of a holding fact.

A re-import of the same ids wrote nothing (the ids are the import's memory), but facts with new ids and a
statement the vault already holds (the duplicate rule of am/writes/duplicates.py: whitespace collapsed, case
kept, same topics, repo and branch, holding) were written again: importing a second export of one memory
doubled the vault's facts. Now such a fact, and one that repeats an earlier fact of the same import, is
skipped and counted (`skipped_duplicates`); the import stays one commit a batch. Since issue 34 so is a
restatement of a holding fact of the same world sharing a topic (am/writes/judge.py). The git CLI is the oracle.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import run_git, subprocess_env

from am.vault import Vault


def _am(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(root), *args],
                          capture_output=True, text=True, env=subprocess_env())


def _fact(fid: str, text: str, topics: list[str], **meta: object) -> dict[str, object]:
    return {"meta": {"type": "fact", "id": fid, "topics": topics, "status": "active", "confidence": "medium",
                     "provenance": "import:test", "created": "2026-11-30T10:00:00+00:00", **meta},
            "body": text + "\n"}


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _facts(root: Path) -> list[str]:
    return sorted(run_git(root, "ls-files", "facts").split())


def _import(root: Path, source: Path) -> dict[str, object]:
    done = _am(root, "import", "jsonl", str(source), "--format", "json")
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout)
    return out


def test_facts_the_vault_or_the_import_already_holds_are_skipped_and_counted(
        vault: Vault, vault_path: Path, tmp_path: Path) -> None:
    vault.add_topic(title="Alpha service", kind="project", id="project-alpha")
    vault.add_topic(title="Beta service", kind="project", id="project-beta")
    vault.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"], id="fact-vault")
    head, before = run_git(vault_path, "rev-parse", "HEAD").strip(), _facts(vault_path)
    source = _write(tmp_path / "one.jsonl", [
        _fact("fact-i1", "Alpha  deploys on\nFridays.", ["project-alpha"]),  # the vault's, spaced otherwise
        _fact("fact-i2", "Alpha pages on-call after 5 errors.", ["project-alpha"]),
        _fact("fact-i3", "Alpha pages on-call after 5 errors.", ["project-alpha"]),  # an earlier one's twin
        _fact("fact-i4", "Alpha deploys on Fridays.", ["project-alpha", "project-beta"]),  # a topic shared (issue 34)
        _fact("fact-i5", "alpha deploys on fridays.", ["project-alpha"]),  # a restatement (issue 34)
        _fact("fact-i7", "Alpha deploys on Fridays.", ["project-beta"]),  # another topic: news
        _fact("fact-i6", "Alpha deploys on Fridays.", ["project-alpha"], repo="alpha", version="main"),  # a world
    ])
    out = _import(vault_path, source)
    assert out["skipped_duplicates"] == 4 and out["made"] == {"topic": 0, "fact": 3, "relation": 0}, out
    assert run_git(vault_path, "rev-list", "--count", f"{head}..HEAD").strip() == "1"
    after = _facts(vault_path)
    assert len(after) == len(before) + 3
    assert not any(f"fact-i{n}" in p for p in after for n in (1, 3, 4, 5))
    # The text summary says it too.
    dry = _am(vault_path, "import", "jsonl", str(source), "--dry-run")
    assert "skipped duplicates: 4 facts" in dry.stdout, dry.stdout
    # The same file again: nothing written (its ids are there, its twins still are).
    again = _import(vault_path, source)
    assert again["commits"] == [] and again["already_imported"] == 3 and again["skipped_duplicates"] == 4, again
    # A second export of the same memory under new ids: not one fact more.
    head = run_git(vault_path, "rev-parse", "HEAD").strip()
    lines = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        line["meta"]["id"] = str(line["meta"]["id"]).replace("fact-i", "fact-j")
    out = _import(vault_path, _write(tmp_path / "two.jsonl", lines))
    assert out["skipped_duplicates"] == 7 and out["made"]["fact"] == 0 and out["commits"] == [], out
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == head and _facts(vault_path) == after


def test_an_ended_fact_or_one_another_record_names_is_still_imported(
        vault: Vault, vault_path: Path, tmp_path: Path) -> None:
    """Only a holding fact is a twin: an expired one is history. A fact another imported record names (here a
    supersession) is written, so that record's link holds (am check stays clean)."""
    vault.add_topic(title="Alpha service", kind="project", id="project-alpha")
    vault.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"], id="fact-vault")
    source = _write(tmp_path / "one.jsonl", [
        _fact("fact-old", "Alpha deploys on Fridays.", ["project-alpha"], status="expired", reason="moved"),
        _fact("fact-a", "Alpha deploys on Fridays.", ["project-alpha"], superseded_by="fact-b"),
        _fact("fact-b", "Alpha deploys on Mondays.", ["project-alpha"], supersedes=["fact-a"]),
    ])
    out = _import(vault_path, source)
    assert out["skipped_duplicates"] == 0 and out["made"]["fact"] == 3, out
    check = _am(vault_path, "check")
    assert check.returncode == 0 and "half-supersession" not in check.stdout, check.stdout


def test_a_killed_import_with_twins_then_rerun_leaves_what_one_clean_run_leaves(tmp_path: Path) -> None:
    """The files a killed run left uncommitted are in the cache (it reads the work tree): they are the import's
    own facts, not twins of them, so the rerun writes them (before, it would have skipped them as duplicates)."""
    import signal

    lines = [_fact("fact-t1", "Alpha deploys on Fridays.", ["project-alpha"]),
             _fact("fact-t2", "Alpha pages on-call.", ["project-alpha"]),
             _fact("fact-t3", "Alpha deploys  on Fridays.", ["project-alpha"]),
             _fact("fact-t4", "Alpha keeps sessions 30 minutes.", ["project-alpha"])]
    topic = {"meta": {"type": "topic", "id": "project-alpha", "kind": "project", "title": "Alpha service",
                      "created": "2026-11-30T10:00:00+00:00"}, "body": ""}
    source = _write(tmp_path / "src.jsonl", [topic, *lines])

    def fresh(name: str) -> Path:
        root = tmp_path / name
        run_git(tmp_path, "init", "-q", "-b", "main", str(root))
        Vault.init(root, name="twins", actor="tester", register=False).close()
        return root

    def run(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(root), "import", "jsonl",
                               str(source), "--batch-size", "2", "--format", "json"],
                              capture_output=True, text=True, env=subprocess_env(**env))

    clean = fresh("clean")
    assert run(clean).returncode == 0
    killed = fresh("killed")
    assert run(killed, AM_FAILPOINT="after-file", AM_FAILPOINT_SKIP="1").returncode == -signal.SIGKILL
    rerun = run(killed)
    assert rerun.returncode == 0, rerun.stderr
    tree = "HEAD^{tree}"
    assert run_git(killed, "rev-parse", tree) == run_git(clean, "rev-parse", tree)
    assert len(_facts(killed)) == 3 and run_git(killed, "status", "--porcelain").strip() == ""
