"""Write throughput: safe single writes as the vault grows, the bulk path, and the CLI process.

Figures, all from one run so the ratios hold on a busy machine:

* in-process ``Vault.add_fact`` (file, commit, Git index entry, cache) in
  commits/s at each vault size, and as a ratio to the smallest size (flat = 1.0)
  and to the 200/s target; the git CLI's ``add`` + ``commit`` on the same vault
  is the baseline;
* the same with ``--writers`` concurrent writers: threads of this process (one
  Vault each; group commit shares the flush, ref move, index rewrite and cache
  update) and separate processes, as commits/s and as ratios to 200/s and to
  the single writer of the same run;
* each of those phases starts from the vault as built (``git reset --hard``),
  so all see the same vault; two last lines time one writer again with the
  processes' facts left in today's folder, and the writer threads once that
  folder holds 1,500 facts or more (a busy day): a write's cost grows with
  the folder (each commit rewrites that folder's tree);
* the bulk path ``Vault.import_records`` in facts/s while building each vault
  (target >= 500/s at 10k);
* one ``am fact add`` process (on the smallest vault as built) against ``python -c "import pygit2"`` (target <= 2x)
  and ``python -c pass``; pass ``--python`` to time an installed copy.

Usage: python bench/bench_write.py [--sizes 1000,10000,50000] [--commits 100] [--writers 8] [--python PY]

PYTHONDONTWRITEBYTECODE=1 is set on these machines, so a source checkout
recompiles every module on each start; for the process figure pass an
interpreter that runs an installed (byte-compiled) copy, e.g. a wrapper script
that sets PYTHONPATH to a compiled copy of am.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.corpus import make_records  # noqa: E402

from am.clock import now  # noqa: E402
from am.records.model import Fact, Topic  # noqa: E402
from am.vault import Vault  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def build(root: Path, facts: int, *, batch: int) -> tuple[Vault, float]:
    """Create a vault of ``facts`` facts through the bulk path; return it and the facts/s."""
    vault = Vault.init(root, name=f"bench-{facts}", actor="bench", register=False)
    records = [r for r in make_records(facts) if isinstance(r, (Topic, Fact))]
    # Supersede links point at records of the same import; keep the files as they are.
    n_facts = sum(isinstance(r, Fact) for r in records)
    began = time.perf_counter()
    vault.import_records(records, source="bench", batch_size=batch)
    return vault, n_facts / (time.perf_counter() - began)


def single_writes(vault: Vault, commits: int) -> float:
    """Return add_fact commits/s."""
    topic = next(iter(vault.list_topics())).id
    vault.add_fact("warm-up write.", topics=[topic])
    began = time.perf_counter()
    for i in range(commits):
        vault.add_fact(f"Bench fact number {i}: the cache keeps sessions for 30 minutes.", topics=[topic])
    return commits / (time.perf_counter() - began)


def threaded_writes(root: Path, threads: int, per_thread: int) -> float:
    """Return add_fact commits/s with ``threads`` writers in this process (one Vault each): group commit."""
    import threading

    vaults = [Vault.open(root, actor=f"t{n}") for n in range(threads)]
    topic = next(iter(vaults[0].list_topics())).id
    for v in vaults:
        v.add_fact("warm-up write.", topics=[topic])
    gate = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        gate.wait()
        try:
            for i in range(per_thread):
                vaults[n].add_fact(f"Thread {n} fact {i}: the cache keeps sessions for 30 minutes.", topics=[topic])
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    gate.wait()
    began = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - began
    for v in vaults:
        v.close()
    if errors:
        raise errors[0]
    return threads * per_thread / elapsed


PROCESS_WORKER = """
import sys, time
from am.vault import Vault
root, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
vault = Vault.open(root, actor=name)
topic = next(iter(vault.list_topics())).id
vault.add_fact("warm-up write.", topics=[topic])
print("ready", flush=True)
sys.stdin.readline()  # every writer is warmed up: go
for i in range(count):
    vault.add_fact(f"{name} fact {i}: the cache keeps sessions for 30 minutes.", topics=[topic])
print(time.time(), flush=True)
"""


def process_writes(root: Path, processes: int, per_process: int) -> float:
    """Return add_fact commits/s with ``processes`` single-threaded writer processes released together.

    Each process starts, warms up (imports, its cache, a first write) and
    says so; the clock starts once all have, so start-up is not counted.
    """
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", PROCESS_WORKER, str(root), f"p{n}", str(per_process)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
             for n in range(processes)]
    for proc in procs:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"a writer process failed to start ({proc.wait()})")
    began = time.time()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    ends = []
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"a writer process failed ({proc.returncode})")
        ends.append(float(out.split()[-1]))
    return processes * per_process / (max(ends) - began)


def index_writes(root: Path, runs: int) -> tuple[float, float]:
    """Return the median seconds to set one entry and write Git's index: am's writer, then libgit2's."""
    import pygit2

    from am.git.formats.gitindex import GitIndex

    gitdir = root / ".git"
    rel = "facts/bench-index-probe.md"
    (root / rel).write_text("probe\n")
    st = (root / rel).stat()
    oid = pygit2.hash("probe\n")
    ours, _ = GitIndex.read(gitdir / "index")
    copy = gitdir / "bench-index-libgit2.tmp"
    copy.write_bytes((gitdir / "index").read_bytes())
    theirs = pygit2.Index(str(copy))  # writes go to the copy, never to the vault's index

    # Neither flushes here (am's write path leaves that to its one syncfs, and the
    # flush costs the same for the same bytes): this is the work of the rewrite itself.
    # Both write a new file and rename it over the old one, as the write path does.
    def am_write() -> None:
        ours.set(rel, oid.raw, st)
        ours.write(gitdir / "bench-index-am.tmp", sync=False)
        os.replace(gitdir / "bench-index-am.tmp", gitdir / "bench-index-am")

    def libgit2_write() -> None:
        theirs.add(pygit2.IndexEntry(rel, oid, pygit2.enums.FileMode.BLOB))
        pygit2.settings.enable_fsync_gitdir(False)
        try:
            theirs.write()
        finally:
            pygit2.settings.enable_fsync_gitdir(True)

    out = []
    for fn in (am_write, libgit2_write):
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            fn()
            times.append(time.perf_counter() - began)
        out.append(statistics.median(times))
    (gitdir / "bench-index-am").unlink()
    copy.unlink()
    (root / rel).unlink()
    return out[0], out[1]


def durability_floor(root: Path, runs: int) -> float:
    """Return the median seconds of the I/O one safe write cannot skip at this vault size.

    Two ordered flushes: a file the size of Git's index written, fsynced and
    renamed over another (the index rewrite; the objects would share this
    flush), then a 41-byte file written, fsynced, renamed, its folder fsynced
    (the branch move). No Python work, no objects, no cache: a ceiling for
    one writer, whatever the code does.
    """
    gitdir = root / ".git"
    data = os.urandom((gitdir / "index").stat().st_size)
    folder = os.open(gitdir, os.O_RDONLY)
    times = []
    try:
        for _ in range(runs):
            began = time.perf_counter()
            for name, body in (("bench-floor-index", data), ("bench-floor-ref", b"0" * 40 + b"\n")):
                fd = os.open(gitdir / f"{name}.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    os.write(fd, body)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(gitdir / f"{name}.tmp", gitdir / name)
            os.fsync(folder)
            times.append(time.perf_counter() - began)
    finally:
        os.close(folder)
        for name in ("bench-floor-index", "bench-floor-ref"):
            (gitdir / name).unlink(missing_ok=True)
    return statistics.median(times)


def reset(root: Path, commit: str) -> None:
    """Put the vault back to ``commit`` (as built), so every measurement of one size starts from the same vault.

    Each phase adds hundreds of facts to today's folder, and a write's cost
    grows with that folder (see the day-folder line): without the reset a
    later phase would measure a fuller folder than an earlier one.
    """
    subprocess.run(["git", "-C", str(root), "reset", "-q", "--hard", commit], check=True)
    subprocess.run(["git", "-C", str(root), "clean", "-fdq", "--", "facts", "notes"], check=True)


def todays_folder(root: Path) -> int:
    """Return how many facts today's folder holds (where new facts go: am's clock, the local date)."""
    folder = root / "facts" / f"{now():%Y/%m/%d}"
    return len(list(folder.glob("*.md"))) if folder.is_dir() else 0


def reflog_subjects(root: Path) -> list[str]:
    """Return the branch's reflog subjects, newest first."""
    return subprocess.run(["git", "-C", str(root), "reflog", "--format=%gs"],
                          check=True, capture_output=True, text=True).stdout.splitlines()


def commits_per_ref_move(subjects: list[str]) -> float:
    """Return the mean number of commits per branch move over these reflog subjects (group commit)."""
    sizes = []
    for subject in subjects:
        if subject.startswith("commit (am group of "):
            sizes.append(int(subject.split("of ", 1)[1].split(")", 1)[0]))
        elif subject.startswith("commit"):
            sizes.append(1)
    return sum(sizes) / max(1, len(sizes))


def git_cli_commits(root: Path, commits: int) -> float:
    """Return commits/s of `git add FILE && git commit` on the same vault (the baseline)."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x"}
    folder = root / "notes"
    folder.mkdir(exist_ok=True)
    began = time.perf_counter()
    for i in range(commits):
        (folder / f"n{i}.txt").write_text(f"{i}\n")
        subprocess.run(["git", "-C", str(root), "add", f"notes/n{i}.txt"], check=True, env=env)
        subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", f"n{i}"], check=True, env=env)
    return commits / (time.perf_counter() - began)


def process_times(python: str, vault_root: Path, runs: int) -> dict[str, float]:
    """Return the median wall time (s) of `am fact add` and of the baselines."""
    env = {**os.environ, "AM_HOME": str(vault_root.parent / "am-home")}
    if python == sys.executable:
        env["PYTHONPATH"] = str(REPO)
    topic = next(iter(Vault.open(vault_root).list_topics())).id

    def median(argv: list[str]) -> float:
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            # cwd outside the checkout, so `-m am.cli.main` finds the am that --python means.
            subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL, cwd=vault_root.parent)
            times.append(time.perf_counter() - began)
        return statistics.median(times)

    return {
        "python -c pass": median([python, "-c", "pass"]),
        "python -c 'import pygit2'": median([python, "-c", "import pygit2"]),
        "am fact add": median([python, "-m", "am.cli.main", "--vault", str(vault_root), "fact", "add",
                               "A fact from the command line.", "--topic", topic]),
        "am --version": median([python, "-m", "am.cli.main", "--version"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--writers", type=int, default=8, help="concurrent writers (threads, then processes)")
    parser.add_argument("--no-process-time", action="store_true", help="skip the CLI process timing")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the process timing")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="am-bench-write-"))
    os.environ.setdefault("AM_HOME", str(work / "am-home"))
    print(f"workdir {work}")
    rates: dict[int, float] = {}
    built_at: dict[int, str] = {}
    for size in sizes:
        root = work / f"v{size}"
        vault, bulk = build(root, size, batch=args.batch)
        built = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True, capture_output=True,
                               text=True).stdout.strip()
        built_at[size] = built
        rate = single_writes(vault, args.commits)
        rates[size] = rate
        reset(root, built)
        base = git_cli_commits(root, min(30, args.commits))
        reset(root, built)
        print(f"{size:>6} facts | import {bulk:7.0f} facts/s ({bulk / 500:4.2f}x of 500/s) | "
              f"add_fact {rate:6.1f} commits/s ({rate / 200:4.2f}x of 200/s, "
              f"{rate / rates[sizes[0]]:4.2f}x of {sizes[0]}) | git CLI add+commit {base:5.1f}/s "
              f"(am = {rate / base:4.1f}x git)", flush=True)
        floor = durability_floor(root, args.runs)
        print(f"{size:>6} facts | I/O floor of one safe write (index-sized file + ref, each flushed): "
              f"{floor * 1000:5.2f} ms = at most {1 / floor:5.0f} writes/s for one writer "
              f"(add_fact reaches {rate * floor:4.2f}x of it)", flush=True)
        ours, theirs = index_writes(root, args.runs)
        print(f"{size:>6} facts | set one entry and write Git's index: am {ours * 1000:5.2f} ms, "
              f"libgit2 {theirs * 1000:5.2f} ms (am = {ours / theirs:4.2f}x libgit2)", flush=True)
        per = max(1, args.commits // args.writers)
        for label, measure in (("threads", threaded_writes), ("processes", process_writes)):
            reset(root, built)
            before = len(reflog_subjects(root))
            many = measure(root, args.writers, per * 2)
            if label == "threads":
                many_threads = many
            # Only this phase's moves (its warm-up writes, one per writer, count as moves of one).
            subjects = reflog_subjects(root)
            group = commits_per_ref_move(subjects[:len(subjects) - before])
            print(f"{size:>6} facts | {args.writers} writer {label:<9} {many:6.1f} commits/s "
                  f"({many / 200:4.2f}x of 200/s, {many / rate:4.2f}x of one writer; "
                  f"{group:.1f} commits per branch move)", flush=True)
        # Not reset: the processes' facts are still in today's folder.
        full = todays_folder(root)
        later = single_writes(vault, args.commits)
        print(f"{size:>6} facts | one writer with {full} facts already in today's folder: {later:6.1f} commits/s "
              f"({later / rate:4.2f}x of an empty one)", flush=True)
        # A busy day: every commit writes today's folder again, so its size is part of each commit's cost.
        while todays_folder(root) < 1500:
            threaded_writes(root, args.writers, 200 // args.writers)
        full = todays_folder(root)
        busy = threaded_writes(root, args.writers, per * 2)
        print(f"{size:>6} facts | {args.writers} writer threads with {full} facts already in today's folder: "
              f"{busy:6.1f} commits/s ({busy / many_threads:4.2f}x of an empty one)", flush=True)
    if args.no_process_time:
        return
    # On the smallest vault as built: the phases above left thousands of facts in today's folder.
    reset(work / f"v{sizes[0]}", built_at[sizes[0]])
    times = process_times(args.python, work / f"v{sizes[0]}", args.runs)
    floor = times["python -c 'import pygit2'"]
    for name, seconds in times.items():
        print(f"{name:<28} {seconds * 1000:7.1f} ms  ({seconds / floor:4.2f}x import pygit2)")


if __name__ == "__main__":
    main()
