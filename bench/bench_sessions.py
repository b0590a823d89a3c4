"""`am ingest` of a large session log against copying it into a repository with the git CLI.

Figures, all from one run on one generated Claude Code transcript of --mb MB
(user prompts, assistant text, tool calls and tool results with code and
command output, some Chinese, and a few credentials to mask):

* baseline: ``cp`` the log into a fresh repository, ``git add``, ``git
  commit`` (the git CLI, end to end), in seconds;
* ``am ingest FILE`` into a fresh vault, end to end as a process (read, mask
  secrets, write the file, blob, tree, commit, Git's index, the session
  topic), in seconds and as the ratio am / git (target <= 3.0);
* the peak resident memory of that ``am ingest`` process, above the same
  process that only starts and opens the vault, as a ratio to the log's size
  (target <= 2.0);
* ``am search --session`` over that log: the first search (which builds the
  cache's session tables, am/cache/sessionlines.py), a later one, and a search
  that reads and scans the log instead (what ``am search --session`` did before
  the tables, and still does when the cache cannot be used), in seconds;
* ``am ingest`` of the same log again (no commit), and of the log grown by
  1%, in seconds (and the grown ingest's peak memory, the same ratio: it
  compares the new log with the vault's copy).

With ``--review``, instead: the review queue's evidence for the clerk's proposals
(``--sessions`` logs of ``--mb`` MB, each with a few ``remember:`` lines the
default clerk proposes), in this process: the session lines cited by every
proposal read the way ``am review list`` did before (each proposal reads and
parses its session's log: ``cited_lines`` once per proposal) against once per
log (``cited_by_fact``, what ``review_queue`` does), as a ratio; the same lines
either way; and the whole ``review_queue``.

Usage: python bench/bench_sessions.py [--mb 50]
       python bench/bench_sessions.py --review [--sessions 30] [--mb 0.5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com", "AM_ACTOR": "bench"}
SESSION = "6a1f2c3d-4b5e-4f60-8a7b-9c0d1e2f3a4b"
CODE = [
    "def get_user(user_id: int) -> User:", "    return db.users.get(user_id)", "class RateLimiter:",
    "    def __init__(self, rate: float, burst: int) -> None:", "        self.tokens = burst",
    "for key, value in sorted(settings.items()):", "    if value is None:", "        raise KeyError(key)",
    "import asyncio", "from pathlib import Path", "# 缓存会话三十分钟，超时后重新登录", "    await queue.put(item)",
    "test_users.py::test_get_user PASSED", "  File \"src/api/users.py\", line 42, in get_user",
]


def _line(obj: dict[str, object]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def write_log(path: Path, megabytes: float, *, seed: int = 7, session: str = SESSION, remember_every: int = 0) -> int:
    """Write a Claude Code transcript of about ``megabytes`` MB; return the secrets planted in it.

    With ``remember_every`` N, every Nth user prompt ends with a ``remember:`` line (a clerk's proposal).
    """
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/alpha", "sessionId": session,
            "version": "2.0.74", "gitBranch": "main"}
    planted = 0
    size = 0
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        while size < target:
            n += 1
            ts = f"2026-11-30T{10 + n // 3600 % 12:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
            kind = n % 4
            if kind == 0:
                text = " ".join(rng.choice(["please", "fix", "the", "rate", "limit", "in", "getUser", "and", "add",
                                            "tests", "for", "the", "token", "bucket", "请", "修复"]) for _ in range(30))
                if n % 5000 == 0:
                    text += f" the deploy key is AKIA{''.join(rng.choice('ABCDEFGHIJKLMNOPQRSTUVW234567') for _ in range(16))}"
                    planted += 1  # (no X in the key: "XXX" reads as a placeholder to am/records/secrets.py)
                if remember_every and (n // 4) % remember_every == 0:
                    text += f"\nremember: rule {n} of session {session[:8]} lives in src/rules/r{n}.py."
                obj = {**base, "type": "user", "uuid": f"u{n}", "timestamp": ts,
                       "message": {"role": "user", "content": text}}
            elif kind == 1:
                obj = {**base, "type": "assistant", "uuid": f"u{n}", "timestamp": ts, "message": {
                    "role": "assistant", "content": [
                        {"type": "text", "text": "I'll read the file and run the tests."},
                        {"type": "tool_use", "id": f"toolu_{n}", "name": "Read",
                         "input": {"file_path": "/home/dev/alpha/src/api/users.py"}}]}}
            else:
                body = "\n".join(rng.choice(CODE) for _ in range(rng.randint(20, 120)))
                obj = {**base, "type": "user", "uuid": f"u{n}", "timestamp": ts, "message": {
                    "role": "user", "content": [{"tool_use_id": f"toolu_{n}", "type": "tool_result", "content": body}]}}
            line = _line(obj) + "\n"
            out.write(line)
            size += len(line.encode("utf-8"))
    return planted


def _timed(argv: list[str], cwd: Path) -> tuple[float, int]:
    """Run a process; return (wall seconds, peak resident KiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return took, usage.ru_maxrss


def git_copy(log: Path, work: Path) -> float:
    repo = work / "plain"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=ENV)
    start = time.perf_counter()
    shutil.copyfile(log, repo / "session.jsonl")
    subprocess.run(["git", "-C", str(repo), "add", "session.jsonl"], check=True, env=ENV)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "session"], check=True, env=ENV)
    return time.perf_counter() - start


def _scan_search(vault: Path) -> float:
    """Seconds to answer one session search by reading and scanning the logs (the fallback), in this process."""
    sys.path.insert(0, str(ROOT))
    os.environ["AM_HOME"] = ENV["AM_HOME"]
    from am.cache.timephrases import parse_query
    from am.sessions.search import _scan
    from am.vault import Vault

    with Vault.open(vault) as v:
        topics = v.list_topics(kind="session")
        start = time.perf_counter()
        _scan(v, parse_query("rate limit", now=datetime.now(UTC)), topics, None, 20)
        return time.perf_counter() - start


def _best(run: Any, times: int = 3) -> tuple[float, Any]:
    """Return the least CPU seconds of ``times`` runs (the machine may be loaded), and the last result."""
    best, result = float("inf"), None
    for _ in range(times):
        start = time.process_time()
        result = run()
        best = min(best, time.process_time() - start)
    return best, result


def review_figures(work: Path, sessions: int, megabytes: float) -> None:
    """Print the review queue's evidence figures (see the module's doc)."""
    vault = work / "vault"
    subprocess.run([sys.executable, "-m", "am.cli.main", "init", str(vault), "--name", "bench"], check=True, env=ENV,
                   stdout=subprocess.DEVNULL)
    sys.path.insert(0, str(ROOT))
    os.environ.update(ENV)
    from am.sessions.clerk import propose
    from am.sessions.ingest import ingest_file
    from am.upkeep.review import cited_by_fact, cited_lines, review_queue
    from am.vault import Vault

    with Vault.open(vault) as v:
        for i in range(sessions):
            sid = f"{i:08x}-4b5e-4f60-8a7b-9c0d1e2f3a4b"
            log = work / f"{sid}.jsonl"
            write_log(log, megabytes, seed=i, session=sid, remember_every=max(1, int(megabytes * 20)))
            ingest_file(v, log)
            propose(v, sid)
        facts = v.list_facts(status="pending-review")
        each_s, each = _best(lambda: {f.id: cited_lines(v, f) for f in facts})
        once_s, once = _best(lambda: cited_by_fact(v, facts))
        queue_s, queue = _best(lambda: review_queue(v))
    assert each == once, "the two ways cite different lines"
    print(f"{len(facts)} proposals from {sessions} session logs of {megabytes} MB; {queue.total} items in the queue")
    print(f"cited lines, each proposal reads its log: {each_s:.3f} s CPU (before)")
    print(f"cited lines, each log read once:          {once_s:.3f} s CPU   ratio {once_s / each_s:.2f} of before")
    print(f"review_queue (all of it):                 {queue_s:.3f} s CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=None,
                        help="Size of the generated log in MB (50; 0.5 with --review).")
    parser.add_argument("--review", action="store_true", help="Measure the review queue's evidence instead.")
    parser.add_argument("--sessions", type=int, default=30, help="With --review: how many session logs.")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="am-bench-sessions-"))
    ENV["AM_HOME"] = str(work / "am-home")  # the registry of this run, not the machine's
    if args.review:
        try:
            review_figures(work, args.sessions, args.mb or 0.5)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    args.mb = args.mb or 50.0
    try:
        log = work / f"{SESSION}.jsonl"
        planted = write_log(log, args.mb)
        size = log.stat().st_size
        print(f"log: {size / 1e6:.1f} MB, {planted} planted credentials")
        git_s = min(git_copy(log, work / f"g{i}") for i in range(2))
        vault = work / "vault"
        am = [sys.executable, "-m", "am.cli.main"]
        subprocess.run([*am, "init", str(vault), "--name", "bench"], check=True, env=ENV, stdout=subprocess.DEVNULL)
        _, idle_kib = _timed([*am, "--vault", str(vault), "topic", "list"], work)
        am_s, peak_kib = _timed([*am, "--vault", str(vault), "ingest", str(log)], work)
        first_s, _ = _timed([*am, "--vault", str(vault), "search", "--session", "token bucket"], work)
        later_s = min(_timed([*am, "--vault", str(vault), "search", "--session", "rate limit"], work)[0]
                      for _ in range(2))
        scan_s = _scan_search(vault)
        again_s, _ = _timed([*am, "--vault", str(vault), "ingest", str(log)], work)
        with open(log, "ab") as grow:
            grow.write(log.read_bytes()[: size // 100].rsplit(b"\n", 1)[0] + b"\n")
        grown_s, grown_kib = _timed([*am, "--vault", str(vault), "ingest", str(log)], work)
        topic = subprocess.run([*am, "--vault", str(vault), "topic", "show", f"session-{SESSION}", "--format",
                                "json"], check=True, env=ENV, capture_output=True, text=True).stdout
        redacted = json.loads(topic).get("redacted")
        above = max(0, peak_kib - idle_kib) * 1024
        print(f"git cp + add + commit:  {git_s:.2f} s (baseline)")
        print(f"am ingest:              {am_s:.2f} s   ratio {am_s / git_s:.2f} (target <= 3.0)")
        print(f"am ingest peak memory:  {peak_kib / 1024:.0f} MiB, {above / 1e6:.0f} MB above an idle am "
              f"({idle_kib / 1024:.0f} MiB)   ratio {above / size:.2f} of the log (target <= 2.0)")
        print(f"am search --session:    first {first_s:.2f} s (builds the session tables), then {later_s:.2f} s "
              f"a search; scanning the log instead: {scan_s:.2f} s a search (in-process)")
        print(f"am ingest again:        {again_s:.2f} s (no commit)")
        print(f"am ingest grown by 1%:  {grown_s:.2f} s (one append commit), peak memory ratio "
              f"{max(0, grown_kib - idle_kib) * 1024 / size:.2f} of the log (target <= 2.0)")
        print(f"secrets masked:         {redacted} (planted {planted}, counted again in the 1% growth)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
