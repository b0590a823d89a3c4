"""A large session log (past am/git/formats/bigblob.py's threshold): written ahead as a loose object, masked without a second copy.

The memory figures are measured by bench/bench_sessions.py; these tests hold what the
memory-saving paths must keep: the stored bytes, the blob Git sees, the growth and
replacement a log can go through, and the masked copy identical to redact_log's.
"""

from __future__ import annotations

import io
import json
import random

import pytest
from conftest import fsck_clean
from session_samples import AWS_KEY, CLAUDE_SESSION, claude_lines, write_log


def _big_lines(count: int, *, seed: int = 3, key_every: int = 0) -> list[str]:
    """A Claude Code transcript of ``count`` extra tool results (~1.5 kB each) after the sample's lines."""
    rng = random.Random(seed)
    lines = claude_lines()
    base = json.loads(lines[1])
    for n in range(count):
        body = "\n".join(rng.choice(["def f(x):", "    return x", "# 中文注释", "assert f(1) == 1"]) for _ in range(100))
        if key_every and n % key_every == 0:
            body += f"\nexport AWS_ACCESS_KEY_ID={AWS_KEY}"
        obj = {**base, "uuid": f"u{n}", "timestamp": f"2026-11-30T11:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
               "message": {"role": "user", "content": [{"tool_use_id": f"t{n}", "type": "tool_result",
                                                        "content": body}]}}
        lines.append(json.dumps(obj, separators=(",", ":"), ensure_ascii=False))
    return lines


def test_redact_log_to_writes_what_redact_log_returns_and_nothing_for_a_clean_log() -> None:
    from am.sessions.redaction import redact_log, redact_log_to

    data = "".join(line + "\n" for line in _big_lines(300, key_every=50)).encode()
    out = io.BytesIO()
    counts = redact_log_to(data, out)
    want = redact_log(data)
    assert counts == want.counts and counts["AWS access key id"] == 6
    assert out.getvalue() == want.data and AWS_KEY.encode() not in out.getvalue()
    clean = "".join(line + "\n" for line in _big_lines(50)).encode()
    empty = io.BytesIO()
    assert redact_log_to(clean, empty) is None and empty.getvalue() == b""


def test_a_large_log_with_secrets_is_stored_masked_then_grown_then_replaced(vault, vault_path, git, tmp_path) -> None:
    from am.git.formats.bigblob import LARGE
    from am.sessions.ingest import ingest_file
    from am.sessions.redaction import redact_log

    lines = _big_lines(1200, key_every=300)
    src = write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", lines)
    assert src.stat().st_size > LARGE
    result = ingest_file(vault, src)
    assert result.action == "added" and result.redacted["AWS access key id"] == 4
    want = redact_log(src.read_bytes()).data
    stored = f"sessions/2026/11/30/{CLAUDE_SESSION}.jsonl"
    blob = git("rev-parse", f"HEAD:{stored}").strip()
    # The blob Git has, the work-tree file and Git's index agree with the masked log (the git CLI as oracle).
    assert git("cat-file", "blob", blob).encode() == want == (vault_path / stored).read_bytes()
    assert git("ls-files", "-s", stored).split()[1] == blob
    assert git("status", "--porcelain") == ""
    # Written ahead as a loose object, not into the batch's pack as well.
    assert (vault_path / ".git" / "objects" / blob[:2] / blob[2:]).is_file()

    # Grown: compared by blob id with the vault's copy (never read back), one append commit.
    head = git("rev-parse", "HEAD").strip()
    write_log(src, [*lines, *_big_lines(20, seed=4)[len(claude_lines()):]])
    grown = ingest_file(vault, src)
    assert grown.action == "appended"
    assert git("rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert f"(+{grown.bytes - result.bytes})" in git("log", "-1", "--format=%B")
    assert git("show", f"HEAD:{stored}").encode() == redact_log(src.read_bytes()).data
    # Changed in the middle (same size or not): a replace commit; the old bytes stay in history.
    lines[500] = lines[500].replace("return x", "return y")
    write_log(src, lines)
    assert ingest_file(vault, src).action == "replaced"
    assert git("log", "-1", "--format=%s").startswith(f"session: replace {CLAUDE_SESSION}")
    assert git("show", f"HEAD:{stored}").encode() == redact_log(src.read_bytes()).data
    assert git("status", "--porcelain") == ""
    fsck_clean(vault_path)


@pytest.mark.parametrize("size", [0, 5, 1 << 20, (1 << 20) + 7])
def test_hash_fd_and_hash_file_agree_with_git(tmp_path, size: int) -> None:
    import os
    import subprocess

    from am.git.light import hash_blob, hash_fd, hash_file

    path = tmp_path / "f"
    data = random.Random(size).randbytes(size)
    path.write_bytes(data)
    want = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True).stdout.strip()
    assert hash_file(path) == hash_blob(data) == want
    fd = os.open(path, os.O_RDONLY)
    try:
        assert hash_fd(fd) == want
    finally:
        os.close(fd)
