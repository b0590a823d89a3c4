"""Benchmark `am slice`: in-process warm slices, the whole process, and ancestry on a big code repo.

Scenarios (figures are medians; ratios are against a baseline measured in the same run):

1. In-process, warm: ``slice_vault`` on a synthetic vault of N facts (bench/corpus.py),
   split into reading the records (cache or file scan) and building + rendering the pack.
2. The whole `am slice` process at N facts, against ``python -c "import pygit2"``.
3. Ancestry: a code repository of C commits (made with git fast-import); the cost of
   walking a world's history once, and of judging N facts observed at random commits.

Usage: python bench/bench_slice.py [--facts 10000 100000] [--commits 10000] [--work /tmp/am-bench]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_index import median_time as _median  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def ensure_vault(work: Path, facts: int) -> Path:
    """Create (once) a synthetic vault of ``facts`` facts under ``work``."""
    from bench.corpus import write_vault

    dest = work / f"vault-{facts}"
    if not (dest / ".am" / "vault.yml").is_file():
        began = time.perf_counter()
        write_vault(dest, facts)
        print(f"  built {dest} in {time.perf_counter() - began:.1f} s")
    return dest


def ensure_code_repo(work: Path, commits: int) -> Path:
    """Create (once) a code repository with ``commits`` commits on main and a side branch."""
    dest = work / f"code-{commits}"
    if (dest / ".git").is_dir():
        return dest
    subprocess.run(["git", "init", "-q", "-b", "main", str(dest)], check=True)
    parts = []
    side = commits // 2
    for i in range(1, commits + 1):
        msg = f"c{i}"
        parts.append(f"commit refs/heads/main\nmark :{i}\ncommitter B <b@e> {1700000000 + i * 60} +0000\n"
                     f"data {len(msg)}\n{msg}\n")
        if i > 1:
            parts.append(f"from :{i - 1}\n")
        parts.append(f"M 644 inline f.txt\ndata {len(str(i))}\n{i}\n\n")
    # A side branch forked halfway, 200 commits long, never merged.
    for j in range(1, 201):
        mark = commits + j
        msg = f"side{j}"
        parts.append(f"commit refs/heads/side\nmark :{mark}\ncommitter B <b@e> {1800000000 + j * 60} +0000\n"
                     f"data {len(msg)}\n{msg}\nfrom :{side if j == 1 else mark - 1}\n"
                     f"M 644 inline s.txt\ndata {len(str(j))}\n{j}\n\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=dest, input="".join(parts).encode(), check=True)
    return dest


def bench_in_process(vault_path: Path, runs: int) -> dict[str, float]:
    """Time warm in-process slices of a vault (records source and pack separately)."""
    from am.worlds.ancestry import setup_world
    from am.packs.slice import SliceRequest, build_pack, render_markdown, slice_vault
    from am.vault import Vault

    vault = Vault.open(vault_path)
    request = SliceRequest(repo="project-alpha", branch="main")
    slice_vault(vault, request)  # warm: the cache is built and fresh
    out: dict[str, float] = {}
    out["whole slice_vault + render"] = _median(lambda: render_markdown(slice_vault(vault, request)), runs)
    cache = vault.cache() if hasattr(vault, "cache") else None
    if cache is not None:
        from am.packs.slice import _from_cache

        def general() -> str:
            # The path every slice took before am/packs/cache.py: a view of every fact, resolve(), rank.
            setup = setup_world("project-alpha", "main", cache_dir=vault.root / ".am" / "cache" / "ancestry")
            records, load, dropped = _from_cache(cache, setup.world)
            return render_markdown(build_pack(records, request, setup, vault_name=vault.name, vault_commit=cache.head,
                                              load=load, dropped=dropped))

        assert general() == render_markdown(slice_vault(vault, request)), "the two paths disagree"
        out["baseline: the general path (every fact view resolved in Python), same pack"] = _median(general, runs)

        out["read topics, relations and every fact view from the cache"] = _median(lambda: _from_cache(cache), runs)
        world = setup_world("project-alpha", "main").world
        out["read topics, relations and the fact views that can hold (filtered, counted, ranked in SQL)"] = _median(
            lambda: _from_cache(cache, world), runs)
        out["read every record in full from the cache (for comparison)"] = _median(
            lambda: cache.record_values(), runs)
        records = [r for _, r in cache.records()]
    else:
        records = [r for _, r in vault.iter_records()]
    out["read records by scanning the files (no cache)"] = _median(lambda: list(vault.iter_records()), 1)
    setup = setup_world("project-alpha", "main")
    out["resolve + rank + budget + render (full records in memory)"] = _median(
        lambda: render_markdown(build_pack(records, request, setup, vault_name="bench", vault_commit=None)), runs)
    topic = next(r.id for r in records if r.type == "topic")
    topic_request = SliceRequest(repo="project-alpha", branch="main", topic=topic, depth=2)
    out["whole slice_vault --topic X --depth 2 (the cache's path)"] = _median(
        lambda: render_markdown(slice_vault(vault, topic_request)), runs)
    if cache is not None:
        from am.packs.slice import _CachedLinks

        def general_topic() -> str:
            # The path --topic took before: every fact view resolved, networkx on the whole world's graph.
            setup = setup_world("project-alpha", "main", cache_dir=vault.root / ".am" / "cache" / "ancestry")
            records, load, dropped = _from_cache(cache, setup.world)
            return render_markdown(build_pack(records, topic_request, setup, vault_name=vault.name,
                                              vault_commit=cache.head, load=load, dropped=dropped,
                                              links=_CachedLinks(cache)))

        assert general_topic() == render_markdown(slice_vault(vault, topic_request)), "the --topic paths disagree"
        out["baseline: --topic X --depth 2 by the general path (resolve, networkx), same pack"] = _median(
            general_topic, runs)
    query_request = SliceRequest(repo="project-alpha", branch="main", query="session cache TTL")
    out["whole slice_vault --query (full-text level)"] = _median(
        lambda: render_markdown(slice_vault(vault, query_request)), runs)
    vault.close()
    return out


def bench_process(vault_path: Path, runs: int, registered: Path | None = None) -> dict[str, float]:
    """Time the whole `am slice` process against importing pygit2 alone."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Measure as installed: compiled modules are cached (PERF.md: this machine sets DONTWRITEBYTECODE).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    python = sys.executable
    slice_cmd = [python, "-m", "am.cli.main", "--vault", str(vault_path), "slice", "--repo", "project-alpha",
                 "--branch", "main"]
    search_cmd = [python, "-m", "am.cli.main", "--vault", str(vault_path), "search", "session cache"]
    subprocess.run(slice_cmd, env=env, capture_output=True, check=True)
    out = {
        'python -c "pass"': _median(lambda: subprocess.run([python, "-c", "pass"], env=env, check=True), runs),
        'python -c "import pygit2"': _median(
            lambda: subprocess.run([python, "-c", "import pygit2"], env=env, check=True), runs),
        "am slice (whole process)": _median(
            lambda: subprocess.run(slice_cmd, env=env, capture_output=True, check=True), runs),
        "am search (whole process)": _median(
            lambda: subprocess.run(search_cmd, env=env, capture_output=True, check=True), runs),
    }
    if registered is not None:
        from am.registry import Registry

        home = vault_path.parent / "am-home-registered"
        Registry.load(home).add_repo("project-alpha", registered)
        env2 = {**env, "AM_HOME": str(home)}
        subprocess.run(slice_cmd, env=env2, capture_output=True, check=True)
        out["am slice, project-alpha's clone registered (history from the disk cache)"] = _median(
            lambda: subprocess.run(slice_cmd, env=env2, capture_output=True, check=True), runs)
    probe = ("import sys\nfrom am.cli.main import main\nsys.argv=['am','--vault',%r,'slice','--repo','project-alpha',"
             "'--branch','main']\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(','.join(m for m in ('pygit2','networkx','jsonschema','markdown_it') if m in sys.modules), file=sys.stderr)"
             % str(vault_path))
    done = subprocess.run([python, "-c", probe], env=env, capture_output=True, text=True)
    print(f"  heavy modules imported by a plain slice: {done.stderr.strip().splitlines()[-1:] or ['none']}")
    return out


def bench_ancestry(code: Path, facts: int, runs: int) -> dict[str, float]:
    """Time the world's history walk and judging facts observed at random commits."""
    from am.worlds import ancestry
    from am.git import GitStore
    from am.records.model import Fact
    from am.registry import Registry
    from am.worlds.rules import resolve

    Registry.load().add_repo("bench-code", code)
    store = GitStore.open_code(code)
    all_commits = list(store.ancestors(store.find_commit("main") or "")) + list(
        store.ancestors(store.find_commit("side") or ""))
    rng = random.Random(1)
    records = [Fact(id=f"f-{i:06d}", topics=("project-bench",), body="x\n", repo="bench-code",
                    commit=rng.choice(all_commits)[: rng.choice((7, 12, 40))]) for i in range(facts)]

    def cold_setup() -> None:
        ancestry._HISTORY_CACHE.clear()
        ancestry.setup_world("bench-code", "main")

    cache_dir = Path(tempfile.mkdtemp(prefix="am-hist-"))

    def file_cached() -> None:
        ancestry._HISTORY_CACHE.clear()
        ancestry.setup_world("bench-code", "main", cache_dir=cache_dir)

    out = {"walk the world's history once (no cache)": _median(cold_setup, runs)}
    file_cached()
    out["read the history from the disk cache (new process)"] = _median(file_cached, runs)
    parent = store.find_commit("main~10") or ""
    ancestry._HISTORY_CACHE.clear()
    ancestry.CommitGraph(store, parent, cache_dir=cache_dir)
    tip = store.find_commit("main") or ""

    def extend() -> None:
        ancestry._HISTORY_CACHE.clear()
        (ancestry.HistoryFiles(cache_dir, store)._path(tip)).unlink(missing_ok=True)
        ancestry.CommitGraph(store, tip, cache_dir=cache_dir)

    out["extend a cached history by 10 new commits"] = _median(extend, runs)
    setup = ancestry.setup_world("bench-code", "main")
    out[f"judge {facts} facts at random commits (warm history)"] = _median(
        lambda: resolve(records, setup.world, ancestry.CommitGraph(store, setup.world.commit or "")), runs)
    held = len(resolve(records, setup.world, setup.oracle).facts)
    print(f"  {held} of {facts} facts hold on main ({setup.history_size} commits in its history)")
    return out


def main() -> None:
    """Run the benchmarks and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--facts", type=int, nargs="+", default=[10000])
    parser.add_argument("--commits", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--work", type=Path, default=Path("/tmp/am-bench-slice"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("AM_HOME", str(args.work / "am-home"))
    code = ensure_code_repo(args.work, args.commits)
    for n in args.facts:
        print(f"== {n} facts")
        vault = ensure_vault(args.work, n)
        for name, value in bench_in_process(vault, args.runs).items():
            print(f"  in-process, warm: {name}: {_ms(value)}")
        figures = bench_process(vault, args.runs, registered=code)
        base = figures['python -c "import pygit2"']
        for name, value in figures.items():
            print(f"  process: {name}: {_ms(value)} ({value / base:.2f}x import pygit2)")
    print(f"== code repository of {args.commits} commits")
    for name, value in bench_ancestry(code, 10000, args.runs).items():
        print(f"  ancestry: {name}: {_ms(value)}")


if __name__ == "__main__":
    main()
