"""Issue 34 item 3: a clerk that updates, not only adds.

The default extractor reads a marker wherever a sentence starts; a proposal that restates a holding
fact is skipped (and counted); one that changes a holding fact is proposed as its supersession, and
accepting it supersedes (one commit); an extractor's ``supersedes`` is honoured; a proposal is dated
when its line was said.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from conftest import run_git
from session_samples import CLAUDE_SESSION, claude_lines, write_log
from test_cli import am

from am.vault import Vault

CONSISTENT = "the batch lookup must not pass consistent=True."


def _ingest(vault: Vault, tmp_path: Path, extra_user: str) -> None:
    from am.sessions.ingest import ingest_file

    ingest_file(vault, write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", claude_lines(extra_user=extra_user)))


def _propose(vault: Vault, *args: str) -> dict[str, object]:
    code, out, err = am("--vault", str(vault.root), "propose", CLAUDE_SESSION, *args, "--format", "json")
    assert code == 0, err
    report: dict[str, object] = json.loads(out)
    return report


def _texts(report: dict[str, object]) -> list[str]:
    return [p["text"] for p in report["proposed"]]  # type: ignore[attr-defined, index]


def test_a_marker_after_a_sentence_is_proposed_and_dated_when_said(alpha: Vault, tmp_path: Path) -> None:
    _ingest(alpha, tmp_path, f"All done. remember: {CONSISTENT}")
    report = _propose(alpha)
    assert CONSISTENT in _texts(report)
    fid = next(p["id"] for p in report["proposed"] if p["text"] == CONSISTENT)  # type: ignore[attr-defined, index]
    assert alpha.get_fact(fid).created.startswith("2026-11-30T10:07:00")  # the line's time, not the run's


def test_a_restatement_of_a_holding_fact_is_skipped_and_counted(alpha: Vault, tmp_path: Path) -> None:
    held = alpha.add_fact("The batch lookup must not pass consistent=True", topics=["project-alpha"])
    _ingest(alpha, tmp_path, f"Right. Remember: {CONSISTENT}")
    report = _propose(alpha)
    assert CONSISTENT not in _texts(report)
    assert any(s["text"] == CONSISTENT and held.record.id in s["reason"]  # type: ignore[index]
               for s in report["skipped"])  # type: ignore[attr-defined]


def test_a_changed_value_is_proposed_as_a_supersession_and_accepting_supersedes(alpha: Vault, tmp_path: Path) -> None:
    held = alpha.add_fact("getUser is limited to 50 requests a minute per client.", topics=["project-alpha"])
    _ingest(alpha, tmp_path, "Thanks.")
    report = _propose(alpha)  # the final message's "Decision: getUser is limited to 100 requests a minute ..."
    fid = next(p["id"] for p in report["proposed"] if "100 requests" in p["text"])  # type: ignore[attr-defined, index]
    assert alpha.get_fact(fid).extra["proposed_supersedes"] == [held.record.id]
    before = int(run_git(alpha.root, "rev-list", "--count", "HEAD"))
    code, out, err = am("--vault", str(alpha.root), "review", "accept", fid)
    assert code == 0, err
    assert int(run_git(alpha.root, "rev-list", "--count", "HEAD")) == before + 1
    with Vault.open(alpha.root) as vault:
        old, new = vault.get_fact(held.record.id), vault.get_fact(fid)
    assert (old.status, old.superseded_by) == ("superseded", fid)
    assert new.status == "active" and new.supersedes == (held.record.id,) and "proposed_supersedes" not in new.extra
    assert am("--vault", str(alpha.root), "check")[0] == 0


def test_an_extractors_supersedes_yields_a_proposal_that_supersedes_on_accept(alpha: Vault, tmp_path: Path) -> None:
    held = alpha.add_fact("Alpha's limits live in the handlers.", topics=["project-alpha"])
    _ingest(alpha, tmp_path, "ok")
    script = tmp_path / "extractor.py"
    answer = {"proposals": [{"text": "Alpha's limits live in src/api/limits.py.", "lines": [5],
                             "supersedes": [held.record.id]}]}
    script.write_text(f"import json, sys\njson.load(sys.stdin)\nprint(json.dumps({answer!r}))\n")
    report = _propose(alpha, "--extractor", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    fid = report["proposed"][0]["id"]  # type: ignore[index]
    code, _, err = am("--vault", str(alpha.root), "review", "accept", fid)
    assert code == 0, err
    with Vault.open(alpha.root) as vault:
        assert vault.get_fact(held.record.id).superseded_by == fid
