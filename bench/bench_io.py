"""Portability: `am import mcp-memory` on the bulk path, and `am export` against a full cache rebuild.

Figures, all from one run:

* the same records written by ``Vault.import_records`` (the bulk path import
  stands on, with no reading or planning): the baseline, in facts/s;
* import of an MCP memory.jsonl of N observations (entities of 50
  observations, a relation per entity) into a fresh vault, end to end
  (read, plan against the vault, batched commits, cache updates), in facts/s
  and as a ratio to the 1,000 facts/s target;
* on the vault that import made: a full cache rebuild (the baseline), then
  `export_pairs` + JSONL rendering to a file, as seconds and as the ratio
  export / rebuild (target <= 2.0);
* a re-import of the same file (it writes nothing) in seconds.

A batch is at most ``--batch`` records and one commit message (64 KiB: one
``Am-Record`` line a record), so 2,000 asked makes batches of ~1,600 here.
On a shared machine the wall-clock rates follow the load; the facts per CPU
second of the measuring process are printed beside them. Each step runs in a
process of its own, as a command would: one process writing two large vaults
in turn shares libgit2's object cache (256 MiB in all) between them.

Usage: python bench/bench_io.py [--observations 100000] [--batch 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from am.io import (
    ExportWorld,
    ImportOptions,
    export_pairs,
    import_source,
    read_source,
    render_export,
)
from am.vault import Vault

PER_ENTITY = 50


def write_source(path: Path, observations: int) -> None:
    """Write a memory.jsonl of ``observations`` observations, a third of them in Chinese."""
    entities = max(1, observations // PER_ENTITY)
    with open(path, "w", encoding="utf-8") as out:
        for e in range(entities):
            obs = [(f"服务 {e} 的第 {i} 条记录：会话缓存保留三十分钟" if i % 3 == 0 else
                    f"Service {e} note {i}: sessions are cached for 30 minutes behind the gateway")
                   for i in range(PER_ENTITY)]
            out.write(json.dumps({"type": "entity", "name": f"Service {e}", "entityType": "service",
                                  "observations": obs}, ensure_ascii=False) + "\n")
        for e in range(entities):
            out.write(json.dumps({"type": "relation", "from": f"Service {e}", "to": f"Service {(e + 1) % entities}",
                                  "relationType": "depends_on"}) + "\n")


def _baseline(base: Path, batch: int) -> None:
    """The same records through Vault.import_records (the bulk path, no reading or planning)."""
    records = [item.record for item in read_source("mcp-memory", base / "memory.jsonl").items]
    root = base / "baseline"
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    baseline = Vault.init(root, name="bench-io", actor="bench", register=False)
    began, cpu = time.perf_counter(), time.process_time()
    batches = baseline.import_records(records, source="bench", batch_size=batch)
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    baseline.close()
    facts = sum(r.type == "fact" for r in records)
    print(json.dumps({"facts": facts, "seconds": seconds, "cpu": cpu, "commits": len(batches),
                      "load": os.getloadavg()[0]}))


def _import(base: Path, batch: int) -> None:
    root = base / "vault"
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    vault = Vault.init(root, name="bench-io", actor="bench", register=False)
    began, cpu = time.perf_counter(), time.process_time()
    summary = import_source(vault, "mcp-memory", base / "memory.jsonl", options=ImportOptions(batch_size=batch))
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    began = time.perf_counter()
    again = import_source(vault, "mcp-memory", base / "memory.jsonl")
    vault.close()
    print(json.dumps({"facts": summary.made["fact"], "made": summary.made, "seconds": seconds, "cpu": cpu,
                      "commits": len(summary.commits), "load": os.getloadavg()[0],
                      "again": time.perf_counter() - began, "again_commits": len(again.commits)}))


def _export(base: Path) -> None:
    vault = Vault.open(base / "vault")
    cache = vault.cache()
    assert cache is not None
    began = time.perf_counter()
    files = cache.rebuild()
    rebuild = time.perf_counter() - began
    began = time.perf_counter()
    pairs = export_pairs(vault, ExportWorld())
    with open(base / "export.jsonl", "w", encoding="utf-8") as out:
        out.writelines(render_export(pairs, "jsonl", vault_name=vault.name))
    export = time.perf_counter() - began
    vault.close()
    print(json.dumps({"files": files, "rebuild": rebuild, "records": len(pairs), "export": export}))


def _child(step: str, base: Path, batch: int) -> dict[str, Any]:
    """Run one step in a fresh process, as a command would (no objects or libgit2 cache of another step)."""
    out = subprocess.run([sys.executable, __file__, "--step", step, "--dir", str(base), "--batch", str(batch)],
                         check=True, capture_output=True, text=True).stdout
    return cast(dict[str, Any], json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--step", choices=("baseline", "import", "export"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step is not None:
        {"baseline": lambda: _baseline(args.dir, args.batch), "import": lambda: _import(args.dir, args.batch),
         "export": lambda: _export(args.dir)}[args.step]()
        return
    with tempfile.TemporaryDirectory(prefix="am-bench-io-") as tmp:
        base = Path(tmp)
        write_source(base / "memory.jsonl", args.observations)
        b = _child("baseline", base, args.batch)
        base_rate = b["facts"] / b["seconds"]
        print(f"baseline, Vault.import_records of the same records: {base_rate:,.0f} facts/s in {b['commits']} "
              f"commits ({b['facts'] / b['cpu']:,.0f} facts per CPU second; {b['load']:.1f} load average)")
        i = _child("import", base, args.batch)
        rate = i["facts"] / i["seconds"]
        print(f"import mcp-memory: {i['facts']} facts, {i['made']['topic']} topics, {i['made']['relation']} "
              f"relations in {i['commits']} commits: {i['seconds']:.1f} s = {rate:,.0f} facts/s "
              f"= {rate / 1000:.2f}x the 1,000 facts/s target, {rate / base_rate:.2f}x the bulk path "
              f"({i['facts'] / i['cpu']:,.0f} facts per CPU second = "
              f"{(i['facts'] / i['cpu']) / (b['facts'] / b['cpu']):.2f}x the bulk path's; {i['load']:.1f} load average)")
        print(f"re-import (writes nothing, {i['again_commits']} commits): {i['again']:.1f} s")
        e = _child("export", base, args.batch)
        print(f"full cache rebuild ({e['files']} files): {e['rebuild']:.1f} s; export of {e['records']} records to "
              f"JSONL: {e['export']:.1f} s = {e['export'] / e['rebuild']:.2f}x the rebuild (target <= 2.0)")


if __name__ == "__main__":
    main()
