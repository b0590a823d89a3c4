"""Benchmark the cache: rebuild against a bare read, incremental update, freshness check, search.

Every figure is printed next to a baseline measured in the same run (the bare
read of the same files), because absolute times on a shared machine drift.

Usage: python bench/bench_index.py --facts 10000 [--vault DIR] [--runs 3] [--skip-process]
                                   [--basic-memory PATH/TO/bm --bm-notes 200]
The vault is generated with bench/corpus.py (kept in /tmp/am-bench-<N> for reuse).
basic-memory needs Python >= 3.12: install it in its own venv
(python3.12 -m venv /tmp/bm-venv && /tmp/bm-venv/bin/pip install basic-memory).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUERIES = ["限流", "缓存", "查询规划器", "session cache", "rate limiter", "Deploy Pipeline", "夜间导出 migration",
           "retries", "latency budgets", "feature flag", "用户服务 依赖", "project-t0001", "last week 缓存",
           "2 weeks ago retries", "上周 超时"]


def median_time(fn: Callable[[], object], runs: int) -> float:
    """Return the median wall time of fn over runs."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def bare_read(root: Path) -> int:
    """Read and decode every record file, the floor any indexer pays."""
    count = 0
    for top in ("topics", "facts", "relations"):
        for dirpath, _dirs, files in os.walk(root / top):
            for name in files:
                if name.endswith(".md"):
                    with open(os.path.join(dirpath, name), "rb") as handle:
                        handle.read().decode("utf-8")
                    count += 1
    return count


def child_rebuild(vault: str) -> None:
    """Rebuild in this process and print its peak memory (run as a child)."""
    from am.cache.index import Index
    from am.vault import Vault

    shutil.rmtree(Path(vault) / ".am" / "cache", ignore_errors=True)
    began = time.perf_counter()
    with Vault.open(vault) as v:
        Index.open(v).close()
    seconds = time.perf_counter() - began
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mib": peak}))


def basic_memory(bm: str, vault: Path, notes: int) -> float:
    """Return basic-memory's seconds per note for a full keyword reindex of ``notes`` of the vault's facts."""
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="am-bench-bm-"))
    folder = work / "notes"
    folder.mkdir()
    for path in sorted((vault / "facts").rglob("*.md"))[:notes]:
        shutil.copy(path, folder / path.name)
    env = {**os.environ, "HOME": str(work)}  # its config and database stay in the temp folder
    subprocess.run([bm, "project", "add", "bench", str(folder)], env=env, capture_output=True, check=True)
    began = time.perf_counter()
    subprocess.run([bm, "reindex", "--full", "--search", "-p", "bench"], env=env, capture_output=True, check=True)
    seconds = time.perf_counter() - began
    shutil.rmtree(work, ignore_errors=True)
    return seconds / notes


def process_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": "/tmp/am-bench-pycache"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure as installed: bytecode compiled once
    return env


def git(vault: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(vault), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x",
                        "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--facts", type=int, default=10000)
    parser.add_argument("--vault", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-process", action="store_true", help="skip the whole-process search timing")
    parser.add_argument("--basic-memory", default=None, metavar="BM", help="path of basic-memory's bm command")
    parser.add_argument("--bm-notes", type=int, default=200)
    parser.add_argument("--child-rebuild", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_rebuild:
        child_rebuild(args.child_rebuild)
        return
    os.environ.setdefault("AM_HOME", "/tmp/am-bench-home")
    from bench.corpus import write_vault

    vault_path = args.vault or Path(f"/tmp/am-bench-{args.facts}")
    if not (vault_path / ".am" / "vault.yml").exists():
        print(f"generating {args.facts} facts in {vault_path} ...", flush=True)
        write_vault(vault_path, args.facts)

    from am.cache.index import Index
    from am.cache.search import search
    from am.vault import Vault

    out: dict[str, float] = {}
    files = bare_read(vault_path)
    print(f"vault {vault_path}: {files} record files")

    # Rebuild against the bare read, interleaved so both see the same machine load.
    reads, rebuilds = [], []
    vault = Vault.open(vault_path)
    index = Index.open(vault)
    for _ in range(args.runs):
        reads.append(median_time(lambda: bare_read(vault_path), 1))
        rebuilds.append(median_time(index.rebuild, 1))
    out["bare_read_s"] = statistics.median(reads)
    out["rebuild_s"] = statistics.median(rebuilds)
    print(f"bare read        {out['bare_read_s']:.3f} s")
    print(f"full rebuild     {out['rebuild_s']:.3f} s  = {out['rebuild_s'] / out['bare_read_s']:.1f}x the bare read "
          f"({out['rebuild_s'] / files * 1e6:.0f} us per file)")
    child = subprocess.run([sys.executable, __file__, "--child-rebuild", str(vault_path)], capture_output=True,
                           text=True, env=process_env(), check=True)
    peak = json.loads(child.stdout.strip().splitlines()[-1])
    out["rebuild_process_s"], out["rebuild_peak_mib"] = peak["seconds"], peak["peak_mib"]
    print(f"rebuild process  {peak['seconds']:.3f} s, peak RSS {peak['peak_mib']:.0f} MiB (whole process)")
    index.close()
    vault.close()
    vault = Vault.open(vault_path, actor="bench")
    index = vault.cache()

    # Freshness check with nothing changed (what every command pays).
    checks = []
    for _ in range(50):
        began = time.perf_counter()
        index.refresh()
        checks.append(time.perf_counter() - began)
    out["fresh_check_ms"] = statistics.median(checks) * 1000
    print(f"freshness check  {out['fresh_check_ms']:.2f} ms median (no change)")
    opens = []
    for _ in range(10):
        began = time.perf_counter()
        Index.open(vault).close()
        opens.append(time.perf_counter() - began)
    out["open_check_ms"] = statistics.median(opens) * 1000
    print(f"open + check     {out['open_check_ms']:.2f} ms median (integrity check of the file + freshness)")

    # Incremental: a one-file commit by hand (git CLI), then an am write.
    incs = []
    for i in range(args.runs):
        target = next((vault_path / "facts").rglob("*.md"))
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(f"Edited by hand {i}.\n")
        git(vault_path, "commit", "-qam", f"hand edit {i}")
        began = time.perf_counter()
        result = index.refresh()
        incs.append(time.perf_counter() - began)
        assert result.changed == 1, result
    out["incremental_s"] = statistics.median(incs)
    print(f"incremental      {out['incremental_s'] * 1000:.1f} ms after a one-file git commit "
          f"= {out['incremental_s'] / out['rebuild_s'] * 100:.2f}% of a rebuild")
    writes = []
    for i in range(args.runs):
        began = time.perf_counter()
        vault.add_fact(f"Bench write {i} about 限流.", topics=["project-t00000"])
        writes.append(time.perf_counter() - began)
    out["am_write_s"] = statistics.median(writes)
    print(f"am fact add      {out['am_write_s'] * 1000:.1f} ms in-process (commit + Git index + cache update)")
    sweep = median_time(lambda: index.refresh(full=True), args.runs)
    out["sweep_s"] = sweep
    print(f"full stat sweep  {sweep * 1000:.1f} ms (refresh(full=True); commands stat a rolling ~500 files instead)")

    # Search, in-process.
    lat = []
    for _ in range(5):
        for q in QUERIES:
            began = time.perf_counter()
            search(index, q, limit=20)
            lat.append(time.perf_counter() - began)
    lat.sort()
    out["search_p50_ms"] = lat[len(lat) // 2] * 1000
    out["search_p95_ms"] = lat[int(len(lat) * 0.95)] * 1000
    print(f"search in-proc   p50 {out['search_p50_ms']:.1f} ms, p95 {out['search_p95_ms']:.1f} ms "
          f"({len(QUERIES)} queries x 5, with snippets)")
    index_only = []
    for q in QUERIES:
        began = time.perf_counter()
        index.search(q, limit=20)
        index_only.append(time.perf_counter() - began)
    out["fts_p50_ms"] = statistics.median(index_only) * 1000
    print(f"FTS query only   p50 {out['fts_p50_ms']:.1f} ms")
    vault.close()

    if not args.skip_process:
        env = process_env()
        cmd = [sys.executable, "-m", "am.cli.main", "--vault", str(vault_path), "search", "限流", "--limit", "10"]
        subprocess.run(cmd, env=env, capture_output=True, check=True)  # compile bytecode once
        procs = []
        for q in ("限流", "session cache", "上周 超时"):
            for _ in range(3):
                began = time.perf_counter()
                subprocess.run([*cmd[:-3], q, "--limit", "10"], env=env, capture_output=True, check=True)
                procs.append(time.perf_counter() - began)
        base = median_time(lambda: subprocess.run([sys.executable, "-c", "pass"], env=env, check=True), 5)
        out["search_process_ms"] = statistics.median(procs) * 1000
        print(f"am search proc   {out['search_process_ms']:.0f} ms median (python -c pass: {base * 1000:.0f} ms)")
    if args.basic_memory:
        per_note = basic_memory(args.basic_memory, vault_path, args.bm_notes)
        out["basic_memory_s_per_note"] = per_note
        ours = out["rebuild_s"] / files
        print(f"basic-memory     {per_note:.3f} s per note (bm reindex --full --search, {args.bm_notes} notes); "
              f"am's rebuild {ours * 1e6:.0f} us per file = {per_note / ours:.0f}x faster")
    print(json.dumps({k: round(v, 4) for k, v in out.items()}))


if __name__ == "__main__":
    main()
