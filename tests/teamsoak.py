"""The team soak (issue 36 item 16): many clones of one vault, agents writing and syncing on each, one Git server.

N clones of one vault, each with W writers (`am fact add` processes started
one after another) and one `am sync` loop, against one `git daemon` on
127.0.0.1 serving a bare repository that refuses non-fast-forwards and logs
every ref update. Random writes and syncs are killed with SIGKILL (the process
alone, or its whole group with the git programs it started). Then the writers
stop and the clones sync one after another, round after round, until every
clone and the server hold one commit (the quiet phase).

What must hold at the end (``check``), with the git CLI as the oracle:

- every acknowledged fact (an `am fact add` that exited 0 and printed its id)
  is in every clone's HEAD, work tree and Git's index, and in the server's
  branch, with the text its writer gave;
- `git fsck --strict` finds nothing wrong in any clone or in the server;
- every update of the server's branch in its reflog was a fast-forward (the
  old tip an ancestor of the new);
- the quiet phase converges within ``BOUND`` rounds (each clone syncing once
  per round, in turn), every sync in it exits 0;
- no am process printed a traceback; a sync that failed while the others
  wrote says why in am's words (its only expected failure: the remote kept
  moving through all of a sync's rounds).

Run it alone for a long soak (figures in docs/sync.md):

    python tests/teamsoak.py --clones 16 --writers 3 --seconds 300
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import GIT_IDENTITY, PYTHON, fsck_clean, run_git, subprocess_env
from gitserver import git_daemon, make_bare, only_fast_forwards

# Quiet rounds in turn: the first brings every clone's commits to the server by the last clone's
# push, the second fast-forwards the others to it. A killed sync's leftovers are finished first
# thing by the next one, so they add no round.
BOUND = 2
_ADDED = re.compile(r"^added fact (\S+) \((\S+)\)", re.M)
# What a sync may say while the others write: the remote moved on through all its rounds.
_EXPECTED_SYNC_FAILURES = ("kept moving",)


@dataclass(frozen=True)
class Plan:
    """How big a soak is: clones, writers per clone, and how long (or how many writes) they write."""

    clones: int = 3
    writers: int = 1
    seconds: float = 0.0  # how long the writers write; 0: ``writes`` each, then stop
    writes: int = 3  # each writer's writes when ``seconds`` is 0
    kill_write: float = 0.15  # the share of writes killed
    kill_sync: float = 0.3  # the share of syncs killed
    sync_pause: float = 0.5  # the most a sync loop waits between two syncs
    seed: int = 36


@dataclass
class Run:
    """One am process of the soak: what it was, how it ended."""

    kind: str  # "write" or "sync"
    clone: int
    code: int
    stdout: str
    stderr: str
    killed: bool  # a SIGKILL was sent while it ran
    seconds: float
    text: str = ""


@dataclass
class Outcome:
    """What a soak did and measured."""

    runs: list[Run] = field(default_factory=list)
    acked: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (path, text)
    rounds: int = 0
    busy_seconds: float = 0.0
    quiet_seconds: float = 0.0
    server_updates: int = 0
    facts_on_server: int = 0
    lock = threading.Lock()

    def add(self, run: Run) -> None:
        with self.lock:
            self.runs.append(run)

    def failures(self) -> dict[str, int]:
        """The messages of the am processes that failed unkilled, hex ids blanked, with how many said each."""
        said = Counter(f"{r.kind} exit {r.code}: " + re.sub(r"[0-9a-f]{7,40}", "X", r.stderr.strip().splitlines()[-1]
                                                              if r.stderr.strip() else "")
                       for r in self.runs if r.code > 0 and not r.killed)
        return dict(said.most_common())

    def summary(self) -> dict[str, object]:
        writes = [r for r in self.runs if r.kind == "write"]
        syncs = [r for r in self.runs if r.kind == "sync"]

        def median(runs: list[Run]) -> float:
            return round(statistics.median(r.seconds for r in runs), 2) if runs else 0.0

        return {
            "writes": len(writes), "acknowledged": len(self.acked),
            "writes_killed": sum(r.killed and r.code == -signal.SIGKILL for r in writes),
            "syncs": len(syncs), "syncs_ok": sum(r.code == 0 for r in syncs),
            "syncs_killed": sum(r.killed and r.code == -signal.SIGKILL for r in syncs),
            "syncs_failed": sum(r.code > 0 for r in syncs), "failures": self.failures(),
            "server_updates": self.server_updates, "facts_on_server": self.facts_on_server,
            "quiet_rounds": self.rounds, "busy_seconds": round(self.busy_seconds, 1),
            "median_write_seconds": median([r for r in writes if r.code == 0]),
            "median_sync_seconds": median([r for r in syncs if r.code == 0]),
            "quiet_seconds": round(self.quiet_seconds, 1),
        }


def am(root: Path, *args: str) -> list[str]:
    """The command line of an am process in ``root`` (the console script's entry, as a user runs it)."""
    return [PYTHON, "-m", "am.cli.entry", "--vault", str(root), *args]


def _run(cmd: list[str], *, kill_after: float | None, actor: str) -> tuple[int, str, str, bool, float]:
    """Run an am process; SIGKILL it (alone or with its group, by turns) after ``kill_after`` s if it still runs."""
    began = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=subprocess_env(AM_ACTOR=actor))
    killed = False
    if kill_after is not None:
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            killed = True
            if proc.pid % 2:
                os.killpg(proc.pid, signal.SIGKILL)  # with the git programs it started (a machine that stops)
            else:
                os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate()
    return proc.returncode, out, err, killed, time.monotonic() - began


class Team:
    """A server and ``clones`` clones of one vault; ``url`` is the server's repository."""

    def __init__(self, base: Path, url: str, bare: Path, clones: int) -> None:
        self.base, self.url, self.bare = base, url, bare
        self.roots = [base / f"clone-{i}" for i in range(clones)]

    @classmethod
    def make(cls, base: Path, url_prefix: str, clones: int) -> Team:
        """Make the first clone's vault (one topic), push it, and clone it ``clones - 1`` times."""
        from am.vault import Vault

        bare = base / "server" / "vault.git"
        url = f"{url_prefix}/vault.git"
        team = cls(base, url, bare, clones)
        first = team.roots[0]
        run_git(base, "init", "-q", "-b", "main", str(first))
        with Vault.init(first, name="team", actor="lead", register=False) as vault:
            vault.add_topic(title="Alpha service", kind="project", id="project-alpha")
        done = subprocess.run(am(first, "sync", "--set-upstream", url), capture_output=True, text=True,
                              env=subprocess_env())
        assert done.returncode == 0, done.stderr
        for root in team.roots[1:]:
            run_git(base, "clone", "-q", url, str(root))
        for root in team.roots:
            for key, value in (("user.name", GIT_IDENTITY["GIT_AUTHOR_NAME"]),
                               ("user.email", GIT_IDENTITY["GIT_AUTHOR_EMAIL"])):
                run_git(root, "config", key, value)
        return team


def busy(team: Team, plan: Plan, outcome: Outcome) -> None:
    """Writers and sync loops on every clone at once, with random kills, until the writers are done."""
    stop = threading.Event()
    deadline = time.monotonic() + plan.seconds

    def writer(clone: int, writer_no: int) -> None:
        rng = random.Random(f"{plan.seed}-w-{clone}-{writer_no}")
        n = 0
        while (time.monotonic() < deadline) if plan.seconds else (n < plan.writes):
            text = f"Clone {clone} agent {writer_no} learned thing {n} ({rng.getrandbits(32):08x})."
            # The first write of clone 1's first agent is killed early (an am process is not done in 0.2 s), so
            # every soak has a kill; the others at random, at any point.
            first = (clone, writer_no, n) == (1 % plan.clones, 0, 0)
            kill = rng.uniform(0.05, 0.2) if first else rng.uniform(0.05, 0.8) if rng.random() < plan.kill_write \
                else None
            code, out, err, killed, took = _run(
                am(team.roots[clone], "fact", "add", text, "--topic", "project-alpha"),
                kill_after=kill, actor=f"agent-{clone}-{writer_no}")
            outcome.add(Run("write", clone, code, out, err, killed, took, text))
            found = _ADDED.search(out)
            if code == 0 and found:
                with outcome.lock:
                    outcome.acked[found[1]] = (found[2], text)
            n += 1

    def syncer(clone: int) -> None:
        rng = random.Random(f"{plan.seed}-s-{clone}")
        n = 0
        while (clone, n) == (0, 0) or not stop.is_set():  # clone 0's first sync runs even if the writes are done
            first = (clone, n) == (0, 0)  # clone 0's first sync: killed early, as the first write above
            if not first:
                stop.wait(rng.uniform(0, plan.sync_pause))
            # (a no-op sync on a quiet machine is done in 0.15 s: killed within 0.05 s, it surely still runs)
            kill = rng.uniform(0.02, 0.05) if first else rng.uniform(0.05, 1.5) if rng.random() < plan.kill_sync \
                else None
            code, out, err, killed, took = _run(am(team.roots[clone], "sync"), kill_after=kill, actor=f"sync-{clone}")
            outcome.add(Run("sync", clone, code, out, err, killed, took))
            n += 1

    began = time.monotonic()
    writers = [threading.Thread(target=writer, args=(c, w)) for c in range(plan.clones) for w in range(plan.writers)]
    syncers = [threading.Thread(target=syncer, args=(c,)) for c in range(plan.clones)]
    for thread in writers + syncers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in syncers:
        thread.join()
    outcome.busy_seconds = time.monotonic() - began


def quiet(team: Team, outcome: Outcome, *, most: int = BOUND + 3) -> None:
    """Sync every clone in turn, round after round, until all hold the server's tip; count the rounds."""
    began = time.monotonic()
    for round_ in range(1, most + 1):
        for i, root in enumerate(team.roots):
            code, out, err, _, took = _run(am(root, "sync"), kill_after=None, actor=f"sync-{i}")
            outcome.add(Run("sync", i, code, out, err, False, took))
            assert code == 0, f"quiet round {round_}: am sync in clone {i} failed ({code}): {err}"
        tip = run_git(team.bare, "rev-parse", "main").strip()
        if all(run_git(root, "rev-parse", "HEAD").strip() == tip for root in team.roots):
            outcome.rounds = round_
            break
    else:
        raise AssertionError(f"the clones did not converge in {most} quiet rounds")
    outcome.quiet_seconds = time.monotonic() - began


def check(team: Team, outcome: Outcome) -> None:
    """Assert every invariant of the soak (the module's docstring)."""
    tracebacks = [r for r in outcome.runs if "Traceback (most recent call last)" in r.stderr]
    assert not tracebacks, f"{len(tracebacks)} am processes printed a traceback; the first: {tracebacks[0].stderr}"
    failed = [r for r in outcome.runs if r.code > 0 and not r.killed]
    unexpected = [r for r in failed if r.kind != "sync" or not any(s in r.stderr for s in _EXPECTED_SYNC_FAILURES)]
    assert not unexpected, f"{len(unexpected)} am processes failed: {outcome.failures()}"
    assert outcome.acked, "no write was acknowledged"
    assert outcome.rounds <= BOUND, f"the quiet phase took {outcome.rounds} rounds (bound {BOUND})"
    acked = set(outcome.acked)
    server = _fact_ids(team.bare, "main")
    assert not acked - server, f"acknowledged facts missing on the server: {sorted(acked - server)[:10]}"
    _texts_hold(team.bare, outcome)
    tip = run_git(team.bare, "rev-parse", "main").strip()
    for i, root in enumerate(team.roots):
        assert run_git(root, "rev-parse", "HEAD").strip() == tip, f"clone {i} is not at the server's tip"
        assert _fact_ids(root, "HEAD") == server
        missing = [fid for fid, (path, _) in outcome.acked.items() if not (root / path).is_file()]
        assert not missing, f"clone {i}: acknowledged facts missing from the work tree: {missing[:10]}"
        # Git's index and the work tree match HEAD for every tracked file: nothing staged as deleted.
        status = run_git(root, "status", "--porcelain", "--untracked-files=no").strip()
        assert status == "", f"clone {i}: git status shows changes after convergence:\n{status}"
        fsck_clean(root)
    fsck_clean(team.bare)
    pairs = only_fast_forwards(team.bare)
    outcome.server_updates = len(pairs)
    outcome.facts_on_server = len(server)


def _fact_ids(root: Path, rev: str) -> set[str]:
    names = run_git(root, "ls-tree", "-r", "--name-only", rev, "facts").split()
    ids = [Path(p).stem for p in names]
    assert len(ids) == len(set(ids)), f"{root} {rev}: a fact id is in two files"
    return set(ids)


def _texts_hold(bare: Path, outcome: Outcome) -> None:
    """Every acknowledged fact's file on the server holds the text its writer gave."""
    wanted = [(fid, path, text) for fid, (path, text) in outcome.acked.items()]
    batch = "".join(f"main:{path}\n" for _, path, _ in wanted)
    blobs = subprocess.run(["git", "-C", str(bare), "cat-file", "--batch"], input=batch.encode(),
                           capture_output=True, check=True).stdout
    pos = 0
    for fid, path, text in wanted:
        header_end = blobs.index(b"\n", pos)
        header = blobs[pos:header_end].decode()
        assert not header.endswith("missing"), f"{fid}: {path} is not on the server"
        size = int(header.split()[2])
        body = blobs[header_end + 1:header_end + 1 + size].decode()
        pos = header_end + 1 + size + 1
        assert text in body, f"{fid}: {path} does not hold its writer's text {text!r}"


def soak(base: Path, plan: Plan, outcome: Outcome | None = None) -> Outcome:
    """Run a whole soak under ``base``: the server, the clones, the busy and quiet phases, the checks."""
    server = base / "server"
    server.mkdir(parents=True)
    make_bare(server)
    outcome = outcome or Outcome()
    with git_daemon(server) as prefix:
        team = Team.make(base, prefix, plan.clones)
        busy(team, plan, outcome)
        quiet(team, outcome)
    check(team, outcome)
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clones", type=int, default=16)
    parser.add_argument("--writers", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    os.environ.update(GIT_IDENTITY)
    os.environ["AM_HOME"] = tempfile.mkdtemp(prefix="am-home-")
    base = args.work or Path(tempfile.mkdtemp(prefix="am-team-soak-"))
    load_before = os.getloadavg()
    began = time.monotonic()
    outcome = Outcome()
    try:
        soak(base, Plan(clones=args.clones, writers=args.writers, seconds=args.seconds, seed=args.seed), outcome)
    finally:
        print(json.dumps({**outcome.summary(), "clones": args.clones, "writers": args.writers,
                          "total_seconds": round(time.monotonic() - began, 1),
                          "load_before": [round(x, 1) for x in load_before],
                          "load_after": [round(x, 1) for x in os.getloadavg()], "cores": os.cpu_count(),
                          "work": str(base)}, indent=2))


if __name__ == "__main__":
    main()
