"""The pre-commit hook on a 10k-fact vault, for a one-file commit (obsidian-git commits on a timer).

Builds a synthetic vault (bench/corpus.py), installs am's hooks, then times
whole `git commit` processes of one hand-edited fact (median of N): with am's
pre-commit hook, and without any hook (the baseline, measured in the same run).
Target (issue 17): the hook's commit <= 0.5 s whole. Also times the hook alone
(`am hook pre-commit` on the same staged change) and a commit that renames a
topic by hand (the rare path that asks the cache who still points at it).

With ``--before REV`` (a commit of this repository, e.g. one before a change
to the hooks), that version's hooks are installed beside the current ones and
the commits of both are timed in the same run, interleaved, for a before/after
ratio that the machine's load does not skew.

Usage: python bench/bench_precommit.py [--facts 10000] [--runs 7] [--before REV]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench"))
from corpus import write_vault  # noqa: E402

ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@x", "PYTHONPYCACHEPREFIX": "/tmp/am-bench-pycache"}
ENV.pop("PYTHONDONTWRITEBYTECODE", None)  # measure as installed: bytecode compiled once


def git(vault: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(vault), *args], check=check, capture_output=True, text=True, env=ENV)


CPU: list[float] = []  # CPU seconds (user + system) of each timed commit's processes: not inflated by load


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_commit(vault: Path, fact: Path, n: int, *, hooks: bool, hooks_path: Path | None = None) -> float:
    """Edit one fact, stage it and time `git commit` (with or without hooks); its CPU time goes to CPU."""
    text = fact.read_text(encoding="utf-8")
    fact.write_text(text.rstrip("\n") + f" Edit {n}.\n", encoding="utf-8")
    git(vault, "add", "-A")
    args = ["commit", "-q", "-m", f"edit {n}"] if hooks else ["-c", "core.hooksPath=/dev/null", "commit", "-q",
                                                            "-m", f"edit {n}", "--no-verify"]
    if hooks and hooks_path is not None:
        args = ["-c", f"core.hooksPath={hooks_path}", *args]
    began, cpu = time.perf_counter(), _children_cpu()
    proc = git(vault, *args, check=False)
    took = time.perf_counter() - began
    CPU.append(_children_cpu() - cpu)
    if proc.returncode != 0:
        raise SystemExit(f"commit failed: {proc.stderr}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--before", default=None, help="a commit of this repository whose hooks to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="am-bench-precommit-") as tmp:
        vault = Path(tmp) / "vault"
        began = time.perf_counter()
        write_vault(vault, args.facts)
        print(f"vault: {args.facts} facts built in {time.perf_counter() - began:.1f} s")
        am = [sys.executable, "-m", "am.cli.main", "--vault", str(vault)]
        subprocess.run([*am, "hooks", "install"], check=True, capture_output=True, env={**ENV, "PYTHONPATH": str(ROOT)})
        subprocess.run([*am, "check"], capture_output=True, env={**ENV, "PYTHONPATH": str(ROOT)})  # warm the cache
        facts = sorted((vault / "facts").rglob("*.md"))
        fact = facts[len(facts) // 2]
        timed_commit(vault, fact, 0, hooks=True)  # warm-up: bytecode, page cache
        CPU.clear()
        if args.before:
            _compare_before(vault, fact, args.before, Path(tmp), args.runs)
        CPU.clear()
        with_hook = [timed_commit(vault, fact, n, hooks=True) for n in range(1, args.runs + 1)]
        cpu_hook = statistics.median(CPU)
        CPU.clear()
        without = [timed_commit(vault, fact, n, hooks=False) for n in range(100, 100 + args.runs)]
        cpu_base = statistics.median(CPU)
        hook, base = statistics.median(with_hook), statistics.median(without)
        load = os.getloadavg()[0]
        print(f"machine load (1 min): {load:.1f} on {os.cpu_count()} cores; wall times grow with it, CPU times do not")
        print(f"one-file commit, no hook (baseline): {base * 1000:7.1f} ms wall, {cpu_base * 1000:6.1f} ms CPU")
        print(f"one-file commit, am's pre-commit + post-commit: {hook * 1000:7.1f} ms wall "
              f"({hook / base:.1f}x the baseline), {cpu_hook * 1000:6.1f} ms CPU ({cpu_hook / cpu_base:.1f}x); "
              f"target <= 500 ms whole: {'met' if hook <= 0.5 else 'not met'} by wall, "
              f"{'met' if cpu_hook <= 0.5 else 'not met'} by CPU")
        # Start-up floors in the same run, by CPU: how much of a hook is just starting Python and am.
        for label, argv in (("python -c pass", [sys.executable, "-c", "pass"]),
                            ("am --version", [*am[:3], "--version"])):
            cpu = []
            for _ in range(args.runs):
                before = _children_cpu()
                subprocess.run(argv, check=True, capture_output=True, env={**ENV, "PYTHONPATH": str(ROOT)})
                cpu.append(_children_cpu() - before)
            print(f"{label}: {statistics.median(cpu) * 1000:6.1f} ms CPU "
                  f"(the hooked commit is {cpu_hook / statistics.median(cpu):.1f}x this)")
        # The hook alone, on a staged one-file change: what the installed shim runs.
        fact.write_text(fact.read_text(encoding="utf-8") + "More.\n", encoding="utf-8")
        git(vault, "add", "-A")
        alone, alone_cpu = [], []
        for _ in range(args.runs):
            began, cpu_before = time.perf_counter(), _children_cpu()
            subprocess.run([sys.executable, "-m", "am.cli.hookrun", "pre-commit"], cwd=vault, check=True,
                           capture_output=True, env={**ENV, "PYTHONPATH": str(ROOT)})
            alone.append(time.perf_counter() - began)
            alone_cpu.append(_children_cpu() - cpu_before)
        print(f"pre-commit hook alone (am.cli.hookrun): {statistics.median(alone) * 1000:7.1f} ms wall "
              f"({statistics.median(alone) / base:.1f}x the baseline commit), "
              f"{statistics.median(alone_cpu) * 1000:6.1f} ms CPU")
        git(vault, "commit", "-q", "-m", "more", "--no-verify")
        # The rare path: a hand rename of a topic others point at (refused after asking the cache).
        # The cache is brought up to date first, in this version's format (--before's hooks may have
        # left an older one): what is timed is the refusal, not a rebuild.
        subprocess.run([*am, "index", "status"], check=True, capture_output=True, env={**ENV, "PYTHONPATH": str(ROOT)})
        topic = sorted((vault / "topics").glob("*.md"))[0]
        topic.rename(topic.with_name("renamed by hand.md"))
        text = topic.with_name("renamed by hand.md").read_text(encoding="utf-8")
        topic.with_name("renamed by hand.md").write_text(text.replace("id: ", "id: x", 1), encoding="utf-8")
        git(vault, "add", "-A")
        began = time.perf_counter()
        refused = git(vault, "commit", "-q", "-m", "hand rename", check=False)
        took = time.perf_counter() - began
        print(f"hand rename of a topic, refused: {took * 1000:7.1f} ms ({took / base:.1f}x the baseline; "
              f"{'refused' if refused.returncode else 'NOT refused'}, "
              f"{sum(1 for ln in refused.stderr.splitlines() if 'missing-target' in ln)} referring files named)")


def _compare_before(vault: Path, fact: Path, rev: str, tmp: Path, runs: int) -> None:
    """Time one-file commits through REV's hooks and the current ones, interleaved; print the ratio."""
    before = tmp / "before"
    before.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "am"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    hooks = {}
    for label, code in (("before", before), ("after", ROOT)):
        # Each version's `am hooks install`, run from its own source: shims that run that source.
        git(vault, "config", "--unset", "core.hooksPath", check=False)
        subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(code)!r}); "
                        "from am.cli.main import main; main()", "--vault", str(vault), "hooks", "install"],
                       check=True, capture_output=True, env=ENV)
        hooks[label] = tmp / f"hooks-{label}"
        subprocess.run(["cp", "-r", str(vault / ".git" / "hooks"), str(hooks[label])], check=True)
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "hooks installed", "--no-verify", check=False)
    wall: dict[str, list[float]] = {"before": [], "after": []}
    cpu: dict[str, list[float]] = {"before": [], "after": []}
    for n in range(runs + 1):
        for label in ("before", "after"):
            CPU.clear()
            took = timed_commit(vault, fact, 1000 + 2 * n + (label == "after"), hooks=True, hooks_path=hooks[label])
            if n:  # the first round warms both up
                wall[label].append(took)
                cpu[label].append(CPU[0])
    (w0, w1), (c0, c1) = ((statistics.median(d["before"]), statistics.median(d["after"])) for d in (wall, cpu))
    print(f"hooked one-file commit, {rev} (before): {w0 * 1000:7.1f} ms wall, {c0 * 1000:6.1f} ms CPU")
    print(f"hooked one-file commit, this tree (after): {w1 * 1000:7.1f} ms wall, {c1 * 1000:6.1f} ms CPU; "
          f"after/before: {w1 / w0:.2f}x wall, {c1 / c0:.2f}x CPU (same run, interleaved)")


if __name__ == "__main__":
    main()
