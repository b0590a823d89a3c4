"""Materialise the example vault (vaults/demo) with a short, realistic history.

Records are committed in the order they were created, each as the am write
that would have made it (a supersede rewrites the old fact in the same commit),
with the commit's author and date taken from the record.

Beside the vault, the demo builds the code repository the facts talk about
(``project-alpha``: main, a merged ``feat-batch`` and an open
``feat-rate-limit``) and registers it, so ``am slice`` resolves worlds through
a real commit graph. Its commits are built from fixed content, authors and
dates, so their ids are the same on every machine and the demo facts can name
them.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path, PurePosixPath

from am.errors import CollisionError, UsageError
from am.git import Change, GitStore
from am.registry import Registry
from am.records.ids import parse_timestamp
from am.records.model import Fact, Record, Relation, Topic
from am.records.codec import parse_record, render_record
from am.vault import Vault

__all__ = ["DEMO_CODE_COMMITS", "build_demo_code", "demo_source", "materialise_demo"]

_USERS_V1 = """\"\"\"User lookups.\"\"\"


def getUser(id):
    return db.users.get(id)
"""
_USERS_V2 = _USERS_V1 + """

def getUsers(ids):
    if len(ids) > 100:
        raise ValueError("at most 100 ids per call")
    return [db.users.get(i) for i in ids]
"""
_CACHE = """\"\"\"Session cache in Redis.\"\"\"

TTL_SECONDS = 30 * 60
"""
_LIMITS = """\"\"\"Token bucket per API key.\"\"\"

RATE_PER_SECOND = 50
BURST = 100
"""
# (label, branch, parents by label, files, message, ISO time +08:00)
_CODE_HISTORY: tuple[tuple[str, str, tuple[str, ...], dict[str, str], str, str], ...] = (
    ("C0", "main", (), {"README.md": "# Alpha\n\nThe user service.\n", "src/api/users.py": _USERS_V1},
     "Alpha: user lookup service", "2026-09-20T10:00:00"),
    ("C1", "main", ("C0",), {"src/session/cache.py": _CACHE}, "session: cache sessions in Redis",
     "2026-09-23T11:40:00"),
    ("C2", "feat-batch", ("C1",), {"src/api/users.py": _USERS_V2}, "users: batch lookup getUsers(ids)",
     "2026-10-02T09:00:00"),
    ("C3", "main", ("C1", "C2"), {"src/api/users.py": _USERS_V2}, "Merge branch 'feat-batch'",
     "2026-10-04T15:00:00"),
    ("C4", "feat-rate-limit", ("C3",), {"src/api/limits.py": _LIMITS}, "api: token bucket per API key",
     "2026-10-05T16:20:00"),
)
# The ids those commits get; the demo facts name them (a test checks both agree).
DEMO_CODE_COMMITS = {
    "C0": "2ebe5b77eacb0d75a26e52c19e4a2ea8018c6d9a",
    "C1": "50240f0de01e273e8556dcce21105ee297af4c55",
    "C2": "5796218db2f58c5c2a1649dee5878a29811f100a",
    "C3": "743299dd0053efdda1e181dcae7100de17640b9f",
    "C4": "ee456b77a87f3e1145c64cf65d745da7f202b351",
}


def build_demo_code(dest: Path) -> dict[str, str]:
    """Create the demo's code repository at ``dest``; return its commit ids by label."""
    from datetime import datetime

    store = GitStore.init(dest)
    ids: dict[str, str] = {}
    for label, branch, parents, files, message, when in _CODE_HISTORY:
        moment = datetime.fromisoformat(when + "+08:00")
        ids[label] = store.build_commit(
            branch, {p: t.encode() for p, t in files.items()}, parents=[ids[p] for p in parents],
            message=message + "\n", author=("Li Wei", "li-wei@example.com", int(moment.timestamp()), 480),
        )
    store.check_out("main")
    return ids


def demo_source() -> Path:
    """Return the folder that holds the demo vault's files (installed copy, else the source tree)."""
    # The wheel ships vaults/demo as the data folder am/_demo (see pyproject.toml).
    installed = Path(__file__).resolve().parent / "_demo"
    if (installed / "topics").is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / "vaults" / "demo"


def _actor(record: Record) -> str:
    provenance = getattr(record, "provenance", "human")
    if provenance.startswith("session:"):
        return provenance.split(":", 1)[1].rsplit("-", 1)[0]
    return "li-wei"


def _date_init(store: GitStore, created: str) -> None:
    """Date the vault's init commit (made just now) at the first record's time, before its back-dated history.

    A commit dated earlier than its history counts from the next well-dated one for ``--as-of``
    (docs/worlds.md): a September history on top of a December init would be in no view of September.
    """
    init = store.commit_info(store.head() or "")
    moment = parse_timestamp(created)
    utc_offset = moment.utcoffset()
    when = (init.author, init.email, int(moment.timestamp()), int(utc_offset.total_seconds() // 60) if utc_offset else 0)
    files = {path: data for path in (".am/vault.yml", ".gitignore")
             if (data := store.read_blob(path, commit=init.id)) is not None}
    store.build_commit(store.head_ref().removeprefix("refs/heads/"), files, parents=[], message=init.message,
                       author=when)


def materialise_demo(dest: Path, *, register: bool = True, code: Path | None = None,
                     replace_names: bool = False) -> Vault:
    """Create a vault at ``dest`` holding the demo records, and the code repository beside it."""
    dest = dest.expanduser().resolve()
    code = (code or dest.with_name(dest.name + "-code")).expanduser().resolve()
    for folder in (dest, code):
        if folder.exists() and any(folder.iterdir()):
            raise UsageError(f"{folder} is not empty", hint="pick a new folder, e.g. am demo /tmp/am-demo")
    if register:
        # Refuse before building anything when a name is taken by another demo (DESIGN §2: never re-point silently).
        registry = Registry.load()
        taken = []
        for table, name, where in (("repos", "project-alpha", code), ("vaults", "demo", dest)):
            old = getattr(registry, table).get(name)
            if old is not None and not replace_names and Path(old).expanduser().resolve() != where:
                taken.append(f"{table[:-1]} name {name!r} is already registered for {old}")
        if taken:
            raise CollisionError("; ".join(taken), hint="pass --replace to point "
                                 f"{'them' if len(taken) > 1 else 'it'} at the new demo, or cd into the first demo")
    build_demo_code(code)
    if register:
        Registry.load().add_repo("project-alpha", code, vault="demo", replace=replace_names)
    source = demo_source()
    records: list[tuple[PurePosixPath, Record]] = []
    for path in sorted(source.rglob("*.md")):
        rel = PurePosixPath(path.relative_to(source).as_posix())
        records.append((rel, parse_record(path.read_text(encoding="utf-8"), str(rel))))
    if not records:
        raise UsageError(f"the demo vault's files are missing from {source}", hint="reinstall am")
    vault = Vault.init(dest, name="demo", register=register, replace=replace_names)
    store = vault.store
    by_id = {r.id: (p, r) for p, r in records}
    order = sorted(records, key=lambda pr: (pr[1].created or "", {"topic": 0, "relation": 1, "fact": 2}[pr[1].type]))
    _date_init(store, order[0][1].created or "2026-09-23T12:00:00+08:00")
    for rel_path, record in order:
        moment = parse_timestamp(record.created or "2026-09-23T12:00:00+08:00")
        utc_offset = moment.utcoffset()
        offset = int(utc_offset.total_seconds() // 60) if utc_offset else 0
        author = (_actor(record), f"{_actor(record)}@example.com", int(moment.timestamp()), offset)
        changes: list[Change] = []
        if isinstance(record, Fact) and record.superseded_by:
            # First written as an ordinary active fact; the supersede comes later.
            record = replace(record, status="active", superseded_by=None, reason=None)
        changes.append(Change(rel_path, render_record(record).encode("utf-8")))
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
        message = vault.authorship.message(noun, verb, ids, subject=subject, reason=reason,
                                 summary=record.body if verb == "add" else None)
        vault.actor = saved
        with store.write_lock(op="demo"):
            store.commit(changes, message=message, author=author, committer=author)
    return Vault.open(dest)
