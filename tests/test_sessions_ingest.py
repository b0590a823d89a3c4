"""`am ingest`: session logs kept byte for byte, one commit a session, idempotent, growth appended, secrets masked."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from conftest import fsck_clean, run_git
from session_samples import (
    AWS_KEY,
    CLAUDE_SESSION,
    CODEX_SESSION,
    claude_lines,
    codex_lines,
    write_log,
)
from test_cli import am


def _count(git: Callable[..., str]) -> int:
    return int(git("rev-list", "--count", "HEAD").strip())


def test_claude_code_log_is_stored_byte_for_byte_with_a_session_topic(vault, vault_path, git, tmp_path) -> None:
    from am.sessions.ingest import ingest_file

    src = write_log(tmp_path / "proj" / f"{CLAUDE_SESSION}.jsonl", claude_lines())
    before = _count(git)
    result = ingest_file(vault, src)
    assert result.action == "added" and result.client == "claude-code"
    stored = f"sessions/2026/11/30/{CLAUDE_SESSION}.jsonl"
    assert str(result.path) == stored
    # The committed blob is the source, byte for byte (the git CLI is the oracle).
    assert git("show", f"HEAD:{stored}").encode() == src.read_bytes()
    assert _count(git) == before + 1
    assert set(git("show", "--name-only", "--format=", "HEAD").split()) == {stored, f"topics/session-{CLAUDE_SESSION}.md"}
    message = git("log", "-1", "--format=%B")
    assert message.startswith(f"session: ingest {CLAUDE_SESSION}") and "Am-Op: session.ingest" in message
    topic = vault.get_topic(f"session-{CLAUDE_SESSION}")
    assert topic.kind == "session"
    assert topic.extra["client"] == "claude-code" and topic.extra["project_dir"] == "/home/dev/alpha"
    assert topic.extra["branch"] == "main" and topic.extra["started"] == "2026-11-30T10:00:00.000Z"
    assert topic.extra["ended"] == "2026-11-30T10:05:00.000Z"
    assert topic.extra["bytes"] == src.stat().st_size and topic.extra["lines"] == 6 and topic.extra["redacted"] == 0
    assert git("status", "--porcelain") == ""
    fsck_clean(vault_path)


def test_the_same_log_again_adds_nothing_and_a_grown_log_is_one_appended_commit(vault, git, tmp_path) -> None:
    from am.sessions.ingest import ingest_file

    src = write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", claude_lines())
    ingest_file(vault, src)
    head = git("rev-parse", "HEAD").strip()
    again = ingest_file(vault, src)
    assert again.action == "unchanged" and again.commit is None
    assert git("rev-parse", "HEAD").strip() == head
    write_log(src, claude_lines(extra_user="thanks, ship it"))
    grown = ingest_file(vault, src)
    assert grown.action == "appended"
    assert git("rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert git("log", "-1", "--format=%s").startswith(f"session: append {CLAUDE_SESSION}")
    stored = str(grown.path)
    assert git("show", f"HEAD:{stored}").encode() == src.read_bytes()
    old = git("show", f"{head}:{stored}").encode()
    assert src.read_bytes().startswith(old) and len(src.read_bytes()) > len(old)
    assert vault.get_topic(f"session-{CLAUDE_SESSION}").extra["lines"] == 7
    assert ingest_file(vault, src).action == "unchanged"


def test_codex_rollout_gives_its_session_id_branch_and_commit(vault, git, tmp_path) -> None:
    from am.sessions.ingest import ingest_file

    src = write_log(tmp_path / "2026" / "11" / "29" / f"rollout-2026-11-29T08-22-53-{CODEX_SESSION}.jsonl",
                    codex_lines())
    result = ingest_file(vault, src)
    assert result.client == "codex" and result.session == CODEX_SESSION
    assert str(result.path) == f"sessions/2026/11/29/{CODEX_SESSION}.jsonl"
    topic = vault.get_topic(f"session-{CODEX_SESSION}")
    assert topic.extra["branch"] == "feat-batch"
    assert topic.extra["commit"] == "9fceb02d0ae598e95dc970b74767f19372d61af8"
    assert git("show", f"HEAD:{result.path}").encode() == src.read_bytes()


def test_an_aws_key_in_a_log_is_masked_by_family_and_counted(vault, git, tmp_path) -> None:
    from am.sessions.ingest import ingest_file

    lines = claude_lines(extra_user=f"deploy with key {AWS_KEY} please\nand password = \"Zq8#rT5!mW2x\"")
    src = write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", lines)
    result = ingest_file(vault, src)
    blob = git("show", f"HEAD:{result.path}")
    assert AWS_KEY not in blob and "Zq8#rT5!mW2x" not in blob
    assert AWS_KEY not in git("log", "-p", "--all")  # not in any commit, message or file
    assert "[redacted:AWS access key id]" in blob and "[redacted:password assignment]" in blob
    # Every line is still JSON, and every line without a secret is the source's, byte for byte.
    for got, want in zip(blob.splitlines(), lines, strict=True):
        json.loads(got)
        if AWS_KEY not in want:
            assert got == want
    topic = vault.get_topic(f"session-{CLAUDE_SESSION}")
    assert topic.extra["redacted"] == 2
    assert topic.extra["redacted_kinds"] == {"AWS access key id": 1, "password assignment": 1}
    assert "Redacted: 2" in git("log", "-1", "--format=%B")
    # Ingesting the same source again is recognised (no commit), though the stored copy differs from it.
    head = git("rev-parse", "HEAD").strip()
    assert ingest_file(vault, src).action == "unchanged"
    assert git("rev-parse", "HEAD").strip() == head


def test_a_plain_jsonl_log_and_a_folder_of_logs_through_the_cli(vault_path, tmp_path) -> None:
    code, _, err = am("--actor", "tester", "init", str(vault_path), "--name", "v")
    assert code == 0, err
    folder = tmp_path / "logs"
    write_log(folder / "plain-1.jsonl", [json.dumps({"ts": "2026-11-28T09:00:00Z", "role": "user", "text": "hi"}),
                                         json.dumps({"ts": "2026-11-28T09:00:05Z", "role": "assistant",
                                                     "text": "remember: staging is eu-west-1"})])
    write_log(folder / f"{CLAUDE_SESSION}.jsonl", claude_lines())
    (folder / "notes.jsonl").write_text("this is not a session\n")
    code, out, err = am("--vault", str(vault_path), "ingest", str(folder), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert sorted(s["session"] for s in data["sessions"]) == sorted([CLAUDE_SESSION, "plain-1"])
    assert len(data["skipped"]) == 1 and "notes.jsonl" in data["skipped"][0]
    assert run_git(vault_path, "show", "HEAD:sessions/2026/11/28/plain-1.jsonl").count("\n") == 2
    code, out, _ = am("--vault", str(vault_path), "ingest", str(folder))
    assert code == 0 and out.count("unchanged:") == 2
    # A name a person gave is the title whole (a client's UUID shows its first 8 digits); one line is one line.
    write_log(tmp_path / "one" / "solo-notes.jsonl", [json.dumps({"ts": "2026-11-28T10:00:00Z", "role": "user",
                                                                  "text": "one line only"})])
    code, out, err = am("--vault", str(vault_path), "ingest", str(tmp_path / "one" / "solo-notes.jsonl"))
    titles = run_git(vault_path, "grep", "-h", "^title:", "HEAD", "--", "topics").splitlines()
    assert "title: Agent session solo-notes" in titles and f"title: Claude Code session {CLAUDE_SESSION[:8]}" in [
        t.split(" in ")[0] for t in titles], titles
    assert code == 0 and ", 1 line, " in out and "solo-notes" in run_git(vault_path, "log", "-1", "--format=%B"), out


def test_a_symbolic_link_in_a_folder_is_listed_as_skipped_not_followed(vault, git, tmp_path) -> None:
    folder = tmp_path / "logs"
    write_log(folder / f"{CLAUDE_SESSION}.jsonl", claude_lines())
    outside = write_log(tmp_path / "elsewhere" / f"{CODEX_SESSION}.jsonl", codex_lines())
    (folder / "linked.jsonl").symlink_to(outside)
    (folder / "gone.jsonl").symlink_to(tmp_path / "no-such.jsonl")
    code, out, err = am("--vault", str(vault.root), "ingest", str(folder), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert [s["session"] for s in data["sessions"]] == [CLAUDE_SESSION]
    assert data["skipped"] == [f"{folder / name}: a symbolic link; am does not follow it (ingest the file it points to)"
                               for name in ("gone.jsonl", "linked.jsonl")]
    assert git("ls-tree", "-r", "--name-only", "HEAD", "sessions").split() == [
        f"sessions/2026/11/30/{CLAUDE_SESSION}.jsonl"]
    code, out, _ = am("--vault", str(vault.root), "ingest", str(folder))
    assert code == 0 and f"skipped: {folder / 'linked.jsonl'}: a symbolic link" in out

@pytest.mark.parametrize("text", ["", "   \n"])
def test_an_empty_log_is_refused_and_nothing_changes(vault, git, tmp_path, text) -> None:
    from am.errors import UsageError
    from am.sessions.ingest import ingest_file

    src = tmp_path / "empty.jsonl"
    src.write_text(text)
    head = git("rev-parse", "HEAD").strip()
    with pytest.raises(UsageError):
        ingest_file(vault, src)
    assert git("rev-parse", "HEAD").strip() == head


def test_a_different_session_with_the_same_topic_id_is_refused_not_written_over(vault, git, tmp_path) -> None:
    """Session ids `run.1` and `run_1` both make the topic id session-run-1: the second must not replace the first."""
    from am.errors import UsageError
    from am.sessions.ingest import ingest_file

    first = tmp_path / "a.jsonl"
    first.write_text('{"ts": "2026-11-02T00:00:00Z", "role": "user", "text": "first", "session": "run.1"}\n')
    second = tmp_path / "b.jsonl"
    second.write_text('{"ts": "2026-11-03T00:00:00Z", "role": "user", "text": "second", "session": "run_1"}\n')
    ingest_file(vault, first)
    head = git("rev-parse", "HEAD").strip()
    with pytest.raises(UsageError, match="run_1.*session-run-1.*run.1"):
        ingest_file(vault, second)
    assert git("rev-parse", "HEAD").strip() == head
    assert git("show", "HEAD:sessions/2026/11/02/run.1.jsonl").encode() == first.read_bytes()


@pytest.mark.parametrize("sid", ["CON", "nul", "aux.1", "Com1"])
def test_a_device_name_is_not_a_session_file_name(vault, git, tmp_path, sid) -> None:
    """sessions/.../CON.jsonl cannot be checked out on Windows: the file's name is used instead."""
    from am.sessions.ingest import ingest_file

    src = tmp_path / "plain-2.jsonl"
    src.write_text(f'{{"ts": "2026-11-02T00:00:00Z", "role": "user", "text": "hi", "session": "{sid}"}}\n')
    result = ingest_file(vault, src)
    assert result.session == "plain-2"
    assert git("ls-tree", "-r", "--name-only", "HEAD", "sessions").split() == ["sessions/2026/11/02/plain-2.jsonl"]


def test_vault_stays_checkable_after_ingest(vault, tmp_path) -> None:
    from am.sessions.ingest import ingest_file

    ingest_file(vault, write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", claude_lines()))
    code, out, err = am("--vault", str(vault.root), "check")
    assert code == 0, out + err


def test_search_reaches_session_lines_by_words_role_session_and_time(vault, tmp_path, monkeypatch) -> None:
    from am.sessions.ingest import ingest_file

    ingest_file(vault, write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", claude_lines()))
    ingest_file(vault, write_log(tmp_path / "codex.jsonl", codex_lines()))
    monkeypatch.setenv("AM_NOW", "2026-12-01T09:00:00+00:00")
    root = str(vault.root)
    code, out, err = am("--vault", root, "search", "limit", "--session", "--format", "json")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    # Ranked by relevance (tests/test_sessions_ranked.py holds the order); here, which lines match.
    assert {(h["session"], h["line"], h["role"]) for h in hits} == {
        (CLAUDE_SESSION, 6, "assistant"), (CLAUDE_SESSION, 5, "user"), (CLAUDE_SESSION, 2, "user")}
    assert {h["path"] for h in hits} == {f"sessions/2026/11/30/{CLAUDE_SESSION}.jsonl"}
    code, out, _ = am("--vault", root, "search", "rate", "limit", "--role", "user", "--format", "json")
    assert [h["line"] for h in json.loads(out)["hits"]] == [2, 5]  # "a rate limit" as a phrase first
    code, out, _ = am("--vault", root, "search", "RATE", "--role", "assistant", "--format", "json")
    assert json.loads(out)["hits"] == []
    code, out, _ = am("--vault", root, "search", "get_user", "--role", "tool", "--format", "json")
    tool_hits = json.loads(out)["hits"]
    # Both words first; lines holding only some of them come after, and say so.
    assert {(h["session"], h["line"]) for h in tool_hits[:2]} == {(CLAUDE_SESSION, 4), (CODEX_SESSION, 8)}
    assert all(h["matched"] == 2 for h in tool_hits[:2]) and all(h["matched"] < 2 for h in tool_hits[2:])
    # A time phrase narrows by the message's own time: the Codex session was the day before yesterday.
    code, out, _ = am("--vault", root, "search", "batch", "yesterday", "--session", "--format", "json")
    assert json.loads(out)["hits"] == []
    code, out, _ = am("--vault", root, "search", "batch", "2 days ago", "--session", "--format", "json")
    assert {h["session"] for h in json.loads(out)["hits"]} == {CODEX_SESSION}
    code, out, _ = am("--vault", root, "search", "limit", "--in-session", CODEX_SESSION)
    assert code == 0 and "no session lines found" in out
    code, out, _ = am("--vault", root, "search", "remember", "--session")
    assert f"{CLAUDE_SESSION}  line 5  user" in out and f"sessions/2026/11/30/{CLAUDE_SESSION}.jsonl:5" in out
    # A pack carries no raw session text.
    code, out, _ = am("--vault", root, "slice", "--max-tokens", "0")
    assert "token bucket" not in out and "getUsers(ids) accepts" not in out


def test_a_session_end_hook_sends_its_json_on_stdin(vault, git, tmp_path) -> None:
    src = write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", claude_lines())
    hook = {"session_id": CLAUDE_SESSION, "transcript_path": str(src), "cwd": "/home/dev/alpha",
            "hook_event_name": "SessionEnd", "reason": "exit"}
    code, out, err = am("--vault", str(vault.root), "ingest", "-", input=json.dumps(hook))
    assert code == 0, err
    assert out.startswith(f"added: {CLAUDE_SESSION}")
    assert git("show", f"HEAD:sessions/2026/11/30/{CLAUDE_SESSION}.jsonl").encode() == src.read_bytes()
    code, _, err = am("--vault", str(vault.root), "ingest", "-", input="{}")
    assert code != 0 and "transcript_path" in err


def test_an_unfinished_last_line_is_held_back_until_it_is_written(vault, git, tmp_path) -> None:
    """A live log can stop part way through a key: that half line never reaches history, the whole one is masked."""
    lines = claude_lines(extra_user=f"deploy with key {AWS_KEY} please")
    whole = "\n".join(lines) + "\n"
    cut = whole.index(AWS_KEY) + len(AWS_KEY) // 2  # half the key: no detector recognises it
    src = tmp_path / f"{CLAUDE_SESSION}.jsonl"
    src.write_text(whole[:cut])
    code, out, err = am("--vault", str(vault.root), "ingest", str(src), "--format", "json")
    assert code == 0, err
    result = json.loads(out)["sessions"][0]
    assert result["action"] == "added" and result["lines"] == 6
    assert result["held_back"] == 1 and result["held_back_bytes"] == cut - len("\n".join(lines[:6]) + "\n")
    stored = f"sessions/2026/11/30/{CLAUDE_SESSION}.jsonl"
    # The stored log is the source's complete lines, byte for byte; the half key is in no commit.
    assert git("show", f"HEAD:{stored}") == "\n".join(lines[:6]) + "\n"
    assert AWS_KEY[:10] not in git("log", "-p", "--all")
    head = git("rev-parse", "HEAD").strip()
    code, out, _ = am("--vault", str(vault.root), "ingest", str(src))
    assert code == 0 and out.startswith("unchanged:") and "1 unfinished line held back" in out
    assert git("rev-parse", "HEAD").strip() == head
    # The writer finishes the line: the next ingest appends it, masked.
    src.write_text(whole)
    code, out, err = am("--vault", str(vault.root), "ingest", str(src), "--format", "json")
    assert code == 0, err
    result = json.loads(out)["sessions"][0]
    assert result["action"] == "appended" and result["held_back"] == 0 and result["lines"] == 7, out
    assert git("rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert "[redacted:AWS access key id]" in git("show", f"HEAD:{stored}")
    assert AWS_KEY[:10] not in git("log", "-p", "--all")


def test_a_last_line_without_newline_that_is_json_is_stored(vault, git, tmp_path) -> None:
    from am.sessions.ingest import ingest_file

    src = tmp_path / f"{CLAUDE_SESSION}.jsonl"
    src.write_text("\n".join(claude_lines()))
    result = ingest_file(vault, src)
    assert result.lines == 6 and result.held_back == 0
    assert git("show", f"HEAD:{result.path}").encode() == src.read_bytes()


def test_a_log_of_one_unfinished_line_writes_nothing(vault, git, tmp_path) -> None:
    src = tmp_path / f"{CLAUDE_SESSION}.jsonl"
    src.write_text(claude_lines()[0][:30])
    head = git("rev-parse", "HEAD").strip()
    code, _, err = am("--vault", str(vault.root), "ingest", str(src))
    assert code == 2 and "one unfinished line only" in err and str(src) in err
    assert git("rev-parse", "HEAD").strip() == head and git("status", "--porcelain") == ""


def test_record_search_never_reads_a_stored_log_even_when_the_cache_took_in_the_ingest(vault, tmp_path) -> None:
    """docs/sessions.md: session text is searched with --session only; record search never reads the logs. The
    cache took in the ingest's commit path by path, the log too, as a note: raw JSON lines in `am search`."""
    from am.sessions.ingest import ingest_file

    root = str(vault.root)
    code, _, err = am("--vault", root, "search", "anything", "--format", "json")  # the cache exists before
    assert code == 0, err
    ingest_file(vault, write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", claude_lines()))
    code, out, err = am("--vault", root, "search", "token", "bucket", "--format", "json")
    assert code == 0, err
    assert [h["path"] for h in json.loads(out)["hits"] if h["type"] == "note"] == []
    code, out, _ = am("--vault", root, "index", "status", "--format", "json")
    assert json.loads(out)["notes"] == 0
