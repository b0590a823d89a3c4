"""Generate a synthetic vault for benchmarks: N facts in English and Chinese, with links.

The vault is real: files written in am's canonical form and committed in large
batches through ``GitStore.commit`` (so Git's index is right and the tree is
sharded by day as am writes it). About a third of the facts are in Chinese,
most link a topic with ``[[id]]``, and about 10% are superseded by a later fact.

Usage: python bench/corpus.py DEST --facts 10000 [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from am.git import Change, GitStore
from am.records.ids import record_path
from am.records.model import Fact, Record, Relation, Topic
from am.records.codec import render_record

__all__ = ["make_records", "write_vault"]

_EN_SUBJECTS = ["the user service", "the billing job", "the session cache", "the search API", "the mobile app",
                "the deploy pipeline", "the rate limiter", "the query planner", "the auth proxy", "the nightly export"]
_EN_VERBS = ["depends on", "calls", "retries", "caches", "logs to", "was moved to", "replaced", "batches requests to",
             "times out against", "reads config from"]
_EN_TAILS = ["with a 30-minute TTL", "on the main branch only", "after the October migration",
             "unless the feature flag is off", "and falls back to the database", "behind a 5 second timeout",
             "for every tenant", "since release 2.4", "when the queue is full", "in the staging cluster"]
_ZH_SUBJECTS = ["用户服务", "计费任务", "会话缓存", "搜索接口", "移动端", "发布流水线", "限流模块", "查询规划器",
                "认证代理", "夜间导出"]
_ZH_VERBS = ["依赖", "调用", "重试", "缓存", "写日志到", "迁移到", "替换了", "批量请求", "超时于", "读取配置自"]
_ZH_TAILS = ["，缓存时间为三十分钟。", "，只在主分支上。", "，在十月迁移之后。", "，除非关闭了功能开关。",
             "，失败时回退到数据库。", "，超时为五秒。", "，对每个租户都生效。", "，从 2.4 版本开始。",
             "，在队列满的时候。", "，在预发布集群中。"]
_KINDS = ["project", "tool", "person", "concept", "decision"]
_RELS = ["depends-on", "part-of", "references", "authored-by", "belongs-to"]
_TZ = timezone(timedelta(hours=8))


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def make_records(facts: int, *, seed: int = 1, start: datetime | None = None,
                 days: int = 730) -> list[Record]:
    """Return topics, facts (10% superseded) and relations for a synthetic vault."""
    rng = random.Random(seed)
    start = start or datetime(2024, 1, 1, 9, 0, tzinfo=_TZ)
    n_topics = max(10, facts // 50)
    topics: list[Topic] = []
    for i in range(n_topics):
        kind = _KINDS[i % len(_KINDS)]
        zh = i % 3 == 0
        title = f"{rng.choice(_ZH_SUBJECTS)}{i}" if zh else f"{kind.title()} {i}"
        topics.append(Topic(id=f"{kind}-t{i:05d}", kind=kind, title=title,
                            aliases=(f"T{i}",) if i % 4 == 0 else (), tags=("bench",) if i % 5 == 0 else (),
                            created=_stamp(start), body=f"Topic number {i}.\n"))
    ids = [t.id for t in topics]
    out: list[Record] = list(topics)
    fact_list: list[Fact] = []
    step = days * 86400 / max(facts, 1)
    for i in range(facts):
        created = start + timedelta(seconds=int(i * step))
        about = rng.sample(ids, 2 if i % 4 == 0 else 1)
        link = rng.choice(ids)
        if i % 3 == 0:
            text = f"{rng.choice(_ZH_SUBJECTS)}{rng.choice(_ZH_VERBS)}[[{link}]]{rng.choice(_ZH_TAILS)}" \
                   f"编号 {i}。"
        else:
            text = (f"{rng.choice(_EN_SUBJECTS).capitalize()} {rng.choice(_EN_VERBS)} [[{link}]] "
                    f"{rng.choice(_EN_TAILS)}. Note {i}.")
            if i % 7 == 0:
                text += " No link here, only prose about latency budgets and retries."
        fact_list.append(Fact(
            id=f"f-{created:%Y%m%d-%H%M}-{i:06x}", topics=tuple(about), body=text + "\n",
            confidence=rng.choice(["high", "medium", "low"]), provenance="human",
            repo="project-alpha" if i % 2 else None, version="main" if i % 4 == 1 else None,
            axis="subject" if i % 2 else None, tags=("perf",) if i % 11 == 0 else (),
            created=_stamp(created),
        ))
    # About 10%: fact i is superseded by fact i + 1 (a later one on the same topics).
    for i in range(0, facts - 1, 10):
        old, new = fact_list[i], fact_list[i + 1]
        fact_list[i + 1] = Fact(**{**_fields(new), "supersedes": (old.id,), "topics": old.topics,
                                   "reason": "newer observation"})
        fact_list[i] = Fact(**{**_fields(old), "status": "superseded", "superseded_by": new.id,
                               "reason": "newer observation"})
    out += fact_list
    seen: set[str] = set()
    for i in range(max(5, facts // 20)):
        a, b = rng.sample(ids, 2)
        rel = _RELS[i % len(_RELS)]
        rid = f"{a}--{rel}--{b}"
        if rid in seen:
            continue
        seen.add(rid)
        out.append(Relation(id=rid, rel=rel, from_=a, to=b, body=f"[[{a}]] {rel} [[{b}]].\n",
                            created=_stamp(start + timedelta(days=i % days))))
    return out


def _fields(record: Record) -> dict[str, object]:
    from dataclasses import fields

    return {f.name: getattr(record, f.name) for f in fields(record)}


def write_vault(dest: Path, facts: int, *, seed: int = 1, batch: int = 20000) -> Path:
    """Create a vault at ``dest`` holding the synthetic records, committed in big batches."""
    from am.vault import Vault

    vault = Vault.init(dest, name="bench", actor="bench", register=False)
    store: GitStore = vault.store
    records = make_records(facts, seed=seed)
    for first in range(0, len(records), batch):
        chunk = records[first:first + batch]
        changes = [Change(record_path(r.type, r.id, r.created), render_record(r).encode("utf-8"))
                   for r in chunk]
        with store.write_lock(op="bench"):
            store.commit(changes, message=f"bench: {len(chunk)} records\n\nAm-Op: import.batch\nAm-Actor: bench\n",
                         author=("bench", "bench@localhost"))
    vault.close()
    return dest


def print_after_before(envs: object, med: dict[str, float], medc: dict[str, float],
                       outputs: dict[str, tuple[object, ...]]) -> None:
    """Print the after/before ratios of a run that timed both revisions, and whether their outputs agree."""
    if "before" in envs:  # type: ignore[operator]
        same = "identical" if outputs["before"] == outputs["after"] else "DIFFERENT"
        print(f"  after/before: {med['after'] / med['before']:.2f}x wall, "
              f"{medc['after'] / medc['before']:.2f}x CPU; outputs {same}")


def print_load() -> None:
    """Print the load average the figures were taken at (the machines are shared)."""
    import os

    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")


def main() -> None:
    """Write a synthetic vault from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument("--facts", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    began = time.perf_counter()
    write_vault(args.dest, args.facts, seed=args.seed)
    print(f"wrote {args.facts} facts to {args.dest} in {time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    main()
