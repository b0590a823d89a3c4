"""Benchmark what one `am sync` costs a team's clone as the vault grows and as the clone falls behind.

For each vault size N (``--facts``) and each number of commits K the clone is
behind (``--behind``): a vault of N facts (bench/corpus.py) is pushed to a bare
repository served by `git daemon` on 127.0.0.1 and cloned; then the first
machine writes K facts, one commit each, and pushes them. The clone is timed
catching up, on fresh copies of it and of the server each run:

- **fast-forward**: the clone has nothing of its own. `am sync` against
  `git pull --ff-only` (fetch and fast-forward).
- **merge**: the clone wrote one fact of its own first. `am sync` (fetch, one
  record-aware merge commit, push) against `git pull --no-rebase` (Git's merge,
  no driver: the files do not clash) and `git push`.

Medians of whole processes; the ratio is against the git commands of the same
run. The clone's cache is brought up to date before each timed run (untimed),
as a clone in daily use has it.

Usage: python bench/bench_team.py [--facts 1000] [--behind 10] [--runs 3] [--work DIR]
       python bench/bench_team.py --facts 1000,10000,100000 --behind 10,100,1000
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
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "GIT_AUTHOR_NAME": "bench",
       "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench",
       "GIT_COMMITTER_EMAIL": "bench@example.com", "PYTHONPATH": str(ROOT)}
AM = [sys.executable, "-m", "am.cli.entry"]


def run(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(list(args), cwd=cwd, check=False, capture_output=True, text=True, env=ENV)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def timed(*args: str, cwd: Path | None = None) -> float:
    began = time.perf_counter()
    run(*args, cwd=cwd)
    return time.perf_counter() - began


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def _copy(src: Path, dest: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, symlinks=True)
    return dest


class Case:
    """A vault of ``facts`` facts on a server under ``work``, a clone of it, and the clone with one fact of its own."""

    def __init__(self, work: Path, base: Path, url: str, facts: int) -> None:
        from bench.corpus import write_vault

        self.work, self.base, self.url, self.facts = work / f"n{facts}", base, url, facts
        self.work.mkdir()
        self.bare = base / f"n{facts}.git"
        run("git", "init", "-q", "--bare", "-b", "main", str(self.bare))
        self.first = self.work / "first"
        run("git", "init", "-q", "-b", "main", str(self.first))
        began = time.perf_counter()
        write_vault(self.first, facts)
        self.built = time.perf_counter() - began
        run(*AM, "--vault", str(self.first), "sync", "--set-upstream", f"{url}/n{facts}.git")
        self.clone = self.work / "clone"
        run("git", "clone", "-q", f"{url}/n{facts}.git", str(self.clone))
        run(*AM, "--vault", str(self.clone), "fact", "list", "--status", "contested")  # its cache (untimed)
        self.own = _copy(self.clone, self.work / "own")
        run(*AM, "--vault", str(self.own), "fact", "add", "The clone's own fact.", "--topic", _a_topic(self.own))
        self.behind = 0

    def fall_behind(self, commits: int) -> None:
        """The first machine writes facts, one commit each, until the clones are ``commits`` behind; it pushes them."""
        from am.vault import Vault

        topic = _a_topic(self.first)
        with Vault.open(self.first, actor="first") as vault:
            for i in range(self.behind, commits):
                vault.add_fact(f"The first machine learned thing {i} while the clone slept.", topics=[topic])
        run(*AM, "--vault", str(self.first), "sync")
        self.behind = commits

    def copies(self, n: int, clone: Path, label: str) -> tuple[Path, Path]:
        """A copy of the server and of ``clone`` pointed at it, its index and cache current (untimed)."""
        server = _copy(self.bare, self.base / f"n{self.facts}-{label}-{n}.git")
        ours = _copy(clone, self.work / f"{label}-{n}")
        run("git", "-C", str(ours), "remote", "set-url", "origin", f"{self.url}/{server.name}")
        run("git", "-C", str(ours), "update-index", "-q", "--refresh")
        run(*AM, "--vault", str(ours), "fact", "list", "--status", "contested")
        os.sync()
        return server, ours


def _a_topic(root: Path) -> str:
    return sorted(p.stem for p in (root / "topics").glob("*.md"))[0]


def measure(case: Case, runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in ("git ff", "am ff", "git merge", "am merge")}
    for n in range(runs):
        steps = []
        for label, clone in (("git-ff", case.clone), ("am-ff", case.clone), ("git-merge", case.own),
                             ("am-merge", case.own)):
            steps.append((label, *case.copies(n, clone, label)))
        for label, server, ours in steps[n % 4:] + steps[:n % 4]:  # each goes first in turn
            if label == "git-ff":
                took = timed("git", "-C", str(ours), "pull", "-q", "--ff-only")
            elif label == "git-merge":
                took = timed("git", "-C", str(ours), "pull", "-q", "--no-rebase", "--no-edit") \
                    + timed("git", "-C", str(ours), "push", "-q", "origin", "HEAD:main")
            else:
                took = timed(*AM, "--vault", str(ours), "sync")
            times[label.replace("-", " ")].append(took)
            os.sync()
        for label, server, ours in steps:
            shutil.rmtree(server)
            shutil.rmtree(ours)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", default="1000", help="vault sizes, comma-separated (default 1000)")
    parser.add_argument("--behind", default="10", help="commits the clone is behind, comma-separated (default 10)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    sizes = [int(x) for x in args.facts.split(",")]
    behind = sorted(int(x) for x in args.behind.split(","))
    os.environ.update({k: v for k, v in ENV.items() if k.startswith("GIT_")})
    os.environ["AM_HOME"] = tempfile.mkdtemp(prefix="am-home-")
    sys.path.insert(0, str(ROOT / "tests"))
    from gitserver import git_daemon

    work = args.work or Path(tempfile.mkdtemp(prefix="am-bench-team-"))
    work.mkdir(parents=True, exist_ok=True)
    base = work / "server"
    base.mkdir()
    print(f"am sync of a clone K commits behind, over git daemon on loopback ({args.runs} runs each; "
          f"{os.cpu_count()} cores)")
    print(f"{'facts':>8} {'behind':>6} | {'git pull --ff-only':>18} {'am sync (ff)':>13} {'ratio':>6} | "
          f"{'git pull + push':>15} {'am sync (merge)':>15} {'ratio':>6} | load")
    try:
        with git_daemon(base) as url:
            for facts in sizes:
                case = Case(work, base, url, facts)
                for k in behind:
                    case.fall_behind(k)
                    t = {label: statistics.median(v) for label, v in measure(case, args.runs).items()}
                    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
                    print(f"{facts:>8,} {k:>6,} | {_ms(t['git ff']):>18} {_ms(t['am ff']):>13} "
                          f"{t['am ff'] / t['git ff']:>5.2f}x | {_ms(t['git merge']):>15} {_ms(t['am merge']):>15} "
                          f"{t['am merge'] / t['git merge']:>5.2f}x | {load}", flush=True)
                shutil.rmtree(case.work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
