"""Issue 34 item 4: sessions flow in by themselves.

`am ingest --propose` (the SessionEnd hook's command) ingests and proposes; `am propose --all` runs the
clerk over every session not proposed from yet, one commit a session, and finds none when run again; a day
file of several sessions (lossless-memory's per-day JSONL) is stored and searched as those sessions.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_git
from session_samples import CLAUDE_SESSION, claude_lines, write_log
from test_cli import am

from am.vault import Vault


def _commits(root: Path) -> int:
    return int(run_git(root, "rev-list", "--count", "HEAD"))


def _day_file(path: Path) -> Path:
    lines = [
        {"ts": "2026-11-30T09:00:00Z", "session": "day-a", "role": "user", "text": "The invoice export uses CSV."},
        {"ts": "2026-11-30T09:01:00Z", "session": "day-a", "role": "assistant", "text": "Noted. fact: exports are CSV."},
        {"ts": "2026-11-30T15:00:00Z", "session": "day-b", "role": "user", "text": "The nightly reindex is slow."},
        {"ts": "2026-11-30T15:02:00Z", "session": "day-b", "role": "assistant", "text": "Reindex takes an hour."},
        {"ts": "2026-11-30T09:05:00Z", "session": "day-a", "role": "user", "text": "The invoice export is daily."},
    ]
    return write_log(path, [json.dumps(line) for line in lines])


def test_a_day_file_of_two_sessions_is_stored_and_searched_as_two(vault: Vault, tmp_path: Path) -> None:
    day = _day_file(tmp_path / "2026-11-30.jsonl")
    code, out, err = am("--vault", str(vault.root), "ingest", str(day), "--format", "json")
    assert code == 0, err
    sessions = json.loads(out)["sessions"]
    assert sorted(s["session"] for s in sessions) == ["day-a", "day-b"]
    stored = {s["session"]: (vault.root / s["path"]).read_text(encoding="utf-8") for s in sessions}
    assert "invoice export uses CSV" in stored["day-a"] and "invoice export is daily" in stored["day-a"]
    assert "reindex" not in stored["day-a"] and "invoice" not in stored["day-b"]
    code, out, _ = am("--vault", str(vault.root), "search", "invoice", "--session", "--format", "json")
    assert {h["session"] for h in json.loads(out)["hits"]} == {"day-a"}
    code, out, _ = am("--vault", str(vault.root), "search", "reindex", "--session", "--format", "json")
    assert {h["session"] for h in json.loads(out)["hits"]} == {"day-b"}
    before = _commits(vault.root)  # the same day file again: nothing written
    assert am("--vault", str(vault.root), "ingest", str(day))[0] == 0 and _commits(vault.root) == before


def test_propose_all_runs_once_a_session_and_ingest_propose_does_both(alpha: Vault, tmp_path: Path) -> None:
    root = alpha.root
    assert am("--vault", str(root), "ingest", str(_day_file(tmp_path / "day.jsonl")))[0] == 0
    before = _commits(root)
    code, out, err = am("--vault", str(root), "propose", "--all", "--format", "json")
    assert code == 0, err
    reports = json.loads(out)["sessions"]
    assert sorted(r["session"] for r in reports) == ["day-a", "day-b"] and _commits(root) == before + 2
    assert [p["text"] for r in reports for p in r["proposed"]] == ["exports are CSV."]
    code, out, _ = am("--vault", str(root), "propose", "--all", "--format", "json")
    assert json.loads(out)["sessions"] == [] and _commits(root) == before + 2  # idempotent

    log = write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", claude_lines())
    code, out, err = am("--vault", str(root), "ingest", "--propose", str(log), "--format", "json")
    assert code == 0, err
    proposed = json.loads(out)["proposed"]
    assert [r["session"] for r in proposed] == [CLAUDE_SESSION] and proposed[0]["proposed"]
    assert _commits(root) == before + 4  # the ingest, then the proposals
    code, out, _ = am("--vault", str(root), "propose", "--all", "--format", "json")
    assert json.loads(out)["sessions"] == []


def test_propose_needs_a_session_or_all(alpha: Vault) -> None:
    code, _, err = am("--vault", str(alpha.root), "propose")
    assert code == 2 and "--all" in err
