"""Benchmark forgiving search and `am now` against their baselines, measured in the same run.

1. Search at N facts (default 100k; bench/corpus.py): the p50 of ranked OR search (phrase, then
   all terms, then some, stems without stop words) over a fixed set of queries, against the
   p50 of the all-words AND search (``mode="and"``, the search before this change) over the
   same queries, both in-process on a warm cache. Target: ranked <= 2x AND.
2. `am now` as a whole process at M facts (default 10k), against `am slice` (every topic, the
   default budget) on the same vault, both after a warm-up run. Target: now <= 1.2x slice.

Usage: python bench/bench_recall.py [--facts 100000] [--now-facts 10000] [--work /tmp/am-bench] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_index import median_time  # noqa: E402
from bench.bench_slice import ensure_vault  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# Questions in the corpus's vocabulary (bench/corpus.py): words that occur, partly, in combinations.
QUERIES = [
    "session cache", "how does the billing job retry", "the rate limiter times out", "query planner",
    "auth proxy on the main branch", "deploy pipeline staging cluster", "nightly export after the migration",
    "latency budgets and retries", "会话缓存", "限流模块 超时", "用户服务 依赖", "发布流水线 预发布集群",
    "why is the search API slow", "mobile app feature flag", "caches requests for every tenant",
]


def _p50(values: list[float]) -> float:
    return statistics.median(values)


def search_bench(vault_path: Path, runs: int) -> tuple[float, float]:
    """Return the p50 (over queries, each the median of ``runs``) of ranked and of AND search."""
    from am.cache.search import search
    from am.vault import Vault

    with Vault.open(vault_path) as vault:
        index = vault.cache()
        assert index is not None
        for q in QUERIES:  # warm the page cache and the stemmer
            search(index, q, mode="and")
            search(index, q)
        ranked, plain = [], []
        for q in QUERIES:
            plain.append(median_time(lambda: search(index, q, mode="and"), runs))
            ranked.append(median_time(lambda: search(index, q), runs))
            answered = len(search(index, q).hits), len(search(index, q, mode="and").hits)
            print(f"  {q!r:48} and {plain[-1] * 1000:7.1f} ms ({answered[1]:2} hits)   "
                  f"ranked {ranked[-1] * 1000:7.1f} ms ({answered[0]:2} hits)")
    return _p50(ranked), _p50(plain)


def process_bench(vault_path: Path, runs: int) -> tuple[float, float]:
    """Return the median whole-process time of `am now` and of `am slice` on the vault."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "am.cli.main", "--vault", str(vault_path)]
    now_cmd = [*base, "now", "--repo", "project-alpha", "--branch", "main"]
    slice_cmd = [*base, "slice", "--repo", "project-alpha", "--branch", "main"]
    for cmd in (now_cmd, slice_cmd):
        subprocess.run(cmd, env=env, capture_output=True, check=True)
    times: dict[str, list[float]] = {"now": [], "slice": []}
    for _ in range(runs):  # interleaved, so a busy moment of the machine hits both
        for name, cmd in (("now", now_cmd), ("slice", slice_cmd)):
            began = time.perf_counter()
            subprocess.run(cmd, env=env, capture_output=True, check=True)
            times[name].append(time.perf_counter() - began)
    return _p50(times["now"]), _p50(times["slice"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--now-facts", type=int, default=10_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/am-bench"))
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"search at {args.facts} facts")
    ranked, plain = search_bench(ensure_vault(args.work, args.facts), args.runs)
    print(f"ranked OR search p50 {ranked * 1000:.1f} ms, AND search p50 {plain * 1000:.1f} ms: "
          f"{ranked / plain:.2f}x (target <= 2x)")
    print(f"am now vs am slice at {args.now_facts} facts (whole processes)")
    now, whole = process_bench(ensure_vault(args.work, args.now_facts), args.runs)
    print(f"am now {now * 1000:.0f} ms, am slice {whole * 1000:.0f} ms: {now / whole:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
