"""Input nobody planned for gets an answer, not a traceback, and reading it is bounded.

JSON nested some thousands of levels deep made `am import` (every JSON format) and `am ingest` end in a
RecursionError traceback (Python's reader gives up near 1,000 levels; am's own walks of a value a little below
that); a lone surrogate escape ("\\ud800") ended in a UnicodeEncodeError traceback; and `am import jsonl
/dev/zero` read without end. Now a line of JSON Lines that is nested deeper than 100 levels or holds a lone
surrogate is left aside like any line that is not JSON, naming the file and line; a JSON file that does is
refused (exit 2) naming the file, nothing written; a source is read in bounded chunks, refused at its first
NUL byte (no text export has one: /dev/zero is refused at once) or past MAX_SOURCE_BYTES, however it is fed. A
session log keeps such a line byte for byte (masked), and `am ingest -` reads at most 1 MiB of a hook's JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import run_git, subprocess_env

from am.errors import UsageError
from am.io import files
from am.io.importer import import_source
from am.vault import Vault

DEEP = "[" * 100_000 + "]" * 100_000
NEARLY = "[" * 950 + "]" * 950  # under Python's reader's limit, over what a walk of it can take


def _am(root: Path, *args: str, stdin: object = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(root), *args], capture_output=True,
                          text=True, env=subprocess_env(AM_HOME=os.environ["AM_HOME"]), stdin=stdin, input=input,
                          timeout=120, check=False)


def _head(root: Path) -> str:
    return run_git(root, "rev-parse", "HEAD").strip()


def _entity(name: str, **extra: object) -> str:
    return json.dumps({"type": "entity", "name": name, "entityType": "tool", "observations": [f"{name} works."],
                       **extra})


@pytest.mark.parametrize(("system", "line"), [
    ("mcp-memory", DEEP),
    # _entity("Deep", deep=json.loads(NEARLY)), written out: at import a pytest-xdist worker is some frames
    # deeper than a plain run, and Python's reader and writer then reach the recursion limit on NEARLY.
    ("mcp-memory", _entity("Deep")[:-1] + ', "deep": ' + NEARLY + "}"),
    ("mcp-memory", '{"type": "entity", "name": "Bad", "entityType": "tool", "observations": ["x \\ud800 y"]}'),
    ("lossless", '{"id": "r1", "text": "' + "x" * 10 + '", "more": ' + DEEP + "}"),
    ("lossless", '{"id": "r2", "text": "half \\udc00 a pair"}'),
    ("jsonl", DEEP),
    ("jsonl", ('{"meta": {"type": "fact", "id": "fact-s", "topics": ["project-alpha"], "status": "active",'
               ' "confidence": "medium", "provenance": "human", "created": "2026-11-30"},'
               ' "body": "bad \\ud800 text"}')),
])
def test_a_line_am_cannot_hold_is_left_aside_naming_it(alpha: Vault, vault_path: Path, tmp_path: Path,
                                                       system: str, line: str) -> None:
    good = _entity("Fine") if system == "mcp-memory" else (
        json.dumps({"id": "ok", "text": "A fine record."}) if system == "lossless" else
        json.dumps({"meta": {"type": "fact", "id": "fact-ok", "topics": ["project-alpha"], "status": "active",
                             "confidence": "medium", "provenance": "human",
                             "created": "2026-11-30T10:00:00+00:00"}, "body": "A fine fact.\n"}))
    source = tmp_path / "src.jsonl"
    source.write_text(good + "\n" + line + "\n", encoding="utf-8")
    done = _am(vault_path, "import", system, str(source), "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    aside = json.loads(done.stdout)["left_aside"]
    assert [a["origin"] for a in aside] == ["src.jsonl:2"], aside
    assert "nested deeper than 100 levels" in aside[0]["reason"] or "lone surrogate" in aside[0]["reason"], aside
    assert json.loads(done.stdout)["commits"], "the line that reads is imported"


@pytest.mark.parametrize(("system", "text"), [
    ("supermemory", '{"memories": ' + DEEP + "}"),
    ("openclaw", '{"items": [{"id": "a", "summary": "x", "deep": ' + DEEP + "}]}"),
    ("supermemory", '{"memories": [{"id": "m1", "memory": "bad \\ud800 text"}]}'),
    ("jsonl", '{"format": "am-export", "version": 1, "records": ' + DEEP + "}"),
])
def test_a_json_file_am_cannot_hold_is_refused_naming_it(alpha: Vault, vault_path: Path, tmp_path: Path,
                                                         system: str, text: str) -> None:
    source = tmp_path / ("items.json" if system == "openclaw" else "src.json")
    source.write_text(text, encoding="utf-8")
    head = _head(vault_path)
    done = _am(vault_path, "import", system, str(source))
    assert "Traceback" not in done.stderr, done.stderr
    if system == "jsonl":  # am's export document: its one entry is left aside, as a line that is not JSON
        assert done.returncode == 0 and "src.json: JSON nested deeper than 100 levels" in done.stdout, done.stdout
    else:
        assert done.returncode == 2, done.stderr
        assert source.name in done.stderr and ("nested deeper" in done.stderr or "lone surrogate" in done.stderr)
    assert _head(vault_path) == head


@pytest.mark.parametrize("system", ["jsonl", "mcp-memory", "lossless", "supermemory", "openclaw"])
def test_dev_zero_is_refused_at_once(alpha: Vault, vault_path: Path, system: str) -> None:
    head = _head(vault_path)
    done = _am(vault_path, "import", system, "/dev/zero")
    assert done.returncode == 2, done.stderr
    assert "/dev/zero: a NUL byte at line 1: not a text file" in done.stderr, done.stderr
    assert _head(vault_path) == head


def test_reading_stops_at_the_size_cap_however_the_source_is_fed(alpha: Vault, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAX_SOURCE_BYTES", 3 * files._CHUNK)
    big = tmp_path / "big.jsonl"
    big.write_text((_entity("Big") + "\n") * (4 * files._CHUNK // len(_entity("Big"))), encoding="utf-8")
    with pytest.raises(UsageError, match="is larger than"):
        import_source(alpha, "mcp-memory", big)
    # A pipe that never ends (`yes`): refused once it passes the cap, not read for ever.
    fifo = tmp_path / "endless.jsonl"
    os.mkfifo(fifo)
    stop = threading.Event()

    def feed() -> None:
        line = (_entity("Endless") + "\n").encode()
        try:
            with fifo.open("wb") as out:
                while not stop.is_set():
                    out.write(line * 100)
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        with pytest.raises(UsageError, match="is larger than"):
            import_source(alpha, "mcp-memory", fifo)
    finally:
        stop.set()
        writer.join(timeout=30)
    assert not writer.is_alive()


def test_a_session_log_keeps_a_line_too_deep_to_read(alpha: Vault, vault_path: Path, tmp_path: Path) -> None:
    first = json.dumps({"type": "user", "sessionId": "deep-1", "timestamp": "2026-11-30T10:00:00Z", "cwd": "/tmp",
                        "message": {"role": "user", "content": "Hello."}})
    nearly = ('{"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": '
              + '{"content": ' * 900 + '"x"' + "}" * 900 + '}]}, "note": "password=hunter2xyz123"}')
    log = tmp_path / "deep-1.jsonl"
    log.write_text(first + "\n" + '{"type": "user", "x": ' + DEEP + "}\n" + nearly + "\n", encoding="utf-8")
    done = _am(vault_path, "ingest", str(log), "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    stored = next(vault_path.glob("sessions/*/*/*/deep-1.jsonl")).read_text(encoding="utf-8")
    assert DEEP in stored and "hunter2xyz123" not in stored
    found = _am(vault_path, "search", "--session", "Hello")
    assert found.returncode == 0 and "deep-1" in found.stdout and "Traceback" not in found.stderr, found.stderr
    # A deep last line with no newline yet is held back like a half-written one.
    log.write_text(first + "\n" + "[" * 100_000, encoding="utf-8")
    again = _am(vault_path, "ingest", str(log), "--format", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["sessions"][0]["held_back"] == 1, again.stderr


def test_ingest_from_standard_input_reads_a_bounded_hook_json(alpha: Vault, vault_path: Path) -> None:
    with open("/dev/zero", "rb") as zero:
        done = _am(vault_path, "ingest", "-", stdin=zero)
    assert done.returncode == 2 and "more than 1 MiB" in done.stderr, done.stderr
    deep = _am(vault_path, "ingest", "-", input=DEEP)
    assert deep.returncode == 2 and "no hook JSON with a transcript_path" in deep.stderr, deep.stderr
