"""Compare two revisions of am on the same vault in one run: warm slice, search, fact add and an import.

Both revisions are checked out (``git worktree``) and timed in alternating child
processes on copies of one synthetic vault, so a busy machine slows both alike;
the figures are medians and the last column is the ratio after / before.
The import is ``am import mcp-memory`` of a file of ``--import-facts`` observations
(bench/bench_io.py's shape) into a fresh vault, once a round, end to end.

Usage: python bench/compare_revisions.py BEFORE AFTER [--facts 10000] [--rounds 5] [--work DIR]
Example: python bench/compare_revisions.py HEAD~2 HEAD --facts 10000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs inside a child process with one revision's am first on sys.path; it knows
# the module names of the layout before (am.slice, am.search) and after (am.packs, am.cache).
CHILD = r'''
import json, sys, time, statistics
import am
import os; assert am.__file__.startswith(os.environ["PYTHONPATH"].split(os.pathsep)[0]), am.__file__
from am.vault import Vault
try:
    from am.packs.slice import SliceRequest, slice_vault, render_markdown
    from am.cache.search import search
except ImportError:
    from am.slice import SliceRequest, slice_vault, render_markdown
    from am.search import search
vault_path, adds, source = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = {}
with Vault.open(vault_path, actor="bench") as vault:
    index = vault.cache()
    request = SliceRequest(repo="project-alpha", branch="main")
    render_markdown(slice_vault(vault, request))  # warm
    times = []
    for _ in range(5):
        t = time.perf_counter(); render_markdown(slice_vault(vault, request)); times.append(time.perf_counter() - t)
    out["slice"] = statistics.median(times)
    times = []
    for word in ("cache", "session", "限流", "billing job", "deploy"):
        t = time.perf_counter(); search(index, word, limit=20); times.append(time.perf_counter() - t)
    out["search"] = statistics.median(times)
    times = []
    for i in range(adds):
        t = time.perf_counter()
        vault.add_fact(f"Benchmark fact {i} about the session cache.", topics=["concept-t00003"])
        times.append(time.perf_counter() - t)
    out["fact add"] = statistics.median(times)
try:
    from am.io import import_source
except ImportError:  # a revision from before am import
    import_source = None
if import_source is not None:
    import subprocess
    from pathlib import Path
    fresh = Path(vault_path + "-import")
    subprocess.run(["git", "init", "-q", "-b", "main", str(fresh)], check=True)
    with Vault.init(fresh, name="bench-import", actor="bench", register=False) as target:
        t = time.perf_counter(); import_source(target, "mcp-memory", Path(source))
        out["import"] = time.perf_counter() - t
print(json.dumps(out))
'''


def _checkout(rev: str, where: Path) -> Path:
    if where.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)], capture_output=True)
        shutil.rmtree(where, ignore_errors=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev], check=True,
                   capture_output=True)
    return where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--facts", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--adds", type=int, default=20)
    parser.add_argument("--import-facts", type=int, default=1000)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "am-compare")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    base = args.work / f"vault-{args.facts}"
    if not base.exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "corpus.py"), str(base), "--facts", str(args.facts)],
                       check=True)
    source = args.work / f"memory-{args.import_facts}.jsonl"
    if not source.exists():
        sys.path.insert(0, str(ROOT / "bench"))
        from bench_io import write_source

        write_source(source, args.import_facts)
    trees = {name: _checkout(rev, args.work / f"src-{name}") for name, rev in
             (("before", args.before), ("after", args.after))}
    figures: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    for round_ in range(args.rounds):
        for name in (("before", "after") if round_ % 2 == 0 else ("after", "before")):
            vault = args.work / f"run-{name}"
            shutil.rmtree(vault, ignore_errors=True)
            shutil.rmtree(f"{vault}-import", ignore_errors=True)
            subprocess.run(["cp", "-a", str(base), str(vault)], check=True)
            # -S: no site hooks, so an editable install of am cannot shadow the checkout under test;
            # the libraries come from this interpreter's site-packages, after the checkout.
            path = os.pathsep.join([str(trees[name]), *site.getsitepackages()])
            env = {"PYTHONPATH": path, "AM_HOME": str(args.work / "home"), "PATH": "/usr/bin:/bin"}
            done = subprocess.run([sys.executable, "-S", "-c", CHILD, str(vault), str(args.adds), str(source)], env=env, cwd=args.work,
                                  capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"{name} ({trees[name]}) failed:\n{done.stderr}")
            for key, value in json.loads(done.stdout.strip().splitlines()[-1]).items():
                figures[name].setdefault(key, []).append(value)
    print(f"{'':10} {'before (ms)':>12} {'after (ms)':>12} {'after/before':>13}   ({args.facts} facts, "
          f"{args.rounds} rounds, medians)")
    for key in (k for k in figures["before"] if k in figures["after"]):
        b, a = statistics.median(figures["before"][key]), statistics.median(figures["after"][key])
        print(f"{key:10} {b * 1000:12.2f} {a * 1000:12.2f} {a / b:13.2f}")


if __name__ == "__main__":
    main()
