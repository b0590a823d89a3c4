"""Benchmark derived staleness (DESIGN §5.6) and a slice run inside a clone, as ratios measured in one run.

1. In-process warm ``slice_vault`` + render of a vault of N facts of which W watch code paths, in a code
   repository of C commits touching P files, against the same vault without ``paths`` (same facts, same
   commits). Target (issue 15): <= 1.3x.
2. The whole ``am slice`` process run inside the registered clone with no flags (the vault, repo and world
   found from the folder), against ``python -c "import pygit2"``. Target: <= 1.3x.
3. For information: the cold staleness computation (first slice of a new tip, nothing cached) and the
   code-repo hook's work for one new commit.

Usage: python bench/bench_worlds.py [--facts 10000] [--watched 2000] [--commits 10000] [--paths 2000]
                                    [--work /tmp/am-bench-worlds] [--runs 15]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_index import median_time  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def build_code(dest: Path, commits: int, paths: int, seed: int = 7) -> list[str]:
    """Create a code repository of ``commits`` commits on main, each changing one or two of ``paths`` files."""
    if not (dest / ".git").is_dir():
        subprocess.run(["git", "init", "-q", "-b", "main", str(dest)], check=True)
        rng = random.Random(seed)
        parts = []
        for i in range(1, commits + 1):
            msg = f"c{i}"
            parts.append(f"commit refs/heads/main\nmark :{i}\ncommitter B <b@e> {1700000000 + i * 60} +0000\n"
                         f"data {len(msg)}\n{msg}\n")
            if i > 1:
                parts.append(f"from :{i - 1}\n")
            for k in {rng.randrange(paths) for _ in range(rng.choice((1, 2)))}:
                body = f"v{i}\n"
                parts.append(f"M 644 inline src/m{k // 100:02d}/f{k}.py\ndata {len(body)}\n{body}")
            parts.append("\n")
        subprocess.run(["git", "fast-import", "--quiet"], cwd=dest, input="".join(parts).encode(), check=True)
        subprocess.run(["git", "checkout", "-q", "main"], cwd=dest, check=True)
    out = subprocess.run(["git", "rev-list", "main"], cwd=dest, capture_output=True, text=True, check=True)
    return out.stdout.split()


def build_vault(dest: Path, facts: int, watched: int, history: list[str], paths: int, *, with_paths: bool) -> Path:
    """Write a synthetic vault whose first ``watched`` repo facts name a commit of ``history`` (and paths)."""
    from am.git import Change
    from am.records.codec import render_record
    from am.records.ids import record_path
    from am.records.model import Fact
    from am.vault import Vault
    from bench.corpus import make_records

    if (dest / ".am" / "vault.yml").is_file():
        return dest
    rng = random.Random(3)
    records = make_records(facts, seed=1)
    # Spread over the whole ranking (not the oldest first), so that a pack shows watching facts too.
    eligible = [r.id for r in records if isinstance(r, Fact) and r.repo == "project-alpha" and r.status == "active"]
    chosen_ids = set(rng.sample(eligible, min(watched, len(eligible))))
    out = []
    for r in records:
        if isinstance(r, Fact) and r.id in chosen_ids:
            commit = rng.choice(history[: len(history) // 2 or 1])  # the newer half: most stay fresh
            chosen = (f"src/m{(k := rng.randrange(paths)) // 100:02d}/f{k}.py",)
            r = dataclasses.replace(r, version=None, commit=commit, paths=chosen if with_paths else ())
        out.append(r)
    vault = Vault.init(dest, name=dest.name, actor="bench", register=False)
    store = vault.store
    for first in range(0, len(out), 20000):
        chunk = out[first:first + 20000]
        changes = [Change(record_path(r.type, r.id, r.created), render_record(r).encode("utf-8")) for r in chunk]
        with store.write_lock(op="bench"):
            store.commit(changes, message=f"bench: {len(chunk)} records\n\nAm-Op: import.batch\nAm-Actor: bench\n",
                         author=("bench", "bench@localhost"))
    vault.close()
    return dest


def main() -> None:
    """Build the corpus (once) and print the figures and the two ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=10000)
    parser.add_argument("--watched", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=10000)
    parser.add_argument("--paths", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--work", type=Path, default=Path("/tmp/am-bench-worlds"))
    args = parser.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    home = work / "am-home"
    os.environ["AM_HOME"] = str(home)
    began = time.perf_counter()
    code = work / f"code-{args.commits}"
    history = build_code(code, args.commits, args.paths)
    plain = build_vault(work / f"plain-{args.facts}", args.facts, args.watched, history, args.paths,
                        with_paths=False)
    watched = build_vault(work / f"watched-{args.facts}", args.facts, args.watched, history, args.paths,
                          with_paths=True)
    print(f"corpus: {args.facts} facts ({args.watched} watching paths), code repository of {len(history)} commits "
          f"over {args.paths} files; built in {time.perf_counter() - began:.1f} s")

    from am.packs.slice import SliceRequest, render_markdown, slice_vault
    from am.registry import Registry
    from am.vault import Vault

    Registry.load().add_repo("project-alpha", code, vault=watched.name, replace=True)
    Registry.load().add_vault(watched.name, watched, replace=True)
    request = SliceRequest(repo="project-alpha", branch="main")
    figures: dict[str, float] = {}
    with Vault.open(watched) as wv, Vault.open(plain) as pv:
        shutil.rmtree(watched / ".am" / "cache" / "ancestry", ignore_errors=True)
        t0 = time.perf_counter()
        pack = slice_vault(wv, request)
        figures["cold: first slice with staleness (graph of every commit read and kept)"] = time.perf_counter() - t0
        shown = pack.all_shown()
        print(f"  the pack shows {len(shown)} facts, {sum(1 for f in shown if f.paths)} of them watching paths, "
              f"{len(pack.stale)} of those stale here")
        slice_vault(pv, request)
        # Interleaved, so that load from other processes falls on both alike (a shared machine).
        plain_times, watched_times = [], []
        for _ in range(args.runs):
            plain_times.append(median_time(lambda: render_markdown(slice_vault(pv, request)), 1))
            watched_times.append(median_time(lambda: render_markdown(slice_vault(wv, request)), 1))
        figures["baseline: warm in-process slice + render, no paths"] = statistics.median(plain_times)
        figures["warm in-process slice + render, with paths (staleness derived)"] = statistics.median(watched_times)
        # A new tip: the staleness of a fresh world, with the commit graph already kept on disk.
        tip = subprocess.run(["git", "rev-parse", "main~1"], cwd=code, capture_output=True, text=True,
                             check=True).stdout.strip()
        t0 = time.perf_counter()
        slice_vault(wv, SliceRequest(repo="project-alpha", commit=tip))
        figures["a new world's staleness (graph on disk, as after the hook)"] = time.perf_counter() - t0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    python = sys.executable
    here = [python, "-m", "am.cli.main", "slice"]
    subprocess.run(here, cwd=code, env=env, capture_output=True, check=True)
    base, whole = [], []
    for _ in range(args.runs):
        base.append(median_time(lambda: subprocess.run([python, "-c", "import pygit2"], env=env, check=True), 1))
        whole.append(median_time(lambda: subprocess.run(here, cwd=code, env=env, capture_output=True, check=True), 1))
    figures['baseline: python -c "import pygit2"'] = statistics.median(base)
    figures["am slice inside the clone, no flags (whole process)"] = statistics.median(whole)
    for name, seconds in figures.items():
        print(f"  {name:<72} {seconds * 1000:9.1f} ms")
    ratio1 = (figures["warm in-process slice + render, with paths (staleness derived)"]
              / figures["baseline: warm in-process slice + render, no paths"])
    ratio2 = (figures["am slice inside the clone, no flags (whole process)"]
              / figures['baseline: python -c "import pygit2"'])
    print(f"ratio: slice with derived staleness / without paths = {ratio1:.2f}x (target <= 1.3x)")
    print(f"ratio: am slice in a clone / import pygit2 = {ratio2:.2f}x (target <= 1.3x)")


if __name__ == "__main__":
    main()
