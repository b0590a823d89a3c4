"""Benchmark `am sync` and the record-aware merge against plain Git, measured in the same run.

Scenarios (medians of whole processes; ratios against a baseline of the same run):

1. A no-op `am sync` (nothing to fetch, nothing to push) of a vault of N facts
   served by `git daemon` on 127.0.0.1, against `git fetch` + `git push` of the
   same remote. Target: <= 1.5x. The in-process call (a warm server's) is shown too.
2. Merging two sides of 1,000 divergent facts (500 new on each side) where 20
   facts' texts were changed on both sides: `am merge` (record-aware, 20
   facts split and contested) against `git merge` with the merge driver
   disabled (which leaves conflict markers in those 20 files). Target: <= 2x.
   am's merge ends in a commit on the branch, so the ratio is also given against
   `git merge` finished by `git commit -a` (the same work: files, index, commit, ref). The same
   merge in-process (a warm server's call: modules imported, vault open) is shown too.

   ``--base N``: the facts both sides share before they diverge (default 100). A
   bigger vault weighs on both merges; the fixed cost of am's process (the
   interpreter, its modules, pygit2) weighs less.

Usage: python bench/bench_sync.py [--facts 2000] [--base 100] [--runs 7] [--work /tmp/am-bench-sync] [--only noop|merge] [--upfront]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
# Measured as installed: bytecode compiled once (these machines set PYTHONDONTWRITEBYTECODE=1).
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com", "PYTHONPATH": str(ROOT)}
# The console script's entry (pyproject.toml): a no-op sync is answered there, before click is imported.
AM = [sys.executable, "-m", "am.cli.entry"]


def run(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(list(args), cwd=cwd, check=False, capture_output=True, text=True, env=ENV)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def timed(*args: str, cwd: Path | None = None, ok: tuple[int, ...] = (0,)) -> float:
    began = time.perf_counter()
    proc = subprocess.run(list(args), cwd=cwd, check=False, capture_output=True, text=True, env=ENV)
    took = time.perf_counter() - began
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return took


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def make_vault(root: Path, facts: int) -> None:
    """A vault of ``facts`` facts in one topic, written in bulk (one commit per 500)."""
    from am.records.model import Fact
    from am.vault import Vault

    run("git", "init", "-q", "-b", "main", str(root))
    vault = Vault.init(root, name="bench", actor="bench", register=False)
    vault.add_topic(title="Alpha", kind="project", id="project-alpha")
    records = [Fact(id=f"fact-{i:06d}", topics=("project-alpha",), body=f"Alpha fact number {i}.\n",
                    created="2026-09-23T12:00:00+00:00") for i in range(facts)]
    vault.import_records(records, source="bench")
    vault.close()


def noop_sync(work: Path, facts: int, runs: int) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from gitserver import git_daemon, make_bare  # the tests' loopback server

    base = work / "server"
    base.mkdir()
    make_bare(base)
    vault = work / "noop"
    make_vault(vault, facts)
    with git_daemon(base) as url:
        run(*AM, "--vault", str(vault), "sync", "--set-upstream", f"{url}/vault.git")
        run(*AM, "--vault", str(vault), "sync")  # compiles the bytecode of what a sync imports
        am_times, git_times, lib_times, floor, python = [], [], [], [], []
        from am.sync import sync
        from am.vault import Vault

        for _ in range(runs):
            git_times.append(timed("git", "-C", str(vault), "fetch", "-q", "origin")
                             + timed("git", "-C", str(vault), "push", "-q", "origin", "main"))
            am_times.append(timed(*AM, "--vault", str(vault), "sync"))
            floor.append(timed(*AM, "--version"))
            python.append(timed(sys.executable, "-c", "pass"))
            with Vault.open(vault) as v:
                began = time.perf_counter()
                report = sync(v)
                lib_times.append(time.perf_counter() - began)
                assert report.action == "up-to-date" and not report.pushed
    git_m, am_m, lib_m, floor_m, py_m = (statistics.median(t) for t in (git_times, am_times, lib_times, floor, python))
    print(f"no-op sync, {facts} facts over git daemon on loopback ({runs} runs):")
    print(f"  git fetch + git push     {_ms(git_m)}")
    print(f"  am sync (process)        {_ms(am_m)}   {am_m / git_m:.2f}x   (target <= 1.5x)")
    print(f"  sync() in-process        {_ms(lib_m)}   {lib_m / git_m:.2f}x   (a warm server's call)")
    print(f"  am --version (process)   {_ms(floor_m)}   {floor_m / git_m:.2f}x   (click's command line: what a sync paid before)")
    print(f"  python -c pass           {_ms(py_m)}   {py_m / git_m:.2f}x   (the interpreter's start-up alone)")


def diverged(work: Path, shared: int, each: int, conflicts: int) -> Path:
    """A vault on main with 'theirs' beside it: ``each`` new facts on both, ``conflicts`` shared facts edited on both."""
    from am.records.model import Fact
    from am.vault import Vault

    root = work / "merge-base"
    make_vault(root, shared)
    run("git", "-C", str(root), "branch", "theirs")
    for side, branch in (("ours", "main"), ("theirs", "theirs")):
        run("git", "-C", str(root), "checkout", "-q", branch)
        vault = Vault.open(root, actor=side)
        records = [Fact(id=f"fact-{side}-{i:05d}", topics=("project-alpha",), body=f"{side} learned {i}.\n",
                        created="2026-09-24T12:00:00+00:00") for i in range(each)]
        vault.import_records(records, source=side)
        for i in range(conflicts):
            path = next((root / "facts").rglob(f"fact-{i:06d}.md"))
            path.write_text(path.read_text().replace(f"number {i}.", f"number {i}, as {side} saw it."))
        vault.close()
        run("git", "-C", str(root), "commit", "-q", "-am", f"{side} edits")
    run("git", "-C", str(root), "checkout", "-q", "main")
    return root


def merge_bench(work: Path, runs: int, *, base: int = 100, upfront: bool = False) -> None:
    """``upfront``: every run's copies are made (and flushed) before the first run and deleted after the last,
    so no run follows another's deletions (~4,000 files), which slow file creation on some machines."""
    from am.sync import merge_branch
    from am.vault import Vault

    root = diverged(work, shared=base, each=500, conflicts=20)
    git_times, done_times, am_times, warm_times, floor_times = [], [], [], [], []
    # The process floor: the interpreter and the modules a merge needs (pygit2 among them), doing nothing.
    floor = (sys.executable, "-c", "import am.sync.engine, am.git.store, am.records.merge")

    def copies(n: int) -> tuple[Path, Path, Path]:
        return work / f"plain-{n}", work / f"am-{n}", work / f"warm-{n}"

    def make(n: int) -> None:
        for copy in copies(n):
            shutil.copytree(root, copy, symlinks=True)
        # A copy's files have new inodes and change times, so Git's index no longer vouches for them and
        # git merge would read and hash every file first; a user's clone has no such cost (untimed).
        run("git", "-C", str(copies(n)[0]), "update-index", "-q", "--refresh")
        for copy in copies(n)[1:]:
            run(*AM, "--vault", str(copy), "fact", "list", "--status", "contested")  # its cache, current (untimed)

    if upfront:
        for n in range(runs):
            make(n)
        os.sync()
        time.sleep(5)  # the file system's journal settles
    for n in range(runs):
        plain, ours, warm = copies(n)
        if not upfront:
            make(n)
        # The copies' dirty pages go to disk first: am flushes the file system before its branch moves
        # (syncfs), and would otherwise pay for writing out this benchmark's own copies.
        os.sync()

        def git_merge() -> None:
            # No merge.am.driver in these clones: git merges the 20 files as text and stops on their markers.
            merged = timed("git", "-C", str(plain), "merge", "-q", "--no-edit", "theirs", ok=(0, 1))
            git_times.append(merged)
            # Like with like: am's merge ends in a commit on the branch (work tree, index, ref and its reflog),
            # so git's is finished the same way, markers and all (git commit -a takes the files as they are).
            done_times.append(merged + timed("git", "-C", str(plain), "commit", "-q", "-a", "--no-edit"))
            os.sync()

        def am_merge() -> None:
            am_times.append(timed(*AM, "--vault", str(ours), "merge", "theirs"))
            os.sync()
            floor_times.append(timed(*floor))

        def in_process() -> None:  # a warm server's call: the modules imported, the vault open
            with Vault.open(warm) as vault:
                began = time.perf_counter()
                merge_branch(vault, "theirs")
                warm_times.append(time.perf_counter() - began)
            os.sync()

        # Each goes first in turn: the file system's state after the last run's deletions and this
        # run's copies (its journal commits, its discards) weighs on whichever runs first.
        steps = [git_merge, am_merge, in_process]
        for step in steps[n % 3:] + steps[:n % 3]:
            step()
        if n == 0:
            markers = run("git", "-C", str(plain), "grep", "-l", "^<<<<<<<", "HEAD").split()
            contested = run(*AM, "--vault", str(ours), "fact", "list", "--status", "contested").splitlines()
            print(f"  git merge committed {len(markers)} files with conflict markers; am merge: {len(contested)} "
                  "contested facts, no markers")
        if not upfront:
            for copy in (plain, ours, warm):
                shutil.rmtree(copy)
    if upfront:
        for n in range(runs):
            for copy in copies(n):
                shutil.rmtree(copy)
    git_m, done_m, am_m, warm_m, floor_m = (statistics.median(t) for t in
                                            (git_times, done_times, am_times, warm_times, floor_times))
    per_run = [a / g for a, g in zip(am_times, git_times)]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    how = "copies made up front" if upfront else "copies made and deleted run by run"
    print(f"merge of 1,000 divergent facts (500 each side, 20 same-fact conflicts, {base:,} shared; {runs} runs, {how}, "
          f"load {load}):")
    print(f"  git merge (no driver)          {_ms(git_m)}   (stops on the markers: no commit, the branch stays)")
    print(f"  git merge + git commit -a      {_ms(done_m)}   (the same work as am's: files, index, commit, ref)")
    print(f"  am merge (process)             {_ms(am_m)}   {am_m / git_m:.2f}x git merge, "
          f"{am_m / done_m:.2f}x git merge + commit   (target <= 2x)")
    print(f"  per run, am / git merge        median {statistics.median(per_run):.2f}x   "
          f"({' '.join(f'{r:.2f}' for r in per_run)})")
    print(f"  merge_branch() in-process      {_ms(warm_m)}   {warm_m / git_m:.2f}x git merge   (a warm server's call)")
    print(f"  process floor                  {_ms(floor_m)}   {floor_m / git_m:.2f}x git merge   "
          "(python, importing the merge's modules and pygit2, merging nothing)")
    print(f"  fastest of each                git merge {_ms(min(git_times))}, + commit {_ms(min(done_times))}, "
          f"am merge {_ms(min(am_times))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--base", type=int, default=100, help="merge: the facts both sides share before they diverge")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--only", choices=("noop", "merge"), default=None, help="run one scenario")
    parser.add_argument("--upfront", action="store_true",
                        help="merge: make every run's copies before the first run, delete them after the last")
    args = parser.parse_args()
    os.environ.update({k: v for k, v in ENV.items() if k.startswith("GIT_")})
    os.environ["AM_HOME"] = tempfile.mkdtemp(prefix="am-home-")
    work = args.work or Path(tempfile.mkdtemp(prefix="am-bench-sync-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.only in (None, "noop"):
            noop_sync(work, args.facts, args.runs)
        if args.only in (None, "merge"):
            merge_bench(work, args.runs, base=args.base, upfront=args.upfront)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
