"""Benchmark `am diff` of two worlds against one `am slice` of the same world, in one run (issue 37).

The corpus is bench_worlds.py's: a vault of N facts (W of them watching code paths) over a code
repository of C commits on main, plus a branch `feat` of a few commits off main's tip. Measured
in process, warm, interleaved: one slice of main (the pack every diff side is), `am diff main
feat`, and `am diff main feat --merge-preview`. Target: a diff <= 2x one slice.

Usage: python bench/bench_diff.py [--facts 10000] [--watched 2000] [--commits 2000] [--paths 2000]
                                  [--work /tmp/am-bench-diff] [--runs 7]
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

from bench.bench_index import median_time  # noqa: E402
from bench.bench_worlds import build_code, build_vault  # noqa: E402


def _feat(code: Path) -> None:
    """A branch of five commits off main's tip, each changing a file (once)."""
    names = subprocess.run(["git", "branch", "--list", "feat"], cwd=code, capture_output=True, text=True,
                           check=True).stdout
    if names.strip():
        return
    subprocess.run(["git", "checkout", "-q", "-b", "feat"], cwd=code, check=True)
    for i in range(5):
        (code / f"feat{i}.py").write_text(f"feat {i}\n")
        subprocess.run(["git", "add", f"feat{i}.py"], cwd=code, check=True)
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@e", "commit", "-qm", f"feat {i}"], cwd=code,
                       check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=code, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=10000)
    parser.add_argument("--watched", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--paths", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--work", type=Path, default=Path("/tmp/am-bench-diff"))
    args = parser.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    os.environ["AM_HOME"] = str(work / "am-home")
    began = time.perf_counter()
    code = work / f"code-{args.commits}"
    history = build_code(code, args.commits, args.paths)
    _feat(code)
    vault_root = build_vault(work / f"vault-{args.facts}", args.facts, args.watched, history, args.paths,
                             with_paths=True)
    print(f"corpus: {args.facts} facts ({args.watched} watching paths) over {len(history)} commits; "
          f"built in {time.perf_counter() - began:.1f} s; load {os.getloadavg()[0]:.1f}")

    from am.packs.pack import SliceRequest
    from am.packs.slice import slice_vault
    from am.packs.worlddiff import diff_states, merge_preview, state_of
    from am.registry import Registry
    from am.vault import Vault

    Registry.load().add_repo("project-alpha", code, vault=vault_root.name, replace=True)
    Registry.load().add_vault(vault_root.name, vault_root, replace=True)
    main_req = SliceRequest(repo="project-alpha", branch="main", max_tokens=0)
    feat_req = SliceRequest(repo="project-alpha", branch="feat", max_tokens=0)
    with Vault.open(vault_root) as vault:
        def one_slice() -> None:
            slice_vault(vault, main_req, count_use=False)

        def two_worlds() -> None:
            diff_states(vault, state_of(vault, main_req), state_of(vault, feat_req))

        def preview() -> None:
            before, after, notes = merge_preview(vault, "project-alpha", "main", "feat")
            diff_states(vault, before, after, notes)

        for fn in (one_slice, two_worlds, preview):
            fn()  # warm: caches, ancestry and staleness files
        times: dict[str, list[float]] = {"slice": [], "diff": [], "preview": []}
        for _ in range(args.runs):
            times["slice"].append(median_time(one_slice, 1))
            times["diff"].append(median_time(two_worlds, 1))
            times["preview"].append(median_time(preview, 1))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"  one slice of main (no budget)           {med['slice'] * 1000:8.1f} ms")
    print(f"  am diff main feat                       {med['diff'] * 1000:8.1f} ms  "
          f"{med['diff'] / med['slice']:.2f}x the slice (target <= 2x)")
    print(f"  am diff main feat --merge-preview       {med['preview'] * 1000:8.1f} ms  "
          f"{med['preview'] / med['slice']:.2f}x the slice")


if __name__ == "__main__":
    main()
