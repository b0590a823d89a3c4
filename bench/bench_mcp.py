"""Benchmark `am mcp`: warm tool calls through the MCP SDK's own client over stdio, against the CLI process.

Scenarios (medians of many calls; the ratio is against a baseline measured in the same run):

1. slice at N facts (default 10k): a warm `slice` call through a running server, against the whole
   `am slice` process for the same world. Target: p50 <= 0.2x the process.
2. search at M facts (default 100k; --search-facts): a warm `search` call through a running server.
   Target: p50 <= 10 ms (full text: the server runs with AM_EMBEDDINGS=off). The whole `am search`
   process is printed beside it, and, from the same server, a search that matches nothing: the part
   of a call that is not ranking (the protocol, the worker thread, parsing the query).

The server is started once (as an agent's client starts it) and warmed with a few calls;
the pack it returns is checked byte for byte against the CLI's.

Usage: python bench/bench_mcp.py [--facts 10000] [--search-facts 100000] [--calls 40] [--work /tmp/am-bench]
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

from bench.bench_index import median_time as _median
from bench.bench_slice import ensure_vault

ROOT = Path(__file__).resolve().parent.parent
WORLD = ["--repo", "project-alpha", "--branch", "main"]
QUERIES = ["session cache", "rate limiter timeout", "用户服务", "deploy pipeline", "query planner", "会话缓存",
           "billing job retries", "auth proxy"]


def _env() -> dict[str, str]:
    # Full text only (the target's level), with or without am[semantic] installed: the hybrid
    # search's own target is measured in process by bench/bench_semantic.py.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AM_EMBEDDINGS": "off"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure as installed: compiled modules cached
    return env


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def through_mcp(vault: Path, calls: int) -> dict[str, object]:
    """Start a stdio server, warm it, and time `slice` and `search` calls; return timings and one pack."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    params = StdioServerParameters(command=sys.executable, args=["-m", "am.cli.main", "--vault", str(vault), "mcp"],
                                   cwd=str(vault), env=_env())
    out: dict[str, object] = {}

    async def session() -> None:
        async with Client(params, client_info=Implementation(name="bench", version="1")) as client:
            args = {"repo": "project-alpha", "branch": "main"}
            for _ in range(3):
                first = await client.call_tool("slice", args)
                await client.call_tool("search", {"query": QUERIES[0]})
            assert not first.is_error, first.content[0].text
            out["pack"] = first.content[0].text
            slices, searches, empty = [], [], []
            for i in range(calls):
                began = time.perf_counter()
                result = await client.call_tool("slice", args)
                slices.append(time.perf_counter() - began)
                assert not result.is_error
                began = time.perf_counter()
                found = await client.call_tool("search", {"query": QUERIES[i % len(QUERIES)]})
                searches.append(time.perf_counter() - began)
                assert not found.is_error, found.content[0].text
                began = time.perf_counter()
                await client.call_tool("search", {"query": "qqxxzz"})
                empty.append(time.perf_counter() - began)
            out["slice"] = statistics.median(slices)
            out["search"] = statistics.median(searches)
            out["empty"] = statistics.median(empty)

    anyio.run(session)
    return out


def ranking_floor(vault: Path, runs: int) -> tuple[float, float]:
    """Return the p50 over QUERIES of ``search()`` in process and of SQLite alone scoring the same matches.

    The floor is one statement that only computes BM25 for every match of the query's first level that
    has any and keeps the best 20 (no filters, no ties broken, no records read): what any exact BM25
    ranking over every match costs at least.
    """
    from am.cache.query import BM25
    from am.cache.search import search
    from am.cache.terms import analyse
    from am.vault import Vault

    with Vault.open(vault) as opened:
        index = opened.cache()
        assert index is not None
        ours, floor = [], []
        for query in QUERIES:
            terms = analyse(query)
            levels = [e for e in (terms.phrase, terms.every, terms.any) if e is not None]
            first = next(e for e in levels if index.conn.execute(
                "SELECT 1 FROM search WHERE search MATCH ? LIMIT 1", (e,)).fetchone())
            sql = f"SELECT rowid, {BM25} AS rank FROM search WHERE search MATCH ? ORDER BY rank LIMIT 20"
            search(index, query)
            ours.append(_median(lambda: search(index, query), runs))  # noqa: B023
            floor.append(_median(lambda: index.conn.execute(sql, (first,)).fetchall(), runs))  # noqa: B023
    return statistics.median(ours), statistics.median(floor)


def main() -> None:
    """Run the scenarios and print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--facts", type=int, default=10000)
    parser.add_argument("--search-facts", type=int, default=100000)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--work", type=Path, default=Path("/tmp/am-bench"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    env, python = _env(), sys.executable

    vault = ensure_vault(args.work, args.facts)
    slice_cmd = [python, "-m", "am.cli.main", "--vault", str(vault), "slice", *WORLD]
    cli_pack = subprocess.run(slice_cmd, env=env, capture_output=True, text=True, check=True).stdout
    process = _median(lambda: subprocess.run(slice_cmd, env=env, capture_output=True, check=True), args.runs)
    mcp = through_mcp(vault, args.calls)
    assert mcp["pack"] == cli_pack, "the server's pack differs from the CLI's"
    warm = float(mcp["slice"])  # type: ignore[arg-type]
    print(f"slice at {args.facts} facts (world project-alpha @ main; the pack is the CLI's, byte for byte)")
    print(f"  am slice, whole process (median of {args.runs}):   {_ms(process)}")
    print(f"  slice through am mcp, warm (p50 of {args.calls}):    {_ms(warm)}")
    print(f"  ratio: {warm / process:.3f}x the process   (target <= 0.2x)")

    big = ensure_vault(args.work, args.search_facts)
    search_cmd = [python, "-m", "am.cli.main", "--vault", str(big), "search", QUERIES[0]]
    subprocess.run(search_cmd, env=env, capture_output=True, check=True)
    search_process = _median(lambda: subprocess.run(search_cmd, env=env, capture_output=True, check=True), args.runs)
    found = through_mcp(big, args.calls)
    warm_search = float(found["search"])  # type: ignore[arg-type]
    print(f"search at {args.search_facts} facts ({len(QUERIES)} queries in turn, English and Chinese)")
    print(f"  am search, whole process (median of {args.runs}):  {_ms(search_process)}")
    print(f"  search through am mcp, warm (p50 of {args.calls}):   {_ms(warm_search)}   (target <= 10 ms)")
    print(f"  ratio: {warm_search / search_process:.3f}x the process")
    ours, floor = ranking_floor(big, args.runs)
    print(f"  in process: search() p50 {_ms(ours)}; SQLite alone scoring every match of the first level p50 "
          f"{_ms(floor)} (ratio {ours / floor:.2f}x: an exact BM25 ranking over every match costs at least that; "
          "search scores at most 500 a level)")
    print(f"  a search that matches nothing, same server (p50 of {args.calls}): {_ms(float(found['empty']))}"  # type: ignore[arg-type]
          "   (the part that is not ranking)")


if __name__ == "__main__":
    main()
