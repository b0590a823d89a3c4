"""`am check` and `am doctor` on a large vault, against `git status` of the same vault.

Builds a synthetic vault (bench/corpus.py: facts naming a repo no clone is
registered for, so the world pass warns about half of them), adds a few hand
files that break the format in different ways (so the slow paths run too),
then times whole processes (median of N; bytecode compiled once) of
`am check`, `am check --format json` and `am doctor`, each against `git status`
in the same run: cold (no derived data: am/upkeep/checkmemo.py's memo deleted
before every run), warm (the memo of the run before, nothing changed) and with
one fact file edited before every round.

With ``--before REV`` (a commit of this repository, e.g. the one before a
change to the check passes), that version's am is timed too, interleaved with
this tree's, for an after/before ratio that the machine's load does not skew;
the outputs of the two must be byte-identical (the same findings; the log's
"warning: skipping FILE" lines aside).

Usage: python bench/bench_check.py [--facts 10000] [--runs 3] [--before REV]
"""

from __future__ import annotations

import argparse
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
from bench_audit import ENV, _cpu
from corpus import print_after_before, print_load, write_vault

from am.upkeep.checkmemo import MEMO_FILE

# What is timed: each command with no derived data kept (cold: the memo deleted before every run), with the
# memo of the run before (warm: nothing changed), and with one fact file edited before every round.
SCENARIOS = (("am check, cold", ["check"], "cold"), ("am check, warm", ["check"], "warm"),
             ("am check, one file edited", ["check"], "edited"),
             ("am check --format json, warm", ["check", "--format", "json"], "warm"),
             ("am doctor, cold", ["doctor"], "cold"), ("am doctor, warm", ["doctor"], "warm"))

_HEAD = "---\ntype: fact\nid: {id}\ntopics: [project-t00000]\nstatus: active\ncreated: 2026-09-23T12:00:00+08:00\n"
HOSTILE = {  # hand files: each takes the slow path (the schema) and most are findings
    "facts/2026/09/23/f-hand-no-status.md": "---\ntype: fact\nid: f-hand-no-status\ntopics: [project-t00000]\n"
                                            "created: 2026-09-23\n---\nNo status.\n",
    "facts/2026/09/23/f-hand-bad-conf.md": _HEAD.format(id="f-hand-bad-conf") + "confidence: sure\n---\nx\n",
    "facts/2026/09/23/f-hand-links.md": _HEAD.format(id="f-hand-links").replace("[project-t00000]",
                                                                                 '["[[project-t00000]]", "[[Li Wei]]"]')
                                        + "---\nLinks.\n",
    "facts/2026/09/23/f-hand-date.md": _HEAD.format(id="f-hand-date") + "valid_from: 2026-13-01\n---\nx\n",
    "facts/2026/09/23/f-hand-empty-tag.md": _HEAD.format(id="f-hand-empty-tag") + "tags: [\"\"]\n---\nx\n",
    "facts/2026/09/23/f-hand-pinned.md": _HEAD.format(id="f-hand-pinned") + "pinned: false\nextra: {a: 1}\n---\nx\n",
    "facts/2026/09/23/f-hand-broken.md": "---\ntype: fact\nid: [unclosed\n---\nx\n",
    "facts/2026/09/23/Untitled.md": "",
    "topics/Li Wei.md": "---\ntype: topic\nid: person-li-wei\nkind: person\ntitle: Li Wei\n---\nA person.\n",
    "topics/topic-bad-kind.md": "---\ntype: topic\nid: topic-bad-kind\nkind: thing\ntitle: Bad\n---\nx\n",
    "relations/2026/09/a--likes--b.md": "---\ntype: relation\nid: a--likes--b\nrel: likes\nfrom: a\nto: b\n"
                                        "status: active\n---\nx\n",
}


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes, int]:
    """Run one whole process; return its wall and CPU seconds, its output and exit code."""
    began, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run(argv, capture_output=True, env=env, cwd="/", check=False)
    took, used = time.perf_counter() - began, _cpu() - cpu
    if proc.returncode not in (0, 1, 5):  # clean, doctor's problems, check's errors
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode()}")
    # The log's "warning: skipping FILE" lines are left out: the world pass read the files a second time and
    # logged each broken one again (check reports it as an issue in any case).
    said = b"".join(line for line in proc.stderr.splitlines(keepends=True) if not line.startswith(b"warning: skipping"))
    return took, used, proc.stdout + said, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", default=None, help="a commit of this repository whose am to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="am-bench-check-") as tmp:
        vault = Path(tmp) / "vault"
        began = time.perf_counter()
        write_vault(vault, args.facts)
        for rel, text in HOSTILE.items():
            (vault / rel).parent.mkdir(parents=True, exist_ok=True)
            (vault / rel).write_text(text, encoding="utf-8")
        subprocess.run(["git", "-C", str(vault), "add", "-A"], check=True, env=ENV)
        subprocess.run(["git", "-C", str(vault), "commit", "-qm", "hand files"], check=True, env=ENV)
        print(f"vault: {args.facts} facts and {len(HOSTILE)} hand files, built in {time.perf_counter() - began:.1f} s")
        versions = {"after": ROOT}
        if args.before:
            code = Path(tmp) / "before"
            code.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "am", "schemas"], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
            versions = {"before": code, "after": ROOT}
        envs = {label: {**ENV, "PYTHONPATH": str(code), "AM_HOME": str(Path(tmp) / "home")}
                for label, code in versions.items()}
        am = [sys.executable, "-m", "am.cli.entry", "--vault", str(vault)]
        base = ["git", "-C", str(vault), "status"]
        for label, env in envs.items():  # warm-up: bytecode, the cache, the page cache
            subprocess.run([*am, "index", "status"], capture_output=True, env=env, cwd="/", check=True)
        memo = vault / ".git" / "am" / MEMO_FILE
        edited = vault / sorted(p for p in (vault / "facts").rglob("*.md") if not p.name.startswith("f-hand"))[0]
        original = edited.read_bytes()
        for name, argv, state in SCENARIOS:
            wall: dict[str, list[float]] = {k: [] for k in [*envs, "git"]}
            cpu: dict[str, list[float]] = {k: [] for k in wall}
            outputs: dict[str, tuple[bytes, int]] = {}
            for n in range(args.runs + 1):
                if state == "edited":  # a new text each round: both versions check the same file, once changed
                    edited.write_bytes(original + f"Edited in round {n}.\n".encode())
                for label, env in envs.items():
                    if state == "cold":
                        memo.unlink(missing_ok=True)
                    w, c, out, code = timed([*am, *argv], env)
                    if outputs.setdefault(label, (out, code)) != (out, code):
                        raise SystemExit(f"{name}: {label}'s output changed between runs")
                    if n:
                        wall[label].append(w)
                        cpu[label].append(c)
                w, c, _, _ = timed(base, ENV)
                if n:
                    wall["git"].append(w)
                    cpu["git"].append(c)
            med = {k: statistics.median(v) for k, v in wall.items()}
            medc = {k: statistics.median(v) for k, v in cpu.items()}
            lines = outputs["after"][0].count(b"\n")
            print(f"{name} ({lines} lines of output, exit {outputs['after'][1]}); baseline `git status` "
                  f"{med['git'] * 1000:.1f} ms")
            for label in envs:
                print(f"  {label:<6} {med[label]:7.2f} s wall ({med[label] / med['git']:6.1f}x git status), "
                      f"{medc[label]:7.2f} s CPU")
            print_after_before(envs, med, medc, outputs)
            edited.write_bytes(original)
        print_load()


if __name__ == "__main__":
    main()
