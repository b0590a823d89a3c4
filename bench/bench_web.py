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
3. with --branches B (a code clone of B branches registered for the corpus's repo): the Numbers page
   (/api/numbers) at N facts, and /api/worlds asked while a slow request (/api/numbers,
   /export/graph.html) is in flight, against /api/worlds alone. With --before REV the same is
   measured for that revision of am (a git worktree) in the same run, and the ratios after/before printed.
4. with --team: a year-old team vault of N facts (the corpus, then a history of --commits commits by
   three agents and two people with merges, as bench/bench_audit.py grows it; contested pairs joined by
   conflicts-with, pending-review facts, facts that watch code paths and are stale on main, 4k more
   relations), a clone of --branches (default 20) branches registered: each slow page's first answer in
   a fresh server, in the order a person visits them (/api/graph of main, /api/review of main and of no
   world, /api/numbers of main, /export/graph.html of main). With --before REV, both revisions
   interleaved run by run, the ratios after/before per page, and whether the two answers are
   byte-identical (they must be).

Usage: python bench/bench_web.py [--facts 10000] [--big-facts 50000] [--runs 5] [--work /tmp/am-bench]
                                 [--branches 20 [--before REV] [--only-numbers]]
                                 [--team [--commits 10000] [--before REV]]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_slice import ensure_vault

ROOT = Path(__file__).resolve().parent.parent
PAGE = ["/", "/static/style.css", "/static/graph.js", "/static/app.js", "/api/worlds", "/api/graph"]


def _env(home: Path, root: Path = ROOT) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(root), "AM_HOME": str(home)}
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


def _start(vault: Path, home: Path, root: Path = ROOT) -> tuple[subprocess.Popen[str], int, float]:
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "am.cli.main", "--vault", str(vault), "serve", "--port", "0"],
                            env=_env(home, root), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            cwd=root)  # python -m puts the working folder first on sys.path: the revision's own
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


def _timed(port: int, path: str) -> float:
    began = time.perf_counter()
    _get(port, path)
    return time.perf_counter() - began


def ensure_branches(work: Path, vault: Path, home: Path, branches: int) -> None:
    """Register a code clone of ``branches`` branches as the corpus's repo (project-alpha), once."""
    code = work / f"code-branches-{branches}"
    if not (code / ".git").is_dir():
        subprocess.run(["git", "init", "-q", "-b", "main", str(code)], check=True)
        for i in range(1, 31):
            (code / f"f{i}.txt").write_text(f"{i}\n")
            subprocess.run(["git", "-C", str(code), "add", "."], check=True)
            subprocess.run(["git", "-C", str(code), "commit", "-qm", f"c{i}"], check=True)
        for b in range(1, branches):
            subprocess.run(["git", "-C", str(code), "branch", f"feat-{b}", f"HEAD~{b % 10}"], check=True)
    subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(vault), "repo", "add", "--replace",
                    "project-alpha", str(code)], env=_env(home), check=True, capture_output=True)


def numbers_and_waits(vault: Path, home: Path, root: Path, runs: int) -> dict[str, float]:
    """Return median seconds: /api/worlds alone, /api/numbers, and /api/worlds while a slow request runs."""
    out: dict[str, list[float]] = {"worlds": [], "numbers": [], "during-numbers": [], "during-export": []}
    for _ in range(runs):
        proc, port, _started = _start(vault, home, root)
        try:
            _get(port, "/api/graph")  # the warm-up the page does
            out["worlds"].append(statistics.median(_timed(port, "/api/worlds") for _ in range(5)))
            out["numbers"].append(_timed(port, "/api/numbers"))
            for slow, key in (("/api/numbers", "during-numbers"), ("/export/graph.html", "during-export")):
                other = threading.Thread(target=_get, args=(port, slow))
                other.start()
                time.sleep(0.3)  # the slow request is in the server
                out[key].append(_timed(port, "/api/worlds"))
                other.join()
        finally:
            _stop(proc)
    return {k: statistics.median(v) for k, v in out.items()}


def revisions(args: argparse.Namespace) -> dict[str, Path]:
    """The code to time: this checkout, and with ``--before REV`` that revision in a worktree beside it."""
    if not args.before:
        return {"after": ROOT}
    before = args.work / "am-before"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)],
                   check=False, capture_output=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(before), args.before],
                   check=True)
    return {"before": before, "after": ROOT}


def scenario_numbers(args: argparse.Namespace, home: Path) -> None:
    vault = ensure_vault(args.work, args.facts)
    ensure_branches(args.work, vault, home, args.branches)
    roots = revisions(args)
    found = {name: numbers_and_waits(vault, home, root, max(1, args.runs // 2)) for name, root in roots.items()}
    print(f"3. Numbers at {args.facts:,} facts, a clone of {args.branches} branches:")
    for name, f in found.items():
        print(f"   {name}: /api/worlds alone {f['worlds']:.3f} s; /api/numbers {f['numbers']:.3f} s "
              f"({f['numbers'] / f['worlds']:.0f}x); /api/worlds during /api/numbers {f['during-numbers']:.3f} s "
              f"({f['during-numbers'] / f['worlds']:.1f}x), during /export/graph.html {f['during-export']:.3f} s "
              f"({f['during-export'] / f['worlds']:.1f}x)")
    if "before" in found:
        b, a = found["before"], found["after"]
        print(f"   after/before: /api/numbers {a['numbers'] / b['numbers']:.3f}x; /api/worlds during /api/numbers "
              f"{a['during-numbers'] / b['during-numbers']:.3f}x, during /export/graph.html "
              f"{a['during-export'] / b['during-export']:.3f}x")


# In the order a person visits them: the page shows the graph of the world picked, then the other tabs, then
# the export of that graph.
TEAM_PAGES = ["/api/graph?repo=project-alpha&branch=main", "/api/review?repo=project-alpha&branch=main",
              "/api/review", "/api/numbers?repo=project-alpha&branch=main",
              "/export/graph.html?repo=project-alpha&branch=main"]


def ensure_team_vault(work: Path, home: Path, facts: int, commits: int, branches: int) -> Path:
    """Create (once) the team vault of scenario 4 and register its code clone; return the vault."""
    from am.git import Change, GitStore
    from am.records.codec import render_record
    from am.records.ids import record_path
    from am.records.model import Fact, Relation
    from am.vault import Vault
    from bench.bench_audit import grow_history
    from bench.corpus import write_vault

    dest = work / f"team-{facts}-{commits}"
    code = work / f"code-branches-{branches}"
    if not (dest / ".am" / "vault.yml").is_file():
        began = time.perf_counter()
        write_vault(dest, facts)
        ensure_branches(work, dest, home, branches)  # the code clone, for the watched commits
        tips = subprocess.run(["git", "-C", str(code), "rev-list", "--reverse", "main"], check=True,
                              capture_output=True, text=True).stdout.split()
        fact_ids = sorted(p.stem for p in (dest / "facts").rglob("*.md"))
        stamp = "2025-12-0{}T10:00:00+08:00"
        records: list[Fact | Relation] = []
        for i in range(60):  # contested pairs, joined as a merge joins them; and a few with no partner
            a, b = f"f-20251201-1000-c{i:04d}a", f"f-20251201-1000-c{i:04d}b"
            for fid, word in ((a, "on"), (b, "off")):
                records.append(Fact(id=fid, topics=("project-t00000",), body=f"Feature flag {i} is {word} in prod.\n",
                                    status="contested", created=stamp.format(1), repo="project-alpha"))
            if i % 10:
                records.append(Relation(id=f"{a}--conflicts-with--{b}", rel="conflicts-with", from_=a, to=b,
                                        body=f"[[{a}]] conflicts-with [[{b}]]: changed differently on two branches.\n",
                                        created=stamp.format(1)))
        for i in range(150):  # pending review: by hand, an import
            records.append(Fact(id=f"f-20251202-1000-p{i:04d}", topics=("tool-t00001",), status="pending-review",
                                body=f"The cache TTL might be {i} minutes.\n", created=stamp.format(2),
                                provenance="import:wiki"))
        for i in range(300):  # watch f<k>.txt at commit c<j> of main; f<k> changed after j when k > j: stale
            j, k = 1 + i % 20, 2 + i % 29
            records.append(Fact(id=f"f-20251203-1000-w{i:04d}", topics=("concept-t00004",), repo="project-alpha",
                                version="main", commit=tips[j - 1], paths=(f"f{k}.txt",), created=stamp.format(3),
                                body=f"f{k}.txt holds the number {k}, watched since c{j}.\n"))
        for i in range(4000):  # relations between facts (a year of "references")
            a, b = fact_ids[(i * 7) % len(fact_ids)], fact_ids[(i * 13 + 5) % len(fact_ids)]
            if a != b:
                records.append(Relation(id=f"{a}--references--{b}", rel="references", from_=a, to=b,
                                        body=f"[[{a}]] references [[{b}]].\n", created=stamp.format(4)))
        vault = Vault.open(dest)
        store: GitStore = vault.store
        changes = {record_path(r.type, r.id, r.created): render_record(r).encode("utf-8") for r in records}
        with store.write_lock(op="bench"):
            store.commit([Change(p, d) for p, d in changes.items()],
                         message="bench: team records\n\nAm-Op: import.batch\nAm-Actor: bench\n",
                         author=("bench", "bench@localhost"))
        vault.close()
        grow_history(dest, commits, 0.3)
        print(f"  built {dest} in {time.perf_counter() - began:.1f} s")
    ensure_branches(work, dest, home, branches)
    return dest


def team_pages(vault: Path, home: Path, root: Path) -> tuple[dict[str, float], dict[str, bytes]]:
    """Return each slow page's first answer in a fresh server: seconds, and the body (run ids masked)."""
    proc, port, _started = _start(vault, home, root)
    times, bodies = {}, {}
    try:
        _get(port, "/api/worlds")
        for path in TEAM_PAGES:
            began = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
            response = conn.getresponse()
            body = response.read()
            conn.close()
            times[path] = time.perf_counter() - began
            assert response.status == 200, (path, response.status, body[:300])
            if path.startswith("/api/numbers"):  # the cache file's size moves with its write-ahead log
                data = json.loads(body)
                data["cache"].pop("bytes", None)
                body = json.dumps(data, sort_keys=True).encode()
            bodies[path] = body
    finally:
        _stop(proc)
    return times, bodies


def scenario_team(args: argparse.Namespace, home: Path) -> None:
    from bench.corpus import print_load

    vault = ensure_team_vault(args.work, home, args.facts, args.commits, args.branches or 20)
    subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(vault), "index", "status"], env=_env(home),
                   check=True, stdout=subprocess.DEVNULL)  # a warm cache, as a vault in use has
    roots = revisions(args)
    count = subprocess.run(["git", "-C", str(vault), "rev-list", "--count", "HEAD"], check=True, capture_output=True,
                           text=True).stdout.strip()
    print(f"4. a team vault of {args.facts:,} facts, {count} commits, {args.branches or 20} branches "
          f"(first answers in a fresh server, median of {args.runs}):")
    print_load()
    found: dict[str, dict[str, list[float]]] = {name: {p: [] for p in TEAM_PAGES} for name in roots}
    bodies: dict[str, dict[str, bytes]] = {}
    for _ in range(args.runs):
        for name, root in roots.items():  # interleaved: the machine's load falls on both alike
            times, got = team_pages(vault, home, root)
            for path, took in times.items():
                found[name][path].append(took)
            if bodies.setdefault(name, got) != got:
                raise SystemExit(f"{name}: an answer changed between runs")
    for path in TEAM_PAGES:
        line = "   " + path.ljust(52) + "  ".join(f"{name} {statistics.median(found[name][path]):7.3f} s"
                                                for name in roots)
        if "before" in roots:
            ratio = statistics.median(found["after"][path]) / statistics.median(found["before"][path])
            same = "identical" if bodies["before"][path] == bodies["after"][path] else "DIFFERENT"
            line += f"  after/before {ratio:.3f}x, answers {same}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--big-facts", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/am-bench"))
    parser.add_argument("--branches", type=int, default=0, help="scenario 3: a clone of this many branches")
    parser.add_argument("--before", help="scenario 3: also measure this revision of am (a git worktree)")
    parser.add_argument("--only-numbers", action="store_true", help="run scenario 3 alone")
    parser.add_argument("--team", action="store_true", help="run scenario 4 alone (a team vault's slow pages)")
    parser.add_argument("--commits", type=int, default=10_000, help="scenario 4: the team vault's history")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    home = args.work / "home-web"
    home.mkdir(exist_ok=True)
    if args.only_numbers:
        scenario_numbers(args, home)
        return
    if args.team:
        scenario_team(args, home)
        return

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
    if args.branches:
        scenario_numbers(args, home)


if __name__ == "__main__":
    main()
