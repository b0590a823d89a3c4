"""The similar-fact classifier (am/writes/similar.py) on a labelled set, and what its check costs a fact add.

Part 1 reads bench/data/similar_pairs.jsonl (pairs written for the purpose: restatements, updates,
contradictions and unrelated facts on one topic, in English and Chinese; one JSON object a line:
label, lang, new, old) and prints the precision and recall of each verdict: ``same`` for the
restatements, ``candidate`` for the updates and contradictions, and the time of one ``classify``.
Part 2 (``--base REV``) runs bench/compare_revisions.py REV HEAD at each of ``--sizes`` facts, in
this run, and prints its table: the ``fact add`` row is a write with the check against one without.

Usage: python bench/bench_similar.py [--base REV] [--sizes 10000,100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "similar_pairs.jsonl"
EXPECTED = {"same": "same", "update": "candidate", "contradiction": "candidate", "unrelated": None}


def classifier_figures(path: Path = DATA) -> None:
    sys.path.insert(0, str(ROOT))
    from am.writes.similar import classify, normalise, tokens

    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(f"{len(pairs)} labelled pairs ({', '.join(f'{k} {v}' for k, v in sorted(Counter(p['label'] for p in pairs).items()))})")
    classify("Warm the stemmer up.", "Warm up the stemmer.")  # its first call loads Snowball (~0.1 s)
    tokens.cache_clear()
    normalise.cache_clear()
    start = time.perf_counter()
    verdicts = [classify(p["new"], p["old"]).kind for p in pairs]
    spent = time.perf_counter() - start
    print(f"{'':22} {'precision':>10} {'recall':>8} {'n':>5}")
    for lang in ("all", "en", "zh"):
        chosen = [(p, v) for p, v in zip(pairs, verdicts) if lang == "all" or p["lang"] == lang]
        for verdict in ("same", "candidate"):
            said = [p for p, v in chosen if v == verdict]
            meant = [p for p, _ in chosen if EXPECTED[p["label"]] == verdict]
            right = [p for p, v in chosen if v == verdict and EXPECTED[p["label"]] == verdict]
            precision = len(right) / len(said) if said else float("nan")
            recall = len(right) / len(meant) if meant else float("nan")
            print(f"{lang + ' ' + verdict:22} {precision:10.2f} {recall:8.2f} {len(meant):5}")
    for label in ("update", "contradiction"):
        got = [v for p, v in zip(pairs, verdicts) if p["label"] == label]
        print(f"recall of {label}s as candidate: {sum(v == 'candidate' for v in got) / len(got):.2f} ({len(got)})")
    print(f"classify: {spent / len(pairs) * 1e6:.0f} us a pair (each text's first call: no memo)")
    wrong = [(p, v) for p, v in zip(pairs, verdicts) if EXPECTED[p["label"]] != v]
    if wrong:
        print(f"\n{len(wrong)} misjudged:")
        for p, v in wrong:
            print(f"  {p['label']:>13} -> {v!s:9}  {p['new']}  |  {p['old']}")


def fact_add_figures(base: str, sizes: list[int], rounds: int, work: Path | None) -> None:
    for size in sizes:
        args = [sys.executable, str(ROOT / "bench" / "compare_revisions.py"), base, "HEAD", "--facts", str(size),
                "--rounds", str(rounds)] + (["--work", str(work)] if work else [])
        print(f"\n$ compare_revisions.py {base} HEAD --facts {size} --rounds {rounds}", flush=True)
        subprocess.run(args, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--base", default=None, help="A revision without the check: time fact add against it.")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    classifier_figures(args.data)
    if args.base:
        fact_add_figures(args.base, [int(s) for s in args.sizes.split(",")], args.rounds, args.work)


if __name__ == "__main__":
    main()
