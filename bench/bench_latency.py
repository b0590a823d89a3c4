"""What a person or an agent feels per command on a big vault: one write, then the first search and slice after it.

Each round runs, as whole processes on one vault: ``am fact add``, the first
``am search WORD`` after that write (it takes the write's vector in when the
``semantic`` extra is there), the same search again, another ``am fact add``, the
first ``am slice --repo R --branch main`` after it and the same slice again. The
baselines are measured in the same rounds: ``python -c pass``, ``am --version``
and a one-file ``git add`` + ``git commit`` in a clone of the vault (the same
number of files in Git's index). With ``--before REV`` every round also runs the
code of that revision of this repository (a ``git worktree``), alternating, so
both see the same load. Figures are medians of wall time and of CPU time (user +
system: steadier on a busy machine); ratios are to the git commit's.

The writes go to the vault given: pass a copy (``cp -a``). ``R`` is a repo the
records name (default ``project-alpha``, bench/corpus.py's); leave it unregistered
to time a slice judged by branch name.

Usage: python bench/bench_latency.py --vault DIR [--runs 7] [--before REV] [--repo R] [--word WORD]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}


def _env(code: Path, cache: Path) -> dict[str, str]:
    env = {**os.environ, **GIT_ENV, "PYTHONPATH": str(code), "PYTHONPYCACHEPREFIX": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure as installed: bytecode compiled once (PERF.md)
    return env


CPU: dict[str, list[float]] = {}  # CPU seconds (user + system) of each timed process, by the caller's key


def _timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    """Return the wall time of one process; its CPU time is left in ``_LAST_CPU``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, check=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _LAST_CPU[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall


_LAST_CPU = [0.0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--before", default=None, help="a revision of this repository to time alongside")
    parser.add_argument("--repo", default="project-alpha")
    parser.add_argument("--word", default="sessions")
    args = parser.parse_args()
    vault = args.vault.resolve()
    work = Path(tempfile.mkdtemp(prefix="am-bench-latency-"))
    versions = {"now": ROOT}
    if args.before:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(work / "before"),
                        args.before], check=True, capture_output=True)
        versions = {"before": work / "before", "now": ROOT}
    clone = work / "git-baseline"
    subprocess.run(["git", "clone", "-q", str(vault), str(clone)], check=True, capture_output=True)
    py = sys.executable
    envs = {name: _env(code, work / f"pycache-{name}") for name, code in versions.items()}
    am = [py, "-m", "am.cli.main", "--vault", str(vault)]
    times: dict[str, list[float]] = {}

    def note(key: str, seconds: float) -> None:
        times.setdefault(key, []).append(seconds)
        CPU.setdefault(key, []).append(_LAST_CPU[0])

    for env in envs.values():  # compile once, and let the cache catch up with anything before the run
        subprocess.run([*am, "search", args.word], env=env, capture_output=True, check=True)
    loads = [os.getloadavg()[0]]
    n = 0
    for _ in range(args.runs):
        base_env = envs["now"]
        note('python -c pass', _timed([py, "-c", "pass"], base_env))
        (clone / "bench-note.md").write_text(f"note {n}\n")
        note("git add + commit (one file)", _timed(["sh", "-c", "git add bench-note.md && git commit -qm note"],
                                                   base_env, cwd=clone))
        for name, env in envs.items():
            note(f"{name}: am --version", _timed([*am, "--version"], env))
            n += 1
            text = f"Latency bench {name} {n}: the session cache keeps entries for {n} minutes."
            note(f"{name}: am fact add", _timed([*am, "fact", "add", text, "--topic", "project-t00000"], env))
            note(f"{name}: am search, first after a write", _timed([*am, "search", args.word], env))
            note(f"{name}: am search, again", _timed([*am, "search", args.word], env))
            n += 1
            subprocess.run([*am, "fact", "add", f"Latency bench {name} {n}: retries back off.", "--topic",
                            "project-t00000"], env=env, capture_output=True, check=True)
            slice_cmd = [*am, "slice", "--repo", args.repo, "--branch", "main"]
            note(f"{name}: am slice, first after a write", _timed(slice_cmd, env))
            note(f"{name}: am slice, again", _timed(slice_cmd, env))
        loads.append(os.getloadavg()[0])
    git_commit = statistics.median(times["git add + commit (one file)"])
    git_cpu = statistics.median(CPU["git add + commit (one file)"])
    print(f"vault {vault} ({args.runs} rounds, load average {min(loads):.1f}-{max(loads):.1f}); "
          "medians of wall and of CPU (user + system), each also as a ratio to the git commit's")
    for key, values in times.items():
        med, cpu = statistics.median(values), statistics.median(CPU[key])
        print(f"  {key:45s} wall {med * 1000:6.0f} ms {med / git_commit:5.2f}x   "
              f"CPU {cpu * 1000:6.0f} ms {cpu / git_cpu:5.2f}x")
    if args.before:
        print("  now / before (wall, CPU):")
        for key in [k for k in times if k.startswith("now: ")]:
            old = "before: " + key[5:]
            if old in times:
                print(f"    {key[5:]:41s} {statistics.median(times[key]) / statistics.median(times[old]):5.2f}  "
                      f"{statistics.median(CPU[key]) / statistics.median(CPU[old]):5.2f}")
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(work / "before")],
                       capture_output=True, check=False)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
