"""`am log` and `am history ID` on a vault with a long history, against `git log` of the same vault.

Builds a synthetic vault (bench/corpus.py), then gives it a long history with
`git fast-import`: COMMITS commits on main, most of them am writes (one fact
edited, with am's trailers), a share of them hand commits (the git CLI or
Obsidian editing one to three fact files, no trailers), and every so often a
hand merge of a second branch ("laptop": new notes and edits made there).

Times whole processes (median of N; bytecode compiled once, as installed) of
`am log` (the whole log, and `-n 20`), `am log --actor` (a filter that walks
everything), `am log --record ID` and `am history ID` for a fact edited by am
and by hand, each against a `git log` of the same vault in the same run:
`git log --name-status` / `--stat` for the whole log, `git log -n 20
--name-status` for `-n 20`, and `git log -p -- PATH` for one record.

With ``--before REV`` (a commit of this repository, e.g. one before a change to
the audit code), that version's am is timed too, interleaved with this tree's,
for a before/after ratio that the machine's load does not skew; the outputs of
the two must be byte-identical.

Usage: python bench/bench_audit.py [--facts 2000] [--commits 5000] [--hand 0.3] [--runs 7] [--before REV]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from corpus import print_after_before, print_load, write_vault

ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench",
       "GIT_COMMITTER_EMAIL": "bench@example.com", "PYTHONPYCACHEPREFIX": "/tmp/am-bench-pycache"}
ACTORS = ["claude-code", "codex", "cursor"]
PEOPLE = [("Li Wei", "li.wei@example.com"), ("Ana Souza", "ana@example.com")]


def git(vault: Path, *args: str, data: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", "-C", str(vault), *args], input=data, capture_output=True, env=ENV, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed: {proc.stderr.decode()}")
    return proc.stdout


def _edit(text: bytes, n: int, who: str) -> bytes:
    """The file with one more sentence in its body (its frontmatter untouched)."""
    return text.rstrip(b"\n") + f" Edit {n} by {who}.\n".encode()


def grow_history(vault: Path, commits: int, hand_share: float, *, merge_every: int = 100, seed: int = 7) -> str:
    """Append ``commits`` commits to main (am writes, hand commits, merges of 'laptop'); return a much-edited fact's id."""
    rng = random.Random(seed)
    files = {p.relative_to(vault).as_posix(): p.read_bytes() for p in (vault / "facts").rglob("*.md")}
    facts = sorted(files)
    main_facts, side_facts = facts[: len(facts) * 3 // 4], facts[len(facts) * 3 // 4:]  # disjoint: merges are clean
    hot = main_facts[len(main_facts) // 2]  # edited often, by am and by hand: `am history`'s record
    tip = git(vault, "rev-parse", "HEAD").decode().strip()
    moment = int(git(vault, "log", "-1", "--format=%ct").decode()) + 60
    out: list[bytes] = [f"reset refs/heads/{ref}\nfrom {tip}\n\n".encode() for ref in ("main", "laptop")]
    mark = 0
    side_changes: dict[str, bytes] = {}
    side_new = 0

    def commit(ref: str, who: tuple[str, str], message: str, changes: dict[str, bytes], *,
               merge: int | None = None) -> int:
        nonlocal mark, moment
        mark += 1
        moment += rng.randint(20, 400)
        msg = message.encode()
        lines = [f"commit refs/heads/{ref}\nmark :{mark}\n".encode(),
                 f"author {who[0]} <{who[1]}> {moment} +0800\n".encode(),
                 f"committer {who[0]} <{who[1]}> {moment} +0800\n".encode(),
                 f"data {len(msg)}\n".encode() + msg + b"\n"]
        if merge is not None:
            lines.append(f"merge :{merge}\n".encode())
        for path, data in sorted(changes.items()):
            lines.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
        out.append(b"".join(lines) + b"\n")
        return mark

    last_side: int | None = None
    for n in range(commits):
        if n % merge_every == merge_every - 1 and side_changes:
            # A merge made by hand (git pull from the laptop): the laptop's files come in.
            commit("main", PEOPLE[0], "Merge branch 'laptop'\n", dict(side_changes), merge=last_side)
            files.update(side_changes)
            side_changes = {}
            continue
        if n % 7 == 3:  # a commit on the laptop (Obsidian's backup, or an agent there)
            changes: dict[str, bytes] = {}
            if rng.random() < 0.5:
                side_new += 1
                path = f"facts/laptop/note-{side_new:05d}.md"
                changes[path] = (f"---\ntype: fact\nid: f-laptop-{side_new:05d}\nstatus: active\n"
                                 f"topics: [project-t00000]\n---\nA note written on the laptop, {side_new}.\n").encode()
            else:
                path = rng.choice(side_facts)
                changes[path] = _edit(side_changes.get(path, files[path]), n, "laptop")
            side_changes.update(changes)
            last_side = commit("laptop", PEOPLE[1], f"vault backup: {n}\n", changes)
            continue
        hand = rng.random() < hand_share
        picked = [hot] if n % 25 == 0 else rng.sample(main_facts, rng.randint(1, 3) if hand else 1)
        changes = {p: _edit(files[p], n, "hand" if hand else "am") for p in picked}
        files.update(changes)
        if hand:
            commit("main", rng.choice(PEOPLE), f"edit {len(picked)} notes by hand ({n})\n", changes)
        else:
            actor = rng.choice(ACTORS)
            ids = [Path(p).stem for p in picked]
            message = (f"fact: update {ids[0]}\n\nReason: bench edit {n}\nAm-Op: fact.update\n"
                       + "".join(f"Am-Record: {i}\n" for i in ids) + f"Am-Actor: {actor}\n")
            commit("main", ("am", "am@localhost"), message, changes)
    git(vault, "fast-import", "--quiet", "--force", data=b"".join(out))
    git(vault, "reset", "-q", "--hard", "main")
    return Path(hot).stem


def _cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """Run one whole process; return its wall and CPU seconds and its output."""
    began, cpu = time.perf_counter(), _cpu()
    # Not in this checkout: `python -m` puts the working folder first on sys.path, before PYTHONPATH.
    proc = subprocess.run(argv, capture_output=True, env=env, cwd="/", check=False)
    took, used = time.perf_counter() - began, _cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode()}")
    return took, used, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--hand", type=float, default=0.3, help="the share of main's commits made by hand")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--before", default=None, help="a commit of this repository whose am to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="am-bench-audit-") as tmp:
        vault = Path(tmp) / "vault"
        began = time.perf_counter()
        write_vault(vault, args.facts)
        hot = grow_history(vault, args.commits, args.hand)
        hot_path = git(vault, "ls-files", "--", f"*{hot}.md").decode().strip()
        count = git(vault, "rev-list", "--count", "HEAD").decode().strip()
        merges = git(vault, "rev-list", "--count", "--merges", "HEAD").decode().strip()
        hand = len(git(vault, "log", "--format=%H", "--invert-grep", "--grep=^Am-Op:").split())
        print(f"vault: {args.facts} facts, {count} commits ({hand} without am trailers, {merges} of them merges), "
              f"built in {time.perf_counter() - began:.1f} s")
        versions = {"after": ROOT}
        if args.before:
            code = Path(tmp) / "before"
            code.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "am"], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
            versions = {"before": code, "after": ROOT}
        envs = {label: {**ENV, "PYTHONPATH": str(code), "AM_HOME": str(Path(tmp) / "home")}
                for label, code in versions.items()}
        am = [sys.executable, "-m", "am.cli.entry", "--vault", str(vault)]
        gitv = ["git", "-C", str(vault)]
        cases: list[tuple[str, list[str], list[str]]] = [
            ("am log", ["log"], [*gitv, "log", "--name-status"]),
            ("am log --format json", ["log", "--format", "json"], [*gitv, "log", "--name-status"]),
            ("am log -n 20", ["log", "-n", "20"], [*gitv, "log", "-n", "20", "--name-status"]),
            ("am log --actor codex", ["log", "--actor", "codex"], [*gitv, "log", "--name-status"]),
            (f"am log --record {hot}", ["log", "--record", hot], [*gitv, "log", "--name-status", "--", hot_path]),
            (f"am history {hot}", ["history", hot], [*gitv, "log", "-p", "--", hot_path]),
        ]
        for label, env in envs.items():  # warm-up: bytecode, the cache, the page cache
            subprocess.run([*am, "index", "status"], capture_output=True, env=env, cwd="/", check=True)
            _, _, out = timed([sys.executable, "-c", "import am.upkeep.audit as a; print(a.__file__)"], env)
            print(f"{label}: {out.decode().strip()}")
        stock = [*gitv, "log", "--stat"]
        for name, argv, base in cases:
            wall: dict[str, list[float]] = {k: [] for k in [*envs, "git", "git log --stat"]}
            cpu: dict[str, list[float]] = {k: [] for k in wall}
            outputs: dict[str, bytes] = {}
            for n in range(args.runs + 1):
                for label, env in envs.items():
                    w, c, out = timed([*am, *argv], env)
                    if outputs.setdefault(label, out) != out:
                        raise SystemExit(f"{name}: {label}'s output changed between runs")
                    if n:
                        wall[label].append(w)
                        cpu[label].append(c)
                for key, cmd in (("git", base), ("git log --stat", stock)):
                    w, c, _ = timed(cmd, ENV)
                    if n:
                        wall[key].append(w)
                        cpu[key].append(c)
            med = {k: statistics.median(v) for k, v in wall.items()}
            medc = {k: statistics.median(v) for k, v in cpu.items()}
            lines = outputs["after"].count(b"\n")
            print(f"{name} ({lines} lines of output); baseline `{' '.join(base[3:])}` "
                  f"{med['git'] * 1000:.1f} ms, `git log --stat` {med['git log --stat'] * 1000:.1f} ms")
            for label in envs:
                print(f"  {label:<6} {med[label] * 1000:8.1f} ms wall ({med[label] / med['git']:6.1f}x the baseline, "
                      f"{med[label] / med['git log --stat']:5.1f}x git log --stat), "
                      f"{medc[label] * 1000:8.1f} ms CPU ({medc[label] / max(medc['git'], 1e-4):6.1f}x)")
            print_after_before(envs, med, medc, outputs)
        print_load()


if __name__ == "__main__":
    main()
