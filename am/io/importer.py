"""`am import`: read a source, set it against the vault, write what is new in batched commits.

The ids a reader makes are stable, so the vault itself is the import's memory:
a record whose id is already there is not written again. That makes a
re-import add no commit, and a rerun after an interrupted import (kill -9
between two batches, or inside one) write exactly what the first run had left:
the vault ends as one clean run would leave it. Each batch is one commit
(``Am-Op: import.batch``) through ``Vault.import_batch``, so Git's index and the
cache are updated once a batch, not once a record (PERF.md).

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import InvalidRecordError, UsageError
from am.io.names import refuse_clashes, resolve_topics
from am.io.source import SYSTEMS, Aside, Item, SourceRead
from am.records.ids import check_record_path, record_path
from am.records.model import Fact, Record, Relation, Topic, replace
from am.records.writes import batch_bounds

if TYPE_CHECKING:
    from am.vault import Vault

__all__ = ["SECRET_POLICIES", "ImportOptions", "ImportSummary", "import_source", "read_source"]

Progress = Callable[[int, int], None]
SECRET_POLICIES = ("refuse", "redact", "allow")
_ORDER = {"topic": 0, "fact": 1, "relation": 2}


@dataclass(frozen=True)
class ImportOptions:
    """How to import: batch size, what to do with suspected credentials, whether to write at all."""

    batch_size: int = 1000
    secrets: str = "refuse"
    dry_run: bool = False
    topic_map: tuple[tuple[str, str], ...] = ()  # --map NAME=ID: (name key, the vault's topic id)


@dataclass
class ImportSummary:
    """What an import read, made, merged and left aside, and the commits it wrote."""

    system: str
    source: str
    read: dict[str, int]
    made: dict[str, int]
    merged: int = 0
    updated: int = 0
    already: int = 0
    duplicates: int = 0
    redacted: int = 0
    restored: int = 0  # files of am's own export (session logs, settings) written
    aside: list[Aside] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the summary."""
        return {
            "system": self.system, "source": self.source, "read": dict(sorted(self.read.items())),
            "made": self.made, "restored_files": self.restored, "merged": self.merged, "updated": self.updated,
            "already_imported": self.already, "skipped_duplicates": self.duplicates, "redacted": self.redacted,
            "left_aside": [{"origin": a.origin, "reason": a.reason} for a in self.aside],
            "commits": self.commits, "dry_run": self.dry_run,
        }

    def lines(self) -> list[str]:
        """Return the summary for people, one line each."""
        would = "would make" if self.dry_run else "made"
        read = ", ".join(f"{what}: {n}" for what, n in sorted(self.read.items())) or "nothing"
        made = ", ".join(f"{n} {t}{'s' * (n != 1)}" for t, n in self.made.items())
        out = [f"read from {self.system} ({self.source}): {read}",
               f"{would}: {made}" + ("" if self.dry_run else f" in {len(self.commits)} "
                                    f"commit{'s' * (len(self.commits) != 1)}")]
        if self.merged:
            out.append(f"merged: {self.merged} topic{'s' * (self.merged != 1)} already in the vault (kept as they are)")
        if self.updated:
            out.append(f"updated: {self.updated} fact{'s' * (self.updated != 1)} of the vault marked superseded")
        if self.already:
            out.append(f"already imported: {self.already} record{'s' * (self.already != 1)} (not written again)")
        if self.duplicates:
            out.append(f"skipped duplicates: {self.duplicates} fact{'s' * (self.duplicates != 1)} the vault (or this "
                       "import) already holds: same statement, topics, repo and branch (not written)")
        if self.restored:
            out.append(f"{'would restore' if self.dry_run else 'restored'}: {self.restored} "
                       f"file{'s' * (self.restored != 1)} (session logs, settings)")
        if self.redacted:
            out.append(f"redacted: {self.redacted} record{'s' * (self.redacted != 1)} had credentials masked")
        out.append(f"left aside: {len(self.aside)}")
        out += [f"  {a.origin}: {a.reason}" for a in self.aside]
        return out


def read_source(system: str, path: Path) -> SourceRead:
    """Read a source with its system's reader (no vault needed)."""
    if system not in SYSTEMS:
        raise UsageError(f"unknown system {system!r}", hint=f"use one of: {', '.join(SYSTEMS)}")
    if system == "mcp-memory":
        from am.io.read_mcp import read_mcp_memory as reader
    elif system == "basic-memory":
        from am.io.read_basic import read_basic_memory as reader
    elif system == "openchronicle":
        from am.io.read_chronicle import read_openchronicle as reader
    elif system == "openclaw":
        from am.io.read_claw import read_openclaw as reader
    elif system == "lossless":
        from am.io.read_lossless import read_lossless as reader
    elif system == "supermemory":
        from am.io.read_supermemory import read_supermemory as reader
    elif system == "markdown":
        from am.io.read_markdown import read_markdown as reader
    else:
        from am.io.read_jsonl import read_jsonl as reader
    return reader(path)


Found = dict[str, tuple[PurePosixPath, Record]]


def _existing(vault: Vault, ids: Sequence[str]) -> tuple[Found, Found]:
    """Return the vault's committed records with these ids (the first by path, as lookups do), and the uncommitted.

    A file in the work tree that is not committed does not count as there: it is
    what a killed import left behind, and the rerun commits it (the same bytes,
    so the write path accepts it; a person's different edit there is refused as
    dirty). Those are returned second, for ``_as_left``.
    """
    found: Found = {}
    left: Found = {}
    cache = vault.cache()
    if cache is not None:
        cache.refresh()  # an edit made within the last second counts too
        # One indexed lookup an id: linear (an "id IN (json_each)" query was quadratic at 10k ids).
        pairs = [got for rid in dict.fromkeys(ids) if (got := cache.get(rid)) is not None]
    else:
        wanted = set(ids)
        pairs = [(p, r) for p, r in vault.iter_records() if r.id in wanted]
    head = vault.store.head()
    if head is None:
        return found, left
    # The committed paths of the folders these records sit in, read from HEAD's tree in one walk a folder
    # (a blob_id() per path looks the commit up each time: ~1 ms, and growing with the vault).
    folders = sorted({str(path.parent) for path, _ in pairs})
    committed = {p for p, _ in vault.store.tree_files(folders, commit=head)}
    for path, record in pairs:
        if record.id not in found and str(path) in committed:
            found[record.id] = (path, record)
        elif str(path) not in committed:
            left.setdefault(record.id, (path, record))
    return found, left


def _as_left(item: Item, left: tuple[PurePosixPath, Record] | None) -> Item:
    """Give a record the time of the uncommitted copy a killed run left, when the time is all that differs.

    A source that records no time gives its file's modification time, and a
    fact's day folder with it: a source touched between the killed run and the
    rerun would otherwise give other bytes at the same path (refused as an
    uncommitted change) or the same id at another path.
    """
    if left is None or left[1].created == item.record.created:
        return item
    record = replace(item.record, created=left[1].created)
    return Item(record, item.origin, item.path, item.defined) if record == left[1] else item


def _screen(record: Record, policy: str) -> tuple[Record | None, str | None, bool]:
    """Apply the secrets policy: (record to write or None, why not, whether it was redacted)."""
    if policy == "allow":
        return record, None, False
    from am.records.writes import scan_record

    findings = scan_record(record)
    if not findings:
        return record, None, False
    if policy == "refuse":
        return None, f"{record.type} {record.id}: {findings[0].describe()} (pass --redact-secrets or --allow-secret)", False
    from am.records.redact import redact_value

    # The fields writes.scan_record scans, each masked as it is scanned (a tag masked twice is kept once).
    changes: dict[str, Any] = {"body": redact_value("body", record.body),
                               "tags": tuple(dict.fromkeys(redact_value("tags", record.tags)))}
    if isinstance(record, Topic):
        changes.update(title=redact_value("title", record.title), aliases=tuple(redact_value("aliases", record.aliases)))
    if isinstance(record, Fact):
        changes.update(provenance=redact_value("provenance", record.provenance),
                       paths=tuple(redact_value("paths", record.paths)))
    if isinstance(record, (Fact, Relation)):
        changes.update(repo=redact_value("repo", record.repo), version=redact_value("version", record.version))
        if record.reason:
            changes["reason"] = redact_value("reason", record.reason)
    changes["extra"] = {k: redact_value(k, v) for k, v in record.extra.items()}
    cleaned = replace(record, **changes)
    left = scan_record(cleaned)
    if left:
        return None, f"{record.type} {record.id}: {left[0].describe()} could not be redacted", False
    return cleaned, None, True


@dataclass
class _Plan:
    writes: list[tuple[PurePosixPath, Record, str | None]]
    summary: ImportSummary


def _plan(vault: Vault, read: SourceRead, source: str, options: ImportOptions) -> _Plan:
    """Set what was read against the vault: what to write, merge, update, or leave aside."""
    summary = ImportSummary(read.system, source, dict(read.read), {"topic": 0, "fact": 0, "relation": 0},
                            aside=list(read.aside), dry_run=options.dry_run)
    existing, left = _existing(vault, [item.record.id for item in read.items])
    new: list[Item] = []
    updates: dict[str, tuple[PurePosixPath, Record]] = {}
    for item in read.items:
        record = item.record
        there = existing.get(record.id)
        if there is None:
            screened, why, redacted = _screen(record, options.secrets)
            if screened is None:
                summary.aside.append(Aside(item.origin, why or "refused"))
                continue
            summary.redacted += redacted
            new.append(Item(screened, item.origin, item.path, item.defined))
            continue
        path, old = there
        if old.type != record.type:
            summary.aside.append(Aside(item.origin, f"id {record.id} is taken by a {old.type} at {path}"))
        elif isinstance(old, Topic):
            summary.merged += 1
        elif isinstance(old, Fact) and isinstance(record, Fact) and record.superseded_by and not old.superseded_by:
            # The source superseded an entry after it was first imported: the vault's fact learns it.
            status = "superseded" if old.status == "active" else old.status
            updates[record.id] = (path, replace(old, superseded_by=record.superseded_by, status=status,
                                                reason=old.reason or record.reason))
        else:
            summary.already += 1
    # References to topics the source only names reach the vault's topics of those names (and --map's).
    new, resolved, renamed = resolve_topics(vault, new, dict(options.topic_map), summary.aside)
    summary.merged += len(resolved)
    if renamed:  # a relation now between the vault's topics may be one the vault holds
        held = _existing(vault, sorted(renamed))[0]
        summary.already += sum(item.record.id in held for item in new)
        new = [item for item in new if item.record.id not in held]
    before = len(summary.aside)
    new = refuse_clashes(vault, new, summary.aside, _path_of)  # a clashing topic is refused alone
    if read.system != "jsonl" or len(summary.aside) > before:  # am's own export is written as it was
        new = _consistent(new, set(existing) | set(resolved.values()), summary)
    new = _without_twins(vault, new, summary)
    _check_keys(new)
    writes: list[tuple[PurePosixPath, Record, str | None]] = []
    for item in sorted(new, key=lambda i: _ORDER[i.record.type]):
        item = _as_left(item, left.get(item.record.id))
        writes.append((_path_of(item), item.record, None))
        summary.made[item.record.type] += 1
    written = {r.id for _, r, _ in writes}
    for rid, (path, record) in sorted(updates.items()):
        assert isinstance(record, Fact)
        if record.superseded_by in written or record.superseded_by in existing:
            writes.append((path, record, vault.store.blob_id(path)))
            summary.updated += 1
    return _Plan(writes, summary)


def _consistent(items: list[Item], existing: set[str], summary: ImportSummary) -> list[Item]:
    """Drop what would point at a record that is neither written nor in the vault (left aside before)."""
    while True:
        present = existing | {i.record.id for i in items}
        kept: list[Item] = []
        for item in items:
            r = item.record
            if isinstance(r, Fact):
                missing = [t for t in r.topics if t not in present]
                if missing:
                    summary.aside.append(Aside(item.origin, f"fact {r.id}: its topic {missing[0]} was left aside"))
                    continue
                if any(s not in present for s in r.supersedes) or (r.superseded_by and r.superseded_by not in present):
                    gone = [s for s in r.supersedes if s not in present]
                    extra = dict(r.extra)
                    if gone:
                        extra["source_supersedes"] = gone
                    by = r.superseded_by if r.superseded_by in present else None
                    if r.superseded_by and by is None:
                        extra["source_superseded_by"] = r.superseded_by
                    status = "active" if r.status == "superseded" and by is None else r.status
                    r = replace(r, supersedes=tuple(s for s in r.supersedes if s in present), superseded_by=by,
                                status=status, extra=extra)
                    item = Item(r, item.origin, item.path, item.defined)
            elif isinstance(r, Relation) and (r.from_ not in present or r.to not in present):
                summary.aside.append(Aside(item.origin, f"relation {r.id}: an end was left aside"))
                continue
            kept.append(item)
        if len(kept) == len(items):
            return kept
        items = kept


def _without_twins(vault: Vault, items: list[Item], summary: ImportSummary) -> list[Item]:
    """Drop the holding facts that a holding fact of the vault, or an earlier one of this import, already says.

    The rule of a fact add (am/writes/duplicates.py): the statement with every run of
    whitespace one space (case counts), the same topics, repo and branch; and, unless the
    vault's ``similar:`` is allow, a holding fact of the vault's that says it in other words
    (am/writes/judge.py: same world, a shared topic; counted as a duplicate). An ended
    (superseded, expired) fact is history and is written; so is a fact another record of
    the import names (a supersession, a relation's end), so that its link holds. The
    vault is asked only for statements it has (one query for all keys, then one indexed
    lookup a candidate), so a fresh vault's import costs a set lookup a fact. The file a
    killed run left uncommitted (the cache reads the work tree) is the fact itself, not its twin.
    """
    from am.cache.rows import statement_key
    from am.writes.duplicates import HOLDING, recorded

    named: set[str] = set()
    for item in items:
        r = item.record
        if isinstance(r, Fact):
            named.update(r.supersedes, [r.superseded_by] if r.superseded_by else [])
        elif isinstance(r, Relation):
            named.update((r.from_, r.to))
    def said(f: Fact) -> tuple[str, frozenset[str], str | None, str | None]:
        return " ".join(f.body.split()), frozenset(f.topics), f.repo or None, f.version or None

    cache = vault.cache()
    seen: set[tuple[str, frozenset[str], str | None, str | None]] = set()
    keys: set[int] = set()
    if cache is not None:
        keys = cache.statement_keys()
    else:  # no usable cache: the vault's holding facts, read once (a killed run's files are this import's)
        ids = {i.record.id for i in items}
        seen = {said(f) for _, f in vault.iter_records() if isinstance(f, Fact) and f.status in HOLDING
                and f.id not in ids}
    from am.records.writes import FactDraft
    from am.writes.judge import policy, similar_to

    # A vault without facts has none to restate (a first import pays nothing for the check).
    judged = cache is not None and bool(keys) and policy(vault.files, FactDraft(text="")) != "allow"
    kept: list[Item] = []
    for item in items:
        r = item.record
        if isinstance(r, Fact) and r.status in HOLDING and r.id not in named:
            if said(r) in seen or (statement_key(r.body) in keys
                                   and recorded(vault.files, r.body, r.topics, r.repo, r.version, besides=r.id) is not None):
                summary.duplicates += 1
                continue
            if judged and (like := similar_to(vault.files, r.body, r.topics, r.repo, r.version, besides=(r.id,))) \
                    and like[0].kind == "same":  # a holding fact says it in other words (am/writes/judge.py)
                summary.duplicates += 1
                continue
            seen.add(said(r))
        kept.append(item)
    return kept


def _check_keys(items: list[Item]) -> None:
    """Refuse the import when a record holds a key (or a value) that am cannot write as YAML that reads back.

    The canonical renderer quotes whatever key needs it (``"!x"``, ``"[k]"``, ``""``); what it
    refuses is a key longer than a YAML key may be, text that is not text (a lone surrogate) and
    a value nested deeper than am reads. The keys a record brings beyond am's own are rendered
    here once, so that every such entry is named at once, before anything is written
    (docs/import.md), not found by the batch that would write it.
    """
    from am.records.frontmatter import dump

    refused: list[str] = []
    for item in items:
        record = item.record
        if not record.extra:
            continue
        try:
            dump(record.extra)
        except InvalidRecordError as err:
            key = err.field or ""
            shown = repr(key) if len(key) <= 60 else f"{key[:40]!r}... ({len(key):,} characters)"
            refused.append(f"{record.type} {record.id} ({item.origin}): key {shown}: {err.detail}")
    if refused:
        s = "s" * (len(refused) != 1)
        raise InvalidRecordError(f"{len(refused)} record{s} of the import hold{'s' * (not s)} a key or value am cannot "
                                 "write so that it reads back; nothing was written:\n  " + "\n  ".join(refused),
                                 hint="rename the key in the source (at most 1,024 characters as written, no lone "
                                      "surrogate) or drop it, flatten a value nested that deep; then import again")


def _path_of(item: Item) -> PurePosixPath:
    home = record_path(item.record.type, item.record.id, item.record.created)
    if item.path is not None:
        try:
            path = check_record_path(item.path)
        except InvalidRecordError:
            return home
        if path.parts[0] == home.parts[0]:  # a record's folder is its type's (am check: wrong-folder)
            return path
    return home


def import_source(vault: Vault, system: str, path: Path, *, options: ImportOptions = ImportOptions(),
                  progress: Progress | None = None) -> ImportSummary:
    """Import a source into the vault: one commit per batch, nothing written twice."""
    if options.secrets not in SECRET_POLICIES:
        raise UsageError(f"unknown secrets policy {options.secrets!r}", hint=f"use one of: {', '.join(SECRET_POLICIES)}")
    if options.batch_size < 1:
        raise UsageError("--batch-size must be 1 or more")
    read = read_source(system, path)
    plan = _plan(vault, read, path.name or str(path), options)
    if options.dry_run or not plan.writes:
        return _with_files(vault, read, plan.summary, path, options)
    total = len(plan.writes)
    done = 0
    bounds = batch_bounds([r.id for _, r, _ in plan.writes], options.batch_size)
    for number, chunk in enumerate((plan.writes[a:b] for a, b in bounds), start=1):
        label = f"{system} {path.name} (batch {number})"
        # Screened above with the same detectors (or allowed by the caller): not scanned twice.
        result = vault.import_batch(chunk, source=label, allow_secrets=True)
        plan.summary.commits.append(result.commit)
        done += len(chunk)
        if progress is not None:
            progress(done, total)
    return _with_files(vault, read, plan.summary, path, options)


def _with_files(vault: Vault, read: SourceRead, summary: ImportSummary, path: Path,
                options: ImportOptions) -> ImportSummary:
    """Restore the session logs and settings am's own export carries, after its records (one commit)."""
    if not read.files:
        return summary
    from am.io.vaultfiles import restore_files

    count, aside, commit = restore_files(vault, read.files, source=f"{read.system} {path.name}",
                                         dry_run=options.dry_run, secrets=options.secrets)
    summary.restored = count
    summary.aside += aside
    if commit is not None:
        summary.commits.append(commit)
    return summary
