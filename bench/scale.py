"""The figures of issue 39 at several vault sizes, each against its floor measured in the same run, and how each grows.

For each size (default 1k, 10k, 100k; 1M only when asked, ``--sizes 1000000``)
a synthetic vault is built once (bench/corpus.py: topics, facts in English and
Chinese, supersession, relations; committed through am's Git store in bulk the
way ``am import`` commits a batch) and kept under ``--work`` keyed by its size,
so a second run starts at once. Every run works on a copy of it (``cp -a``).

Figures (medians; processes run with bytecode compiled once, as installed):

- ``slice process``: ``am slice --repo project-alpha --branch main`` ÷ the floor,
  ``python -c "import pygit2"``, in interleaved rounds.
- ``slice in-process``: a warm ``slice_vault`` + render in one process, in ms.
- ``fact add process``: ``am fact add`` ÷ the floor (the vault grows by a fact a round).
- ``8 writers``: commits/s of 8 writer threads in one process (group commit).
- ``search process``: ``am search 限流`` and ``am search "session cache"`` ÷ the floor.
- ``rebuild``: a whole cache rebuild ÷ the minimal read loop (read, decode and
  split every record file's frontmatter into key/value pairs), each in a fresh process.
- ``check warm``: ``am check`` with its memo warm ÷ ``git status``.

Then, between each pair of sizes, the growth exponent of each figure's work
(log(t2/t1) / log(n2/n1); for the process figures the time above the floor, for
8 writers the time per commit): 0 is flat, 1 is linear in the vault. Each figure
is marked ``met`` or ``MISSED`` against issue 39's target, and a process figure
within 1.15× of its floor is called at the floor.

``--code DIR`` times the am in DIR (a ``git worktree`` of another revision, say)
instead of this checkout, so a before/after is two runs' ratios.

Usage: python bench/scale.py [--sizes 10000,100000] [--rounds 7] [--work DIR] [--only slice,add,...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ("slice", "inproc", "add", "writers", "search", "rebuild", "check")
# Issue 39's targets: (figure name, kind, target at 10k, target at 100k); kind "ratio" is ≤, "rate" is ≥.
TARGETS = {
    "slice process ÷ floor": (1.15, 1.3),
    "slice in-process (ms)": (15.0, 60.0),
    "fact add process ÷ floor": (1.5, 1.8),
    "8 writers (commits/s)": (350.0, None),
    "search 限流 ÷ floor": (1.15, 1.15),
    "search 'session cache' ÷ floor": (1.15, 1.15),
    "rebuild ÷ minimal loop": (6.0, 6.0),
    "check warm ÷ git status": (5.0, 5.0),
}
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}

MINIMAL_LOOP = r'''
import os, sys, time, json
root = sys.argv[1]
t, c = time.perf_counter(), time.process_time(); n = 0
for top in ("topics", "facts", "relations"):
    for dirpath, _dirs, files in os.walk(os.path.join(root, top)):
        for name in files:
            if not name.endswith(".md"):
                continue
            with open(os.path.join(dirpath, name), "rb") as handle:
                text = handle.read().decode("utf-8")
            head, _, body = text[4:].partition("\n---\n")
            fields = dict(line.partition(": ")[::2] for line in head.splitlines())
            n += 1
print(json.dumps({"seconds": time.perf_counter() - t, "cpu": time.process_time() - c, "files": n}))
'''

REBUILD = r'''
import shutil, sys, time, json
from pathlib import Path
from am.cache.index import Index
from am.vault import Vault
shutil.rmtree(Path(sys.argv[1]) / ".am" / "cache" / "index.sqlite", ignore_errors=True)
for p in (Path(sys.argv[1]) / ".am" / "cache").glob("index.sqlite*"):
    p.unlink()
t, c = time.perf_counter(), time.process_time()
with Vault.open(sys.argv[1]) as v:
    Index.open(v).close()
print(json.dumps({"seconds": time.perf_counter() - t, "cpu": time.process_time() - c}))
'''

SWEEP = r'''
import json, sys
from am.vault import Vault
with Vault.open(sys.argv[1]) as v:
    v.cache().refresh(full=True)
print("{}")
'''

INPROC = r'''
import sys, time, json, statistics
from am.vault import Vault
from am.packs.slice import SliceRequest, slice_vault, render_markdown
runs = int(sys.argv[2])
with Vault.open(sys.argv[1]) as vault:
    request = SliceRequest(repo="project-alpha", branch="main")
    render_markdown(slice_vault(vault, request)); render_markdown(slice_vault(vault, request))
    times, cpus = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time(); render_markdown(slice_vault(vault, request))
        times.append(time.perf_counter() - t); cpus.append(time.process_time() - c)
print(json.dumps({"seconds": statistics.median(times), "cpu": statistics.median(cpus)}))
'''

WRITERS = r'''
import sys, json, threading, time, uuid
from am.vault import Vault
root, per, tag = sys.argv[1], int(sys.argv[2]), uuid.uuid4().hex[:8]  # new texts each run: no duplicate answers
vaults = [Vault.open(root, actor=f"t{n}") for n in range(8)]
for n, v in enumerate(vaults):
    v.add_fact(f"warm-up write {tag} {n}.", topics=["concept-t00003"])
gate, errors = threading.Barrier(9), []
def work(n):
    gate.wait()
    try:
        for i in range(per):
            vaults[n].add_fact(f"Run {tag} thread {n} fact {i}: the cache keeps sessions.", topics=["concept-t00003"])
    except BaseException as err:
        errors.append(err)
workers = [threading.Thread(target=work, args=(n,)) for n in range(8)]
for w in workers: w.start()
gate.wait(); t, c = time.perf_counter(), time.process_time()
for w in workers: w.join()
elapsed, cpu = time.perf_counter() - t, time.process_time() - c
for v in vaults: v.close()
if errors: raise errors[0]
print(json.dumps({"rate": 8 * per / elapsed, "cpu_ms": 1000 * cpu / (8 * per)}))
'''


def ensure_vault(work: Path, facts: int, code: Path) -> Path:
    """Build (once) the vault of this size under ``work``, with its cache, and return it."""
    base = work / f"vault-{facts}"
    if not (base / ".am" / "built").exists():
        began = time.perf_counter()
        if not (base / ".am" / "written").exists():  # the records, committed; then the cache, built once
            shutil.rmtree(base, ignore_errors=True)
            subprocess.run([sys.executable, str(ROOT / "bench" / "corpus.py"), str(base), "--facts", str(facts)],
                           check=True, env=_env(code, work))
            (base / ".am" / "written").write_text("")
        subprocess.run(_am(code, base, "slice", "--repo", "project-alpha", "--branch", "main"), check=True,
                       env=_env(code, work), capture_output=True)
        (base / ".am" / "built").write_text(f"{time.perf_counter() - began:.1f} s\n")
        print(f"built {facts} facts in {time.perf_counter() - began:.0f} s", flush=True)
    return base


def _env(code: Path, work: Path) -> dict[str, str]:
    env = {**os.environ, **GIT_ENV, "PYTHONPATH": str(code), "PYTHONPYCACHEPREFIX": str(work / "pycache"),
           "AM_HOME": str(work / "home")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode compiled once (PERF.md)
    return env


def _am(code: Path, vault: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "am.cli.main", "--vault", str(vault), *args]


def _timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float]:
    """Return the wall and CPU (user + system) seconds of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True)
    wall = time.perf_counter() - began
    if done.returncode and not (cmd[-1] == "check" and done.returncode < 10):  # am check exits 1-5 on findings
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr.decode()[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _child(code: str, env: dict[str, str], *args: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def measure(base: Path, facts: int, work: Path, code: Path, rounds: int, only: set[str]) -> dict[str, float]:
    """Return every figure (and its absolute parts) for one vault size."""
    run = work / f"run-{facts}"
    shutil.rmtree(run, ignore_errors=True)
    subprocess.run(["cp", "-a", str(base), str(run)], check=True)
    env = _env(code, work)
    # A copy has new inode numbers: without a full sweep now, every command would re-read a slot of the
    # files (the cache's rolling sweep) until all 256 slots had been seen, which no real vault pays.
    _child(SWEEP, env, str(run))
    floor_cmd = [sys.executable, "-c", "import pygit2"]
    cmds = {"floor": floor_cmd}
    if "slice" in only:
        cmds["slice"] = _am(code, run, "slice", "--repo", "project-alpha", "--branch", "main")
    if "search" in only:
        cmds["search zh"] = _am(code, run, "search", "限流")
        cmds["search en"] = _am(code, run, "search", "session cache")
    if "check" in only:
        cmds["check"] = _am(code, run, "check")
        cmds["git status"] = ["git", "-C", str(run), "status", "--porcelain"]
    if "add" in only:
        cmds["add"] = _am(code, run, "fact", "add", "Scale bench: the session cache keeps 30 minutes.",
                          "--topic", "concept-t00003")
    for cmd in cmds.values():  # warm: bytecode, the cache, check's memo
        _timed(cmd, env)
    times: dict[str, list[float]] = {k: [] for k in cmds}
    cpus: dict[str, list[float]] = {k: [] for k in cmds}
    for r in range(rounds):
        keys = list(cmds) if r % 2 == 0 else list(reversed(cmds))
        for key in keys:
            wall, cpu = _timed(cmds[key], env)
            times[key].append(wall)
            cpus[key].append(cpu)
    med = {k: statistics.median(v) for k, v in times.items()}
    medc = {k: statistics.median(v) for k, v in cpus.items()}
    out: dict[str, float] = {"floor (s)": med["floor"], "floor CPU (s)": medc["floor"]}
    fl = med["floor"]
    for key in cmds:  # CPU ratios: steadier than wall time on a busy machine
        if key not in ("floor", "git status"):
            base_cpu = medc["git status"] if key == "check" else medc["floor"]
            out[f"{key} CPU ÷ {'git status' if key == 'check' else 'floor'} CPU"] = medc[key] / base_cpu
            out[f"_{key} CPU above floor"] = max(medc[key] - (0 if key == "check" else medc["floor"]), 1e-4)
    if "slice" in only:
        out["slice process ÷ floor"] = med["slice"] / fl
        out["_slice above floor"] = max(med["slice"] - fl, 1e-4)
    if "search" in only:
        out["search 限流 ÷ floor"] = med["search zh"] / fl
        out["search 'session cache' ÷ floor"] = med["search en"] / fl
        out["_search 限流 above floor"] = max(med["search zh"] - fl, 1e-4)
        out["_search 'session cache' above floor"] = max(med["search en"] - fl, 1e-4)
    if "add" in only:
        out["fact add process ÷ floor"] = med["add"] / fl
        out["_fact add above floor"] = max(med["add"] - fl, 1e-4)
    if "check" in only:
        out["check warm ÷ git status"] = med["check"] / med["git status"]
        out["_check warm (s)"] = med["check"]
    if "inproc" in only:
        got = _child(INPROC, env, str(run), str(max(3 * rounds, 15)))
        out["slice in-process (ms)"] = got["seconds"] * 1000
        out["slice in-process CPU (ms)"] = got["cpu"] * 1000
    if "rebuild" in only:
        reb: list[float] = []
        loop: list[float] = []
        rebc: list[float] = []
        loopc: list[float] = []
        for r in range(max(1, rounds // 3 if facts < 100000 else 1)):
            for which in (("loop", "rebuild") if r % 2 == 0 else ("rebuild", "loop")):
                if which == "loop":
                    got = _child(MINIMAL_LOOP, env, str(run))
                    loop.append(got["seconds"])
                    loopc.append(got["cpu"])
                else:
                    got = _child(REBUILD, env, str(run))
                    reb.append(got["seconds"])
                    rebc.append(got["cpu"])
        out["rebuild ÷ minimal loop"] = statistics.median(reb) / statistics.median(loop)
        out["rebuild CPU ÷ minimal loop CPU"] = statistics.median(rebc) / statistics.median(loopc)
        out["_rebuild (s)"] = statistics.median(reb)
    if "writers" in only:
        per = 40 if facts < 100000 else 25
        got_w = [_child(WRITERS, env, str(run), str(per)) for _ in range(3)]
        rates = [g["rate"] for g in got_w]
        out["8 writers (commits/s)"] = statistics.median(rates)
        out["8 writers CPU per commit (ms)"] = statistics.median(g["cpu_ms"] for g in got_w)
        out["_ms per commit, 8 writers"] = 1000 / statistics.median(rates)
    shutil.rmtree(run, ignore_errors=True)
    return out


def _verdict(name: str, value: float, facts: int) -> str:
    if name not in TARGETS:
        return ""
    small, large = TARGETS[name]
    target = small if facts < 50000 else large
    if target is None:
        return "(no target at this size)"
    if "commits/s" in name:
        return f"met (≥ {target:g})" if value >= target else f"MISSED (≥ {target:g})"
    floor = " — at the floor" if "÷ floor" in name and value <= 1.15 else ""
    return (f"met (≤ {target:g}){floor}" if value <= target else f"MISSED (≤ {target:g})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="comma-separated fact counts; 1000000 is opt-in (it takes an hour to build)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "am-scale")
    parser.add_argument("--code", type=Path, default=ROOT, help="the am checkout to time (default: this one)")
    parser.add_argument("--only", default=",".join(FIGURES), help=f"a subset of {','.join(FIGURES)}")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    only = set(args.only.split(","))
    args.work.mkdir(parents=True, exist_ok=True)
    code = args.code.resolve()
    results: dict[int, dict[str, float]] = {}
    for facts in sizes:
        base = ensure_vault(args.work, facts, code)
        load = os.getloadavg()
        results[facts] = measure(base, facts, args.work, code, args.rounds, only)
        print(f"\n{facts} facts (load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores, "
              f"code {code}):", flush=True)
        for name, value in results[facts].items():
            if not name.startswith("_"):
                print(f"  {name:34} {value:9.3f}  {_verdict(name, value, facts)}", flush=True)
    if len(sizes) > 1:
        print("\ngrowth exponents (0 = flat, 1 = linear in the vault):")
        for a, b in zip(sizes, sizes[1:]):
            print(f"  {a} -> {b}:")
            for name in results[a]:
                work = name if name.startswith("_") or "(ms)" in name else None
                if work is None or name not in results[b]:
                    continue
                exp = math.log(results[b][name] / results[a][name]) / math.log(b / a)
                print(f"    {name.lstrip('_'):34} {exp:6.2f}")


if __name__ == "__main__":
    main()
