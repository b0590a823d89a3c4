"""`am export`: export -> import -> export gives the same bytes, for every record kind and world axis."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_git
from io_samples import write_sample
from test_cli import am

from am.io import ExportWorld, export_pairs, import_source, render_export
from am.records.model import Fact, Relation, Topic
from am.upkeep.check import check_vault
from am.vault import Vault

Git = Callable[..., str]
T = "2026-09-23T12:00:00+08:00"
SHA = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"


def _every_kind() -> list[Topic | Fact | Relation]:
    topics = [
        Topic(id="project-alpha", kind="project", title="Alpha 服务", aliases=("Alpha", "阿尔法"), tags=("backend",),
              created=T, body="Alpha is the user service. See [[tool-redis]].\n",
              extra={"owner": {"team": "core", "since": 2024}, "rating": 4.5, "archived": False, "note": None}),
        Topic(id="tool-redis", kind="tool", title="Redis", status="contested", created=T),
        Topic(id="person-ana", kind="person", title="Ana", created="2026-01-01"),
    ]
    facts = [
        Fact(id="fact-subject", topics=("project-alpha",), body="Alpha on main only offers getUser(id).\n",
             confidence="high", repo="project-alpha", version="main", commit=SHA, until_commit=SHA[:12],
             axis="subject", paths=("src/api.py", "src/users/"), tags=("api", "接口"), pinned=True, created=T),
        Fact(id="fact-time", topics=("person-ana",), body="Ana works at Acme.\n", axis="time",
             valid_from="2025-01-01", valid_until="2026-06-30T00:00:00Z", created=T, confidence="low"),
        Fact(id="fact-timeless", topics=("tool-redis",), body="Redis is an in-memory store.\n", axis="timeless",
             created=T, provenance="https://redis.io", extra={"weight": 0.25, "votes": [1, 2, 3], "ok": True}),
        Fact(id="fact-old", topics=("project-alpha",), body="Alpha has no rate limit.\n", status="superseded",
             superseded_by="fact-new", reason="limits landed", created=T, repo="project-alpha"),
        Fact(id="fact-new", topics=("project-alpha",), body="Alpha limits 100 requests/s.\n", supersedes=("fact-old",),
             reason="limits landed", created="2026-09-24T08:00:00+08:00", repo="project-alpha"),
        Fact(id="fact-pending", topics=("project-alpha", "tool-redis"), body="Maybe sessions move to Redis 8.\n",
             status="pending-review", provenance="session:abc", created=T),
        Fact(id="fact-expired", topics=("tool-redis",), body="Redis 6 is in use.\n", status="expired",
             reason="upgraded", created=T),
        Fact(id="fact-contested", topics=("tool-redis",), body="Redis runs on one node.\n", status="contested",
             created=T),
    ]
    relations = [
        Relation(id="project-alpha--depends-on--tool-redis", rel="depends-on", from_="project-alpha", to="tool-redis",
                 body="[[project-alpha]] depends-on [[tool-redis]]: sessions.\n", created=T, repo="project-alpha",
                 version="main", commit=SHA, until_commit=SHA, axis="subject", valid_from="2025-01-01",
                 valid_until="2027-01-01", reason="cache", tags=("infra",), extra={"source_rel": "uses"}),
        Relation(id="person-ana--authored-by--fact-time", rel="references", from_="person-ana", to="fact-time",
                 status="expired", created=T),
    ]
    return [*topics, *facts, *relations]


def _new_vault(root: Path, name: str = "exp") -> Vault:
    run_git(root.parent, "init", "-q", "-b", "main", str(root))
    return Vault.init(root, name=name, actor="tester", register=False)


def _export(vault: Vault, fmt: str = "jsonl", world: ExportWorld | None = None) -> str:
    return "".join(render_export(export_pairs(vault, world or ExportWorld()), fmt, vault_name=vault.name))


@pytest.fixture
def full(vault: Vault, git: Git) -> Vault:
    vault.import_records(_every_kind(), source="test")
    # A person's own files: CRLF line endings, hand-written YAML, a place am would not choose.
    (vault.root / "topics" / "people").mkdir(parents=True)
    (vault.root / "topics" / "people" / "person-bo.md").write_bytes(
        b"---\r\ntype: topic\r\nid: person-bo\r\nkind: person\r\ntitle: 'Bo'\r\ntags:\r\n  - team\r\n"
        b"status: active\r\nmood: happy\r\n---\r\nBo reviews [[project-alpha]].\r\n")
    git("add", "-A")
    git("commit", "-q", "-m", "hand-written topic")
    return vault


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_export_import_export_is_byte_identical(full: Vault, tmp_path: Path, fmt: str) -> None:
    first = _export(full, fmt)
    assert first.count('"person-bo"') >= 1 and "\\r\\n" in first
    dump = tmp_path / f"export.{fmt}"
    dump.write_text(first, encoding="utf-8")
    other = _new_vault(tmp_path / "other")
    summary = import_source(other, "jsonl", dump)
    assert summary.made == {"topic": 4, "fact": 8, "relation": 2} and summary.aside == []
    assert _export(other, fmt) == first
    # The files themselves: every record at the same path; am's own files with the same bytes, a
    # hand-written one in am's canonical form (same record, CRLF kept).
    for path in full.iter_record_paths():
        if path.name == "person-bo.md":
            assert other.read_path(path) == full.read_path(path)
            assert (other.root / path).read_bytes().count(b"\r\n") == 10
        else:
            assert (other.root / path).read_bytes() == (full.root / path).read_bytes(), path
    # And once more: nothing new to write.
    again = import_source(other, "jsonl", dump)
    assert again.commits == [] and again.already == 10 and again.merged == 4


def test_export_of_one_world_round_trips(full: Vault, tmp_path: Path) -> None:
    world = ExportWorld(repo="project-alpha", branch="main")
    first = _export(full, world=world)
    ids = [json.loads(line)["meta"]["id"] for line in first.splitlines()]
    assert "fact-subject" in ids and "fact-new" in ids
    assert "fact-old" not in ids and "fact-expired" not in ids and "fact-pending" not in ids
    dump = tmp_path / "world.jsonl"
    dump.write_text(first, encoding="utf-8")
    other = _new_vault(tmp_path / "other")
    import_source(other, "jsonl", dump)
    assert _export(other) == first
    pending = _export(full, world=ExportWorld(repo="project-alpha", branch="main", include_pending=True))
    assert "fact-pending" in pending


def test_export_as_of_an_earlier_commit(full: Vault, tmp_path: Path, git: Git) -> None:
    import time
    from datetime import datetime

    before = _export(full)
    time.sleep(1.1)  # commit times have whole seconds
    full.add_fact("A later fact.", topics=["project-alpha"], id="fact-later")
    assert "fact-later" in _export(full)
    git_time = git("log", "-1", "--format=%cI", "HEAD~1").strip()
    moment = datetime.fromisoformat(git_time)
    past = _export(full, world=ExportWorld(as_of=moment))
    assert "fact-later" not in past and '"fact-subject"' in past
    assert before.count("\n") == past.count("\n")


def test_mcp_memory_export_gives_the_graph_back(vault: Vault, tmp_path: Path) -> None:
    sample = write_sample("mcp-memory", tmp_path / "src")
    import_source(vault, "mcp-memory", sample.path)
    lines = [json.loads(line) for line in _export(vault, "mcp-memory").splitlines()]
    source = [json.loads(line) for line in sample.path.read_text(encoding="utf-8").splitlines()[:7]]
    entities = {e["name"]: e for e in lines if e["type"] == "entity"}
    for e in (s for s in source if s["type"] == "entity"):
        assert entities[e["name"]]["observations"] == e["observations"]
        assert entities[e["name"]]["entityType"] == e["entityType"]
    relations = {(r["from"], r["relationType"], r["to"]) for r in lines if r["type"] == "relation"}
    assert relations == {(r["from"], r["relationType"], r["to"]) for r in source if r["type"] == "relation"}


def test_markdown_export_is_for_people(full: Vault) -> None:
    text = _export(full, "markdown")
    assert text.startswith("# test\n")
    assert "## Alpha 服务 (`project-alpha`, project)" in text
    assert "- Alpha on main only offers getUser(id). (fact-subject, high, pinned)" in text
    assert "- [[project-alpha]] depends-on [[tool-redis]]" in text


def test_cli_export_and_import(full: Vault, tmp_path: Path) -> None:
    out = tmp_path / "dump.jsonl"
    code, _, err = am("--vault", str(full.root), "export", "-o", str(out))
    assert code == 0 and "exported 14 records" in err
    code, stdout, _ = am("--vault", str(full.root), "export")
    assert code == 0 and stdout == out.read_text(encoding="utf-8")
    for command in ("export", "graph"):  # into a folder that is not there: said before any work, nothing written
        nowhere = tmp_path / "no-such-folder" / "out.txt"
        code, _, err = am("--vault", str(full.root), command, "-o", str(nowhere))
        assert code == 2 and f"the folder {nowhere.parent} does not exist" in err and "mkdir -p" in err, err
        assert not nowhere.parent.exists()
    other = tmp_path / "other"
    run_git(tmp_path, "init", "-q", "-b", "main", str(other))
    assert am("--actor", "tester", "init", str(other), "--name", "exp")[0] == 0
    code, stdout, err = am("--vault", str(other), "--actor", "tester", "import", "jsonl", str(out), "--format", "json")
    assert code == 0, err
    report = json.loads(stdout)
    assert report["made"] == {"topic": 4, "fact": 8, "relation": 2} and len(report["commits"]) == 1
    code, stdout, err = am("--vault", str(other), "import", "mcp-memory", str(tmp_path / "missing.jsonl"))
    assert code != 0 and "Traceback" not in err
    assert run_git(other, "log", "-1", "--format=%an").strip() == "tester"
    sample = write_sample("mcp-memory", tmp_path / "src")
    code, stdout, err = am("--vault", str(other), "import", "mcp-memory", str(sample.path), "--dry-run")
    assert code == 0, err
    assert stdout.splitlines()[:2] == ["read from mcp-memory (memory.jsonl): entities: 5, observations: 5, relations: 3",
                                       "would make: 2 topics, 5 facts, 2 relations"]  # two topics were there
    assert "left aside: 2" in stdout and "memory.jsonl:8: entity without a name" in stdout
    assert err == ""  # no progress bar off a terminal


def test_an_id_twice_in_an_export_is_written_once(full: Vault, tmp_path: Path, git: Git) -> None:
    """Two exports run together (`cat a.jsonl b.jsonl`): an id read again is left aside, not a second file."""
    first = _export(full)
    line = next(x for x in first.splitlines() if '"id":"tool-redis"' in x.replace(" ", ""))
    moved = json.loads(line)
    moved["path"], moved["meta"]["title"] = "topics/tools/tool-redis.md", "Redis 7"
    dump = tmp_path / "both.jsonl"
    dump.write_text(first + line + "\n" + json.dumps(moved, ensure_ascii=False) + "\n", encoding="utf-8")
    other = _new_vault(tmp_path / "other")
    summary = import_source(other, "jsonl", dump)
    assert summary.made == {"topic": 4, "fact": 8, "relation": 2}
    assert [a.reason for a in summary.aside] == [f"id tool-redis again (already read as both.jsonl:{n})"
                                                 for n in (first.splitlines().index(line) + 1,) * 2]
    assert run_git(other.root, "ls-files", "topics/tool-redis.md", "topics/tools").split() == ["topics/tool-redis.md"]
    assert _export(other) == first


def test_a_path_in_another_types_folder_is_replaced(full: Vault, tmp_path: Path) -> None:
    """An export line whose path puts a topic under facts/ is written at am's path for it (am check: wrong-folder)."""
    first = _export(full)
    lines = [json.loads(x) for x in first.splitlines()]
    for line in lines:
        if line["meta"]["id"] == "tool-redis":
            line["path"] = "facts/2026/tool-redis.md"
        if line["meta"]["id"] == "fact-old":
            line["path"] = "relations/fact-old.md"
    dump = tmp_path / "moved.jsonl"
    dump.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    other = _new_vault(tmp_path / "other")
    import_source(other, "jsonl", dump)
    assert run_git(other.root, "ls-files", "facts/2026/tool-redis.md", "relations/fact-old.md") == ""
    assert (other.root / "topics" / "tool-redis.md").is_file()
    assert check_vault(other).errors == []
