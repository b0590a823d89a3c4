"""Benchmark the vector level (issue 22) against full text alone, measured in the same run.

1. Rebuild at N facts (default 10k; bench/corpus.py): the cache from scratch and then every
   fact's and topic's vector (the model loaded once, as `am index rebuild` does), against the
   cache alone. Target: <= 1.5x.
2. Incremental update of one record: write a fact (one commit) and bring the cache up to date,
   then embed what is new, against the same without vectors (model warm). Target: <= 2x.
3. Warm hybrid search at M facts (default 100k), in-process: the p50 over fixed queries of
   full text fused with vectors. Target: <= 30 ms (full text alone printed beside it).
4. `am search` as a whole process with the extra (vectors already in the cache), against
   the same command with the level off. Target: <= 1.5x.

Usage: python bench/bench_semantic.py [--facts 10000] [--search-facts 100000] [--work /tmp/am-bench] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_recall import QUERIES  # noqa: E402
from bench.bench_slice import ensure_vault  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def rebuild_bench(vault_path: Path, runs: int) -> tuple[float, float, float]:
    """Return the median rebuild time without vectors, with them, and the model's load time."""
    from am.cache import vectors
    from am.packs.embedding import wordllama
    from am.vault import Vault

    began = time.perf_counter()
    model = wordllama()
    load = time.perf_counter() - began
    plain, full = [], []
    with Vault.open(vault_path) as vault:
        index = vault.cache()
        assert index is not None
        for _ in range(runs):  # interleaved, so a busy moment of the machine hits both
            began = time.perf_counter()
            index.rebuild()
            plain.append(time.perf_counter() - began)
            began = time.perf_counter()
            index.rebuild()
            status = vectors.ensure(index, model)
            full.append(time.perf_counter() - began)
            assert status.missing == 0 and status.embedded == status.total
    return statistics.median(plain), statistics.median(full), load


def update_bench(vault_path: Path, runs: int) -> tuple[float, float]:
    """Return the median time of one fact written and taken in, without and with its vector."""
    from am.cache import vectors
    from am.packs.embedding import wordllama
    from am.vault import Vault

    model = wordllama()
    plain, full = [], []
    with Vault.open(vault_path) as vault:
        index = vault.cache()
        assert index is not None
        vectors.ensure(index, model)
        topic = next(r.id for _, r in index.records(type="topic"))
        for n in range(runs):
            for label, out in (("plain", plain), ("vectors", full)):
                began = time.perf_counter()
                vault.add_fact(f"Bench fact {label} {n}: the session cache now expires after {n} minutes.",
                               topics=[topic])
                index = vault.cache()
                assert index is not None
                index.refresh()
                if label == "vectors":
                    status = vectors.ensure(index, model)
                    assert status.embedded >= 1 and status.missing == 0
                out.append(time.perf_counter() - began)
        vectors.ensure(index, model)
    return statistics.median(plain), statistics.median(full)


def search_bench(vault_path: Path, runs: int) -> tuple[float, float, float]:
    """Return the p50 of hybrid search and of full text alone (warm, in-process), and the embedding time."""
    from am.cache import vectors
    from am.cache.search import search
    from am.packs.embedding import wordllama
    from am.vault import Vault

    model = wordllama()
    with Vault.open(vault_path) as vault:
        index = vault.cache()
        assert index is not None
        began = time.perf_counter()
        vectors.ensure(index, model)
        embedded = time.perf_counter() - began
        for q in QUERIES:  # warm: vectors in memory, pages cached
            search(index, q, embedder=model)
            search(index, q)
        hybrid, plain = [], []
        for q in QUERIES:
            for fn, out in ((lambda: search(index, q, embedder=model), hybrid), (lambda: search(index, q), plain)):
                times = []
                for _ in range(runs):
                    began = time.perf_counter()
                    fn()
                    times.append(time.perf_counter() - began)
                out.append(statistics.median(times))
    return statistics.median(hybrid), statistics.median(plain), embedded


def process_bench(vault_path: Path, runs: int) -> tuple[float, float]:
    """Return the median whole-process time of `am search` with the vector level and with it off."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("AM_EMBEDDINGS", None)
    cmd = [sys.executable, "-m", "am.cli.main", "--vault", str(vault_path), "search", "session cache timeout"]
    with_env, off_env = env, {**env, "AM_EMBEDDINGS": "off"}
    subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(vault_path), "index", "rebuild"],
                   env=with_env, capture_output=True, check=True)
    for e in (with_env, off_env):
        subprocess.run(cmd, env=e, capture_output=True, check=True)
    times: dict[str, list[float]] = {"with": [], "off": []}
    for _ in range(runs):
        for name, e in (("with", with_env), ("off", off_env)):
            began = time.perf_counter()
            subprocess.run(cmd, env=e, capture_output=True, check=True)
            times[name].append(time.perf_counter() - began)
    return statistics.median(times["with"]), statistics.median(times["off"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--search-facts", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/am-bench"))
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    small = ensure_vault(args.work, args.facts)
    copy = args.work / f"semantic-{args.facts}"  # writes go to a copy: the shared vault stays as built
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(small, copy, symlinks=True)
    print(f"rebuild at {args.facts} facts")
    plain, full, load = rebuild_bench(copy, max(3, args.runs // 2))
    print(f"  cache alone {plain:.2f} s, cache and vectors {full:.2f} s (model load {load:.2f} s, once): "
          f"{full / plain:.2f}x (target <= 1.5x)")
    print("one fact written and taken in")
    plain, full = update_bench(copy, args.runs)
    print(f"  without vectors {plain * 1000:.0f} ms, with {full * 1000:.0f} ms: {full / plain:.2f}x (target <= 2x)")
    print(f"am search as a process at {args.facts} facts")
    with_level, off = process_bench(copy, args.runs)
    print(f"  with vectors {with_level * 1000:.0f} ms, level off {off * 1000:.0f} ms: {with_level / off:.2f}x "
          "(target <= 1.5x)")
    print(f"warm hybrid search at {args.search_facts} facts (in-process)")
    hybrid, words, embedded = search_bench(ensure_vault(args.work, args.search_facts), args.runs)
    print(f"  (vectors made in {embedded:.1f} s) hybrid p50 {hybrid * 1000:.1f} ms (target <= 30 ms), "
          f"full text alone {words * 1000:.1f} ms: {hybrid / words:.2f}x")
    shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    main()
