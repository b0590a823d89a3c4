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
second of this process are printed beside them.

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="am-bench-io-") as tmp:
        base = Path(tmp)
        source = base / "memory.jsonl"
        write_source(source, args.observations)
        # Baseline: the same records through Vault.import_records (the bulk path, no reading or planning).
        records = [item.record for item in read_source("mcp-memory", source).items]
        base_root = base / "baseline"
        subprocess.run(["git", "init", "-q", "-b", "main", str(base_root)], check=True)
        baseline = Vault.init(base_root, name="bench-io", actor="bench", register=False)
        began, cpu = time.perf_counter(), time.process_time()
        batches = baseline.import_records(records, source="bench", batch_size=args.batch)
        base_facts = sum(r.type == "fact" for r in records)
        base_rate = base_facts / (time.perf_counter() - began)
        cpu = time.process_time() - cpu
        baseline.close()
        print(f"baseline, Vault.import_records of the same records: {base_rate:,.0f} facts/s in {len(batches)} "
              f"commits ({base_facts / cpu:,.0f} facts per CPU second; {os.getloadavg()[0]:.1f} load average)")
        root = base / "vault"
        subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
        vault = Vault.init(root, name="bench-io", actor="bench", register=False)
        began, cpu = time.perf_counter(), time.process_time()
        summary = import_source(vault, "mcp-memory", source, options=ImportOptions(batch_size=args.batch))
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        facts = summary.made["fact"]
        rate = facts / seconds
        print(f"import mcp-memory: {facts} facts, {summary.made['topic']} topics, {summary.made['relation']} "
              f"relations in {len(summary.commits)} commits: {seconds:.1f} s = {rate:,.0f} facts/s "
              f"= {rate / 1000:.2f}x the 1,000 facts/s target, {rate / base_rate:.2f}x the bulk path "
              f"(this process's CPU: {cpu:.1f} s = {facts / cpu:,.0f} facts per CPU second; "
              f"{os.getloadavg()[0]:.1f} load average)")
        began = time.perf_counter()
        again = import_source(vault, "mcp-memory", source)
        print(f"re-import (writes nothing, {len(again.commits)} commits): {time.perf_counter() - began:.1f} s")
        vault.close()

        vault = Vault.open(root)
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
        print(f"full cache rebuild ({files} files): {rebuild:.1f} s; export of {len(pairs)} records to JSONL: "
              f"{export:.1f} s = {export / rebuild:.2f}x the rebuild (target <= 2.0)")
        vault.close()


if __name__ == "__main__":
    main()
