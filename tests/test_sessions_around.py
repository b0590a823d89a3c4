"""`am search --session --around N / --full / --sort oldest`: transcript recall in order (issue 41)."""

from __future__ import annotations

import json
from pathlib import Path

from session_samples import write_log
from test_cli import am

TOPICS = ["the build cache", "flaky tests", "the deploy window", "the release notes", "the on-call rota",
          "the database migration", "the rate limit", "the style guide", "the CI runners", "the retro"]


def _vault_with_a_session(vault_path: Path, tmp_path: Path) -> str:
    code, _, err = am("--actor", "tester", "init", str(vault_path), "--name", "v")
    assert code == 0, err
    lines = [json.dumps({"ts": f"2026-11-28T09:{i:02d}:00Z", "role": "user" if i % 2 == 0 else "assistant",
                         "text": f"turn {i}: about {topic}"}) for i, topic in enumerate(TOPICS)]
    write_log(tmp_path / "talk-1.jsonl", lines)
    code, _, err = am("--vault", str(vault_path), "ingest", str(tmp_path / "talk-1.jsonl"))
    assert code == 0, err
    return str(vault_path)


def test_around_two_prints_five_turns_in_order_with_the_hit_marked(vault_path: Path, tmp_path: Path) -> None:
    v = _vault_with_a_session(vault_path, tmp_path)
    code, out, err = am("--vault", v, "search", "migration", "--session", "--around", "2", "--format", "json")
    assert code == 0, err
    hit = json.loads(out)["hits"][0]
    assert [t["text"] for t in hit["turns"]] == [f"turn {i}: about {TOPICS[i]}" for i in range(3, 8)]
    assert [t["line"] for t in hit["turns"]] == [4, 5, 6, 7, 8] and hit["line"] == 6
    code, out, _ = am("--vault", v, "search", "migration", "--around", "2")
    turns = [line for line in out.splitlines() if line.startswith("  ") and "turn " in line]
    assert len(turns) == 5 and turns[2].lstrip().startswith(">") and "database migration" in turns[2]
    # At the log's edge the window is cut, not padded.
    code, out, _ = am("--vault", v, "search", "build", "cache", "--around", "2", "--format", "json")
    assert [t["line"] for t in json.loads(out)["hits"][0]["turns"]] == [1, 2, 3]


def test_full_prints_the_whole_session_and_oldest_reads_in_the_order_said(vault_path: Path, tmp_path: Path) -> None:
    v = _vault_with_a_session(vault_path, tmp_path)
    code, out, err = am("--vault", v, "search", "retro", "--full", "--format", "json")
    assert code == 0, err
    assert [t["line"] for t in json.loads(out)["hits"][0]["turns"]] == list(range(1, 11))
    code, out, _ = am("--vault", v, "search", "the", "about", "--session", "--sort", "oldest", "--limit", "4",
                      "--format", "json")
    data = json.loads(out)
    assert data["sort"] == "oldest" and [h["line"] for h in data["hits"]] == [1, 2, 3, 4]
    code, out, err = am("--vault", v, "search", "retro", "--sort", "oldest")
    assert code == 2 and "--sort oldest orders session lines" in err
    code, out, err = am("--vault", v, "search", "retro", "--session", "--sort", "time")
    assert code == 2 and "use --sort oldest" in err
