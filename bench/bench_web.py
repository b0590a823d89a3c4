"""Benchmark `am serve`: the first meaningful paint of the view, and the graph of a 1,000-topic vault.

Scenarios (medians of --runs; each run a fresh server process on a warm disk cache, as a person
who starts `am serve` finds it):

1. first paint at N facts (default 10k): the page's critical path, request by request as the page
   makes them: GET /, its stylesheet and two scripts, /api/worlds, then /api/graph (the first one
   reads the slice and computes the layout). Target: <= 1 s. The baseline, measured in the same run,
   is the whole `am slice --max-tokens 0` process for the same world (what the CLI user waits for).
2. the graph of a vault of M facts (default 50k, which the corpus gives 1,000 topics): the first
   /api/graph, the second (the layout kept for the vault commit), and the layout alone in-process.
   Target: the second answer well under the first (interactive: the layout is computed once).

Usage: python bench/bench_web.py [--facts 10000] [--big-facts 50000] [--runs 5] [--work /tmp/am-bench]
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_slice import ensure_vault

ROOT = Path(__file__).resolve().parent.parent
PAGE = ["/", "/static/style.css", "/static/graph.js", "/static/app.js", "/api/worlds", "/api/graph"]


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AM_HOME": str(home)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _get(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
    response = conn.getresponse()
    size = len(response.read())
    conn.close()
    assert response.status == 200, (path, response.status)
    return size


def _start(vault: Path, home: Path) -> tuple[subprocess.Popen[str], int, float]:
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "am.cli.main", "--vault", str(vault), "serve", "--port", "0"],
                            env=_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "serving http://127.0.0.1:" in line, line
    return proc, int(line.split("127.0.0.1:")[1].split("/")[0]), time.perf_counter() - began


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(20)
    if proc.stderr:
        proc.stderr.close()


def first_paint(vault: Path, home: Path, runs: int) -> dict[str, float]:
    """Return median seconds: server start, the page's critical path, a second /api/graph."""
    starts, paints, again, sizes = [], [], [], 0
    for _ in range(runs):
        proc, port, started = _start(vault, home)
        try:
            began = time.perf_counter()
            sizes = sum(_get(port, path) for path in PAGE)
            paints.append(time.perf_counter() - began)
            began = time.perf_counter()
            _get(port, "/api/graph")
            again.append(time.perf_counter() - began)
            starts.append(started)
        finally:
            _stop(proc)
    return {"start": statistics.median(starts), "paint": statistics.median(paints),
            "again": statistics.median(again), "bytes": sizes}


def slice_process(vault: Path, home: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(vault), "slice", "--max-tokens", "0"],
                       env=_env(home), check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def layout_alone(vault: Path, home: Path) -> tuple[int, int, float]:
    os.environ["AM_HOME"] = str(home)
    from am.packs.graph import graph_json, world_graph
    from am.packs.layout import layout
    from am.packs.pack import SliceRequest
    from am.vault import Vault

    with Vault.open(vault) as opened:
        data = graph_json(world_graph(opened, SliceRequest(max_tokens=0)))
    nodes = [n["id"] for n in data["nodes"]]
    edges = [(e["from"], e["to"]) for e in data["edges"]]
    began = time.perf_counter()
    layout(nodes, edges)
    return len(nodes), len(edges), time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--big-facts", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/am-bench"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    home = args.work / "home-web"
    home.mkdir(exist_ok=True)

    vault = ensure_vault(args.work, args.facts)
    subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(vault), "index", "status"], env=_env(home),
                   check=True, stdout=subprocess.DEVNULL)  # a warm cache, as a vault in use has
    base = slice_process(vault, home, args.runs)
    paint = first_paint(vault, home, args.runs)
    print(f"1. first paint at {args.facts:,} facts ({paint['bytes']:,} bytes over {len(PAGE)} requests):")
    print(f"   server start {paint['start']:.3f} s (not in the paint: the server is up before the page opens)")
    print(f"   critical path {paint['paint']:.3f} s = {paint['paint'] / base:.2f}x the `am slice --max-tokens 0` "
          f"process ({base:.3f} s); target <= 1 s: {'met' if paint['paint'] <= 1 else 'NOT met'}")
    print(f"   a second /api/graph {paint['again']:.3f} s ({paint['again'] / paint['paint']:.2f}x the paint)")

    big = ensure_vault(args.work, args.big_facts)
    subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(big), "index", "status"], env=_env(home),
                   check=True, stdout=subprocess.DEVNULL)
    nodes, edges, alone = layout_alone(big, home)
    graph = first_paint(big, home, max(1, args.runs // 2))
    print(f"2. the graph of {args.big_facts:,} facts: {nodes:,} topics, {edges:,} edges")
    print(f"   layout alone {alone:.3f} s; critical path {graph['paint']:.3f} s; a second /api/graph "
          f"{graph['again']:.3f} s = {graph['again'] / graph['paint']:.2f}x the first paint (layout kept)")


if __name__ == "__main__":
    main()
