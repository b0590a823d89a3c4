"""The clerk (`am propose --extractor CMD`) against extractors that misbehave as real LLM wrappers do."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest
from session_samples import CLAUDE_SESSION, claude_lines, write_log
from test_cli import am

from am.vault import Vault

GITHUB_TOKEN = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"  # shaped like a token, not a real one
AWS_KEY = "AKIAQ7R3XW5TZB2KJ4NP"


def _ingested(vault: Vault, tmp_path: Path) -> None:
    from am.sessions.ingest import ingest_file

    ingest_file(vault, write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", claude_lines()))


def _extractor(tmp_path: Path, answer: object, *, before: str = "") -> str:
    path = tmp_path / "extractor.py"
    path.write_text(f"import json, sys\njson.load(sys.stdin)\n{before}\nprint(json.dumps({answer!r}))\n")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def _propose(vault: Vault, command: str, *args: str) -> tuple[int, str, str]:
    return am("--vault", str(vault.root), "propose", CLAUDE_SESSION, "--extractor", command, *args)


def test_a_credential_the_clerk_refuses_is_masked_in_the_report_and_its_commit(alpha, git, tmp_path) -> None:
    """A refused proposal's text, and an extractor's own skipped items, are printed and committed in the report:
    a credential in them is masked there, as the session log's are."""
    _ingested(alpha, tmp_path)
    answer = {"proposals": [{"text": f"The CI token is {GITHUB_TOKEN} for deploys.", "lines": [5]},
                            {"text": f"A line that is not there: {AWS_KEY}.", "lines": [999]}],
              "skipped": [{"text": f"key {AWS_KEY}", "lines": [5], "reason": f"a secret, {GITHUB_TOKEN}"}]}
    code, out, err = _propose(alpha, _extractor(tmp_path, answer), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert [s["reason"][:20] for s in report["skipped"]] == [
        "extractor: a secret,", "it looks like it hol", "cites line 999, whic"]
    assert GITHUB_TOKEN not in out and AWS_KEY not in out and "[redacted:" in out
    history = git("log", "-p", "--format=%B", "--all")
    assert GITHUB_TOKEN not in history and AWS_KEY not in history
    assert "[redacted:" in git("log", "-1", "--format=%B")


@pytest.mark.parametrize("item, reason", [
    ({"text": "Topics given as null.", "lines": [5], "topics": None, "paths": None}, None),
    ({"text": "Topics given as a string.", "lines": [5], "topics": "project-alpha"}, "'topics' is not a list"),
    ({"text": "Topics given as a number.", "lines": [5], "topics": 5}, "'topics' is not a list"),
    ({"text": "Paths given as a string.", "lines": [5], "paths": "src/api/limits.py"}, "'paths' is not a list"),
    ({"text": "Lines given as a number.", "lines": 5}, "'lines' is not a list"),
    ({"text": "Lines given as true.", "lines": [True]}, "'lines' is not a list"),
    ({"text": "An empty path.", "lines": [5], "paths": [""]}, "field 'paths': must not contain empty strings"),
    ({"text": "A NUL \u0000 in the text.", "lines": [5]}, "field 'body': contains the control character U+0000"),
    ({"text": "Cites the line after the last.", "lines": [7]}, "cites line 7, which the session does not have"),
    ({"text": "A path out of the repository.", "lines": [5], "paths": ["../etc/passwd"]},
     "--path '../etc/passwd' steps out of the code repository"),
])
def test_a_proposal_of_the_wrong_shape_is_skipped_with_why_and_the_rest_are_written(alpha, git, tmp_path, item,
                                                                                     reason) -> None:
    _ingested(alpha, tmp_path)
    good = {"text": "getUser is limited to 100 requests a minute per client.", "lines": [6],
            "topics": ["Not An Id", "../../etc", "project-alpha"]}
    answer = {"proposals": [item, good], "skipped": [{"text": "tests pass", "lines": None}, "a bare string"]}
    code, out, err = _propose(alpha, _extractor(tmp_path, answer), "--format", "json")
    assert code == 0 and "Traceback" not in err, err
    report = json.loads(out)
    written = {p["text"]: p["id"] for p in report["proposed"]}
    assert good["text"] in written
    # A topic that is no topic id (or names none) is left off, as an unknown one is.
    assert alpha.get_fact(written[good["text"]]).topics == (f"session-{CLAUDE_SESSION}", "project-alpha")
    if reason is None:
        assert item["text"] in written
    else:
        assert item["text"] not in written
        assert next(s["reason"] for s in report["skipped"] if s["text"] == " ".join(item["text"].split())).startswith(
            reason)
    assert git("log", "-1", "--format=%s").startswith("session: propose")


@pytest.mark.parametrize("command, message", [
    ("", "--extractor is empty"),
    ("'unclosed", "--extractor 'unclosed is not a command line"),
])
def test_an_extractor_that_is_no_command_line_is_refused_and_nothing_is_written(alpha, git, tmp_path, command,
                                                                                message) -> None:
    _ingested(alpha, tmp_path)
    head = git("rev-parse", "HEAD").strip()
    code, _, err = _propose(alpha, command)
    assert code == 2 and message in err and "Traceback" not in err, err
    assert git("rev-parse", "HEAD").strip() == head


def test_json_nested_too_deep_is_not_json_to_the_clerk(alpha, git, tmp_path) -> None:
    _ingested(alpha, tmp_path)
    path = tmp_path / "deep.py"
    path.write_text("import sys\nsys.stdin.read()\nprint('[' * 100000 + ']' * 100000)\n")
    code, _, err = _propose(alpha, f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}")
    assert code == 2 and "did not print JSON" in err and "Traceback" not in err, err


def test_an_extractor_that_answered_is_read_though_a_helper_it_started_still_runs(alpha, git, tmp_path) -> None:
    """A wrapper that starts a helper (a model server) which keeps its standard output: the answer is read when
    the extractor exits, not when the helper does."""
    _ingested(alpha, tmp_path)
    before = "import subprocess; subprocess.Popen(['sleep', '20'])"
    answer = {"proposals": [{"text": "getUser is limited to 100 requests a minute per client.", "lines": [6]}]}
    start = time.monotonic()
    code, out, err = _propose(alpha, _extractor(tmp_path, answer, before=before), "--timeout", "10")
    assert code == 0, err
    assert time.monotonic() - start < 8 and "proposed 1" in out


def test_an_extractor_that_times_out_is_stopped_with_what_it_started(alpha, git, tmp_path) -> None:
    """A shell wrapper around the model call: on the timeout the call is stopped too, not left running."""
    _ingested(alpha, tmp_path)
    pid_file = tmp_path / "model.pid"
    model = tmp_path / "model.py"
    model.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(f"#!/bin/sh\n{shlex.quote(sys.executable)} {shlex.quote(str(model))}\n")
    wrapper.chmod(0o755)
    head = git("rev-parse", "HEAD").strip()
    code, _, err = _propose(alpha, str(wrapper), "--timeout", "2")
    assert code == 2 and "gave no answer in 2 s" in err, err
    assert git("rev-parse", "HEAD").strip() == head
    pid = int(pid_file.read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail("the model call the wrapper started was left running")


@pytest.mark.parametrize("where", ["absolute", "climbs", "link"])
def test_a_session_topic_naming_a_file_outside_the_vault_is_not_read(alpha, git, tmp_path, where, monkeypatch) -> None:
    """A session topic is a record anyone who writes the vault can edit: its `file` pointing out of the vault's
    sessions/ folder (absolute, ../, or a committed link) must not make am read a file of this machine, show it in
    review or session search, or hand it to an extractor (whose proposals would be committed and synced)."""
    from conftest import run_git

    _ingested(alpha, tmp_path)
    from am.sessions.clerk import propose

    proposal = propose(alpha, CLAUDE_SESSION).proposed[0][0]
    outside = tmp_path / "private.jsonl"
    write_log(outside, claude_lines(extra_user="remember: PRIVATEWORD is mine"))
    topic = alpha.root / "topics" / f"session-{CLAUDE_SESSION}.md"
    stored = next(line.split(": ", 1)[1] for line in topic.read_text().splitlines() if line.startswith("file: "))
    if where == "link":
        (alpha.root / stored).unlink()
        (alpha.root / stored).symlink_to(outside)
        run_git(alpha.root, "add", "-A")
    else:
        target = str(outside) if where == "absolute" else f"sessions/../{os.path.relpath(outside, alpha.root)}"
        topic.write_text(topic.read_text().replace(f"file: {stored}", f"file: {target}"))
        run_git(alpha.root, "add", "-A")
    run_git(alpha.root, "commit", "-q", "-m", "a hand edit")
    head = git("rev-parse", "HEAD").strip()
    code, out, err = am("--vault", str(alpha.root), "propose", CLAUDE_SESSION)
    assert code == 2 and "not in the vault's sessions/ folder" in err and "PRIVATEWORD" not in out + err, out + err
    assert git("rev-parse", "HEAD").strip() == head
    code, out, err = am("--vault", str(alpha.root), "search", "--session", "PRIVATEWORD")
    assert "PRIVATEWORD" not in out + err
    from am.sessions.search import search_sessions

    monkeypatch.setattr(type(alpha), "cache", lambda self: None)  # the scan used when the cache cannot be
    assert search_sessions(alpha, "PRIVATEWORD").hits == ()
    assert [h.path for h in search_sessions(alpha, "Alpha").hits] == []
    monkeypatch.undo()
    code, out, err = am("--vault", str(alpha.root), "review", "list", "--kind", "proposal", "--format", "json")
    item = next(i for i in json.loads(out)["items"] if i["id"] == proposal)
    assert item["evidence"] and "not in the vault's sessions/ folder" in item["evidence"][0]


def _colliding_texts(session_id: str) -> tuple[str, str]:
    """Return two statements whose proposal ids in this session share their 6 hex digits (a birthday search)."""
    from am.sessions.clerk import proposal_id

    seen: dict[str, str] = {}
    for n in range(200_000):
        text = f"Fact number {n} holds."
        fid = proposal_id(session_id, text, None)
        if fid in seen:
            return seen[fid], text
        seen[fid] = text
    raise AssertionError("no collision found")


def test_two_texts_whose_proposal_ids_collide_are_both_proposed_and_reruns_keep_their_ids(alpha, git, tmp_path) -> None:
    """A proposal's id holds 6 hex digits of a hash of the session and the text: a second text with the same digits
    was skipped as 'already proposed' (lost). It gets a longer digest instead; a rerun finds each under its own id."""
    _ingested(alpha, tmp_path)
    first, second = _colliding_texts(CLAUDE_SESSION)
    code, out, err = _propose(alpha, _extractor(tmp_path, {"proposals": [{"text": first, "lines": [5]}]}),
                              "--format", "json")
    assert code == 0 and [p["text"] for p in json.loads(out)["proposed"]] == [first], out + err
    both = _extractor(tmp_path, {"proposals": [{"text": first, "lines": [5]}, {"text": second, "lines": [5]}]})
    code, out, err = _propose(alpha, both, "--format", "json")
    report = json.loads(out)
    assert code == 0 and [p["text"] for p in report["proposed"]] == [second], out + err
    long_id = report["proposed"][0]["id"]
    assert len(long_id) > len("f-20261130-1000-6d753b") and second in git("show", "HEAD", "--", "facts")
    code, out, err = _propose(alpha, both, "--format", "json")
    report = json.loads(out)
    assert report["proposed"] == [] and any(s["reason"] == f"already proposed as {long_id}"
                                            for s in report["skipped"]), out + err
