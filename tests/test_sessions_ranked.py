"""`am search --session` ranks session lines by relevance through the cache's session tables (am/cache/sessionlines.py).

The tables are derived: made from the logs under sessions/ on the first session
search, a grown log read from its new lines only, a changed or removed log making
them start again, and a deleted cache file giving the same answers.
"""

from __future__ import annotations

import json
import sqlite3

from session_samples import write_log
from test_cli import am

SID = "rank-1"


def _line(ts: str, role: str, text: str) -> str:
    return json.dumps({"ts": ts, "role": role, "text": text, "session": SID}, ensure_ascii=False)


LINES = [
    _line("2026-11-20T09:00:00Z", "user", "the token bucket refill rate is wrong, fix the token bucket please"),
    _line("2026-11-20T09:01:00Z", "assistant", "I changed the refill so the bucket fills at 10 tokens a second"),
    _line("2026-11-21T09:00:00Z", "user", "and what about the deploy script"),
    _line("2026-11-22T09:00:00Z", "assistant", "a bucket of paint is unrelated; the token is stored elsewhere"),
    _line("2026-11-23T09:00:00Z", "user", "缓存策略需要改成三十分钟"),
]


def _search(root: str, *args: str) -> list[dict[str, object]]:
    code, out, err = am("--vault", root, "search", *args, "--format", "json")
    assert code == 0, err
    return list(json.loads(out)["hits"])


def _setup(vault, tmp_path, lines: list[str] = LINES):
    from am.sessions.ingest import ingest_file

    src = write_log(tmp_path / f"{SID}.jsonl", lines)
    ingest_file(vault, src)
    return src


def test_lines_are_ranked_by_relevance_not_by_time(vault, tmp_path) -> None:
    _setup(vault, tmp_path)
    root = str(vault.root)
    hits = _search(root, "token bucket", "--session")
    # Line 1 holds the words as a phrase (twice) though it is the oldest; line 4 holds both words apart;
    # line 2 only some ("tokens" is "token" stemmed, "bucket" too: both, but not as a phrase).
    assert [h["line"] for h in hits][:1] == [1]
    assert {h["line"] for h in hits} == {1, 2, 4}
    assert all(h["matched"] == 2 and h["terms"] == 2 for h in hits)
    ranks = [h["rank"] for h in hits]
    assert hits[0]["snippet"].startswith("the token bucket refill rate")
    assert ranks[0] <= min(ranks)  # BM25, lower is better
    # Some words: lines with more of them first, then the rest.
    some = _search(root, "token", "paint", "deploy", "--session")
    assert some[0]["line"] == 4 and some[0]["matched"] == 2 and some[0]["terms"] == 3
    assert {h["line"] for h in some[1:]} == {1, 2, 3} and {h["matched"] for h in some[1:]} == {1}
    assert [h["matched"] for h in some] == sorted((h["matched"] for h in some), reverse=True)
    # Chinese as written (bigrams), a role, and a time phrase alone (newest first).
    assert [h["line"] for h in _search(root, "缓存策略", "--session")] == [5]
    assert {h["line"] for h in _search(root, "bucket", "--role", "assistant")} == {2, 4}
    assert [h["line"] for h in _search(root, "2026-11-20", "--session")] == [2, 1]
    assert _search(root, "deploy", "--in-session", SID)[0]["line"] == 3


def test_a_grown_log_is_indexed_from_its_new_lines_and_a_changed_one_again(vault, tmp_path) -> None:
    from am.sessions.ingest import ingest_file

    src = _setup(vault, tmp_path)
    root = str(vault.root)
    assert _search(root, "refill", "--session")
    db = vault.root / ".am" / "cache" / "index.sqlite"
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT rowid, path, line FROM session_lines ORDER BY rowid").fetchall()
    grown = [*LINES, _line("2026-11-24T09:00:00Z", "user", "remember: the refill runs in a cron job")]
    write_log(src, grown)
    assert ingest_file(vault, src).action == "appended"
    assert [h["line"] for h in _search(root, "cron", "--session")] == [6]
    with sqlite3.connect(db) as conn:
        after = conn.execute("SELECT rowid, path, line FROM session_lines ORDER BY rowid").fetchall()
    assert after[:len(before)] == before and [r[2] for r in after[len(before):]] == [6]  # only the new line read
    # Changed in the middle: the tables start again; the old words are gone, the new found.
    changed = [LINES[0], LINES[1],
               _line("2026-11-21T09:00:00Z", "user", "and what about the release script"), *grown[3:]]
    write_log(src, changed)
    assert ingest_file(vault, src).action == "replaced"
    assert _search(root, "deploy", "--session") == []
    assert [h["line"] for h in _search(root, "release", "--session")] == [3]


def test_the_tables_are_derived_a_deleted_cache_gives_the_same_answers(vault, tmp_path) -> None:
    _setup(vault, tmp_path)
    root = str(vault.root)
    first = _search(root, "token bucket", "--session")
    vault.close()
    for f in (vault.root / ".am" / "cache").iterdir():
        if f.name.startswith("index.sqlite"):
            f.unlink()
    assert _search(root, "token bucket", "--session") == first


def test_a_role_alone_lists_the_newest_session_lines_and_records_still_need_words(vault, tmp_path) -> None:
    """docs/sessions.md: with no words left (a time phrase or --role alone), the newest messages come first."""
    _setup(vault, tmp_path)
    root = str(vault.root)
    assert [h["line"] for h in _search(root, "--role", "user")] == [5, 3, 1]
    assert [h["line"] for h in _search(root, "--role", "assistant", "--in-session", SID)] == [4, 2]
    code, _, err = am("--vault", root, "search", "--session")
    assert code == 2 and "nothing to search for" in err and "--role" in err
    for query in ("?", "🙂"):  # no word: an error, as record search's, not 'no session lines found'
        code, _, err = am("--vault", root, "search", "--session", query)
        assert code == 2 and f"the query {query!r} has no word to search for" in err, err
    code, _, err = am("--vault", root, "search")
    assert code == 2 and "Missing argument 'QUERY...'" in err
