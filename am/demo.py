"""Materialise the example vault (vaults/demo) with a short, realistic history.

Records are committed in the order they were created, each as the am write
that would have made it (a supersede rewrites the old fact in the same commit),
with the commit's author and date taken from the record.
"""

from __future__ import annotations

from dataclasses import replace
from importlib import resources
from pathlib import Path, PurePosixPath

from am.errors import UsageError
from am.gitstore import Change
from am.ids import parse_timestamp
from am.model import Fact, Record, Relation, Topic
from am.records import parse_record, render_record
from am.vault import Vault

__all__ = ["demo_source", "materialise_demo"]


def demo_source() -> Path:
    """Return the folder that holds the demo vault's files."""
    try:
        root = Path(str(resources.files("am._demo")))
        if (root / "topics").is_dir():
            return root
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "vaults" / "demo"


def _actor(record: Record) -> str:
    provenance = getattr(record, "provenance", "human")
    if provenance.startswith("session:"):
        return provenance.split(":", 1)[1].rsplit("-", 1)[0]
    return "li-wei"


def materialise_demo(dest: Path, *, register: bool = True) -> Vault:
    """Create a vault at ``dest`` holding the demo records, committed one write at a time."""
    dest = dest.expanduser().resolve()
    if dest.exists() and any(dest.iterdir()):
        raise UsageError(f"{dest} is not empty", hint="pick a new folder, e.g. am demo /tmp/am-demo")
    source = demo_source()
    records: list[tuple[PurePosixPath, Record]] = []
    for path in sorted(source.rglob("*.md")):
        rel = PurePosixPath(path.relative_to(source).as_posix())
        records.append((rel, parse_record(path.read_text(encoding="utf-8"), str(rel))))
    if not records:
        raise UsageError(f"the demo vault's files are missing from {source}", hint="reinstall am")
    vault = Vault.init(dest, name="demo", register=register)
    store = vault.store
    by_id = {r.id: (p, r) for p, r in records}
    order = sorted(records, key=lambda pr: (pr[1].created or "", {"topic": 0, "relation": 1, "fact": 2}[pr[1].type]))
    for path, record in order:
        moment = parse_timestamp(record.created or "2026-09-23T12:00:00+08:00")
        offset = int(moment.utcoffset().total_seconds() // 60) if moment.utcoffset() else 0
        author = (_actor(record), f"{_actor(record)}@example.com", int(moment.timestamp()), offset)
        changes: list[Change] = []
        if isinstance(record, Fact) and record.superseded_by:
            # First written as an ordinary active fact; the supersede comes later.
            record = replace(record, status="active", superseded_by=None, reason=None)
        changes.append(Change(path, render_record(record).encode("utf-8")))
        ids = [record.id]
        noun = {Topic: "topic", Fact: "fact", Relation: "relation"}[type(record)]
        verb, subject, reason = "add", None, None
        if isinstance(record, Fact) and record.supersedes:
            for old_id in record.supersedes:
                old_path, old = by_id[old_id]
                changes.append(Change(old_path, render_record(old).encode("utf-8"),
                                      base=store.blob_id(old_path)))
                ids.append(old_id)
            verb, reason = "supersede", record.reason
            subject = f"fact: supersede {', '.join(record.supersedes)} -> {record.id}"
        saved = vault.actor
        vault.actor = author[0]
        message = vault._message(noun, verb, ids, subject=subject, reason=reason,
                                 summary=record.body if verb == "add" else None)
        vault.actor = saved
        with store.write_lock(op="demo"):
            store.commit(changes, message=message, author=author, committer=author)
    return Vault.open(dest)
