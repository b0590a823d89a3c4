"""Moves that lose nothing (issue 38.3): `am export` carries the session logs and the vault's settings, `am import
jsonl` restores them, export -> import -> export is identical, and `am search --session` finds the same lines."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import run_git
from session_samples import AWS_KEY, claude_lines, codex_lines, write_log
from test_cli import am
from test_io_export import _every_kind

from am.io import ExportWorld, export_pairs, import_source, render_export
from am.io.export import export_file_items
from am.records.model import Fact
from am.sessions.ingest import ingest_file
from am.sessions.search import search_sessions
from am.upkeep.check import check_vault
from am.vault import Vault

Git = Callable[..., str]
PURGE_LINE = '{"at":"2026-11-01T10:00:00Z","ids":["f-gone"],"reason":"pasted a key","by":"tester"}\n'


def _export(vault: Vault, fmt: str = "jsonl") -> str:
    world = ExportWorld()
    return "".join(render_export(export_pairs(vault, world), fmt, vault_name=vault.name,
                                 files=export_file_items(vault, world)))


def _new_vault(root: Path, name: str) -> Vault:
    run_git(root.parent, "init", "-q", "-b", "main", str(root))
    return Vault.init(root, name=name, actor="tester", register=False)


def _full(vault: Vault, git: Git, tmp_path: Path) -> Vault:
    """Every record kind, pins, a contested pair, a cross-vault link, two ingested sessions, settings, a purge log."""
    vault.import_records([*_every_kind(),
                          Fact(id="fact-rival", topics=("tool-redis",), body="Redis runs on three nodes.\n",
                               status="contested", created="2026-09-23T12:00:00+08:00"),
                          Fact(id="fact-linked", topics=("project-alpha",), pinned=True,
                               body="Alpha's billing lives in [[work:project-billing]].\n",
                               created="2026-09-23T12:00:00+08:00")], source="test")
    # A credential said in the session: ingest keeps the masked copy, which travels and is restored.
    ingest_file(vault, write_log(tmp_path / "logs" / "claude.jsonl", claude_lines(extra_user=f"the key is {AWS_KEY}")))
    ingest_file(vault, write_log(tmp_path / "logs" / "codex.jsonl", codex_lines()))
    settings = vault.root / ".am" / "vault.yml"
    settings.write_text(settings.read_text(encoding="utf-8") + "confidence: auto\n", encoding="utf-8")
    (vault.root / ".am" / "purges.jsonl").write_text(PURGE_LINE, encoding="utf-8")
    git("add", "-A")
    git("commit", "-q", "-m", "settings and a purge log")
    return vault


def _hits(vault: Vault, query: str) -> list[tuple[object, ...]]:
    return [(h.session, h.topic, h.path, h.line, h.role, h.ts, h.snippet) for h in search_sessions(vault, query).hits]


def test_export_carries_sessions_and_settings_and_import_restores_them(vault: Vault, git: Git, tmp_path: Path) -> None:
    full = _full(vault, git, tmp_path)
    first = _export(full)
    lines = [json.loads(line) for line in first.splitlines()]
    kinds = [line.get("kind") for line in lines if "kind" in line]
    assert kinds == ["vault-settings", "purge-log", "session-log", "session-log"]
    assert all("meta" in line for line in lines[:len(lines) - len(kinds)])  # records first, then files
    dump = tmp_path / "vault.jsonl"
    dump.write_text(first, encoding="utf-8")

    other = _new_vault(tmp_path / "other", name=full.name)
    summary = import_source(other, "jsonl", dump)
    assert summary.aside == [], summary.lines()
    assert summary.restored == 4 and len(summary.commits) == 2  # the records' batch, then the files
    assert _export(other) == first
    report = check_vault(other)  # the sample's repo is registered on no machine: that warning only
    assert report.errors == [] and {i.code for i in report.warnings} <= {"unresolved-world"}, \
        [i.describe() for i in report.issues]
    for log in full.store.tree_files(["sessions"]):
        assert (other.root / log[0]).read_bytes() == (full.root / log[0]).read_bytes()
    assert (other.root / ".am" / "purges.jsonl").read_text(encoding="utf-8") == PURGE_LINE
    assert other.files.settings.get("confidence") == "auto"
    assert other.store.read_blob(".am/vault.yml") == full.store.read_blob(".am/vault.yml")
    for query in ("rate limit getUser", "users handler", "Alpha"):
        assert _hits(other, query) == _hits(full, query) != []
    # The command itself, on each vault: the same lines.
    said = [am("--vault", str(v.root), "search", "rate limit", "--session", "--format", "json") for v in (full, other)]
    assert said[0][0] == said[1][0] == 0 and said[0][1] == said[1][1] and "getUser" in said[0][1]

    before = run_git(other.root, "rev-list", "--count", "HEAD")
    again = import_source(other, "jsonl", dump)
    assert again.commits == [] and again.restored == 0 and again.aside == []
    assert run_git(other.root, "rev-list", "--count", "HEAD") == before


def test_json_export_carries_the_files_too(vault: Vault, git: Git, tmp_path: Path) -> None:
    full = _full(vault, git, tmp_path)
    first = _export(full, "json")
    assert [f["kind"] for f in json.loads(first)["files"]] == ["vault-settings", "purge-log", "session-log",
                                                              "session-log"]
    dump = tmp_path / "vault.json"
    dump.write_text(first, encoding="utf-8")
    other = _new_vault(tmp_path / "other", name=full.name)
    assert import_source(other, "jsonl", dump).restored == 4
    assert _export(other, "json") == first


def test_a_vault_keeps_its_own_name_and_settings_and_logs(vault: Vault, git: Git, tmp_path: Path) -> None:
    full = _full(vault, git, tmp_path)
    dump = tmp_path / "vault.jsonl"
    dump.write_text(_export(full), encoding="utf-8")
    # A new vault of another name takes the settings, with its own name.
    renamed = _new_vault(tmp_path / "renamed", name="elsewhere")
    import_source(renamed, "jsonl", dump)
    assert renamed.files.settings.get("name") == "elsewhere" and renamed.files.settings.get("confidence") == "auto"
    # A vault with settings and a purge log of its own keeps them; each is left aside with the reason.
    own = _new_vault(tmp_path / "own", name=full.name)
    (own.root / ".am" / "vault.yml").write_text(f"name: {full.name}\nformat: 1\nconfidence: high\n", encoding="utf-8")
    (own.root / ".am" / "purges.jsonl").write_text("{}\n", encoding="utf-8")
    run_git(own.root, "add", "-A")
    run_git(own.root, "commit", "-q", "-m", "own settings")
    summary = import_source(own, "jsonl", dump)
    assert summary.restored == 2  # the two session logs
    reasons = sorted(a.reason for a in summary.aside)
    assert len(reasons) == 2 and "settings of its own" in reasons[1] and "another purge-log" in reasons[0]
    assert own.files.read_settings().get("confidence") == "high"
    assert (own.root / ".am" / "purges.jsonl").read_text(encoding="utf-8") == "{}\n"


def test_a_log_that_holds_a_credential_is_restored_only_when_allowed(vault: Vault, tmp_path: Path) -> None:
    from am.io import ImportOptions

    log = {"type": "user", "message": {"role": "user", "content": f"my key is {AWS_KEY}"}}
    dump = tmp_path / "leak.jsonl"
    dump.write_text(json.dumps({"kind": "session-log", "path": "sessions/2026/01/01/s.jsonl",
                                "text": json.dumps(log) + "\n"}) + "\n", encoding="utf-8")
    summary = import_source(vault, "jsonl", dump)
    assert summary.restored == 0 and summary.commits == [] and "credential" in summary.aside[0].reason
    assert import_source(vault, "jsonl", dump, options=ImportOptions(secrets="allow")).restored == 1


def test_a_file_line_outside_its_place_is_left_aside(vault: Vault, tmp_path: Path) -> None:
    dump = tmp_path / "bad.jsonl"
    dump.write_text("\n".join(json.dumps(line) for line in [
        {"kind": "session-log", "path": "../outside.jsonl", "text": "{}\n"},
        {"kind": "session-log", "path": "topics/x.md", "text": "x"},
        {"kind": "vault-settings", "path": ".am/vault.yml"},
        {"kind": "session-log", "path": "sessions/2026/01/01/s.jsonl", "base64": "not base64!"},
    ]) + "\n", encoding="utf-8")
    before = run_git(vault.root, "rev-list", "--count", "HEAD")
    summary = import_source(vault, "jsonl", dump)
    assert len(summary.aside) == 4 and summary.restored == 0 and summary.commits == []
    assert run_git(vault.root, "rev-list", "--count", "HEAD") == before
