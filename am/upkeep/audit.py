"""Audit and undo from Git itself: log, history, blame and undo of one write.

Every am write is one commit whose trailers name the operation, the records
and the actor (DESIGN §4), so the audit trail is ``git log``. Commits made by
hand (Obsidian, the git CLI) have no trailers; they show as op ``manual`` with
the author as actor and the records read from the files they changed.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from am.errors import InvalidRecordError, NotFoundError, UsageError
from am.records.ids import RECORD_DIRS, check_id

__all__ = [
    "LogEntry",
    "Version",
    "History",
    "FieldBlame",
    "UndoResult",
    "entry_of",
    "log_entries",
    "record_history",
    "blame",
    "undo",
    "parse_since",
    "shallow_note",
    "SHALLOW_OP",
    "AlreadyUndoneError",
]

_TOPS = tuple(RECORD_DIRS.values())
# The op of a record's oldest version in a shallow clone: as it was at the commit the clone's history stops at.
SHALLOW_OP = "shallow-base"
SHALLOW_ACTOR = "(shallow)"  # who wrote it is beyond the clone


class AlreadyUndoneError(UsageError):
    """The commit to undo is undone already: nothing to do, which `am undo` reports as done (exit 0)."""


@dataclass(frozen=True)
class LogEntry:
    """One commit of the vault as the audit trail sees it."""

    commit: str
    time: str
    actor: str
    op: str
    records: tuple[str, ...]
    subject: str
    reason: str | None
    manual: bool
    extra: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the entry."""
        return {
            "commit": self.commit, "time": self.time, "actor": self.actor, "op": self.op,
            "records": list(self.records), "subject": self.subject, "reason": self.reason,
            "manual": self.manual, "trailers": self.extra,
        }


def _iso(seconds: int, offset_minutes: int) -> str:
    tz = timezone(timedelta(minutes=offset_minutes))
    return datetime.fromtimestamp(seconds, tz).isoformat(timespec="seconds")


def _record_files(store: Any, info: Any) -> list[tuple[str, str, str | None, bool]]:
    """Return (path, file name's stem, blob, deleted) of each record file a commit changed against its first parent.

    Read from the trees (names and ids, no file read), in git's order; the
    blob of a deleted file is its parent's (what says whose it was).
    """
    parent = info.parents[0] if info.parents else None
    out = []
    for path, blob in store.file_changes(parent, info.id):
        p = PurePosixPath(path)
        if not p.parts or p.parts[0] not in _TOPS or p.suffix != ".md":
            continue
        deleted = blob is None
        if deleted and parent is not None:
            blob = store.blob_id(path, commit=parent)
        out.append((path, p.stem, blob, deleted))
    return out


def _record_ids(store: Any, files: list[tuple[str, str, str | None, bool]]) -> tuple[str, ...]:
    """Return the ids of the records in these files, sorted: each file's frontmatter id, else its name.

    A file's name need not be its id (readable names, a rename by hand): the
    id is read from its frontmatter at that commit (a deleted file's from the
    parent), the file name standing in when there is none.
    """
    out = []
    for path, stem, blob, _ in files:
        rid = _parse_blob(store.read_object(blob), path)[0].get("id") if blob is not None else None
        out.append(rid if isinstance(rid, str) and rid else stem)
    return tuple(dict.fromkeys(sorted(out)))


def _may_name(store: Any, files: list[tuple[str, str, str | None, bool]], record: str) -> bool:
    """Return False when no file can be the record's, without parsing one (True: parse them to know).

    A file is the record's by its name, or by an id in its frontmatter, whose
    text is in the file's bytes unless YAML spells it with an escape (a
    backslash) or folds it over lines (white space in the id).
    """
    if record.split() != [record]:
        return True
    needle = record.encode("utf-8")
    for _, stem, blob, _ in files:
        if stem == record:
            return True
        data = store.read_object(blob) if blob is not None else b""
        if needle in data or b"\\" in data:
            return True
    return False


def entry_of(store: Any, info: Any, *, records: bool = True) -> LogEntry:
    """Return the audit view of one commit (trailers, or the files a hand commit changed).

    ``records=False``: a hand commit's records are left out (who, when and what
    op, without a diff).
    """
    trailers: dict[str, list[str]] = {}
    for key, value in info.trailers():
        trailers.setdefault(key, []).append(value)
    op = trailers["Am-Op"][0] if trailers.get("Am-Op") else None
    reason = trailers["Reason"][0] if trailers.get("Reason") else None
    extra = {k: v for k, v in trailers.items() if k.startswith("Am-") and k not in ("Am-Op", "Am-Record", "Am-Actor")}
    if op is None:
        ids = _record_ids(store, _record_files(store, info)) if records else ()
        return LogEntry(info.id, _iso(info.time, info.offset), info.author, "manual", ids, info.subject,
                        reason, True, extra)
    actor = (trailers.get("Am-Actor") or [info.author])[0]
    return LogEntry(info.id, _iso(info.time, info.offset), actor, op, tuple(trailers.get("Am-Record", [])),
                    info.subject, reason, False, extra)


def parse_since(value: str) -> datetime:
    """Read a --since value: an ISO date or date-time, or a phrase such as 'yesterday' or '3 days ago'."""
    from am.cache.timephrases import parse_time

    try:
        from am.clock import now

        return parse_time(value, now=now())
    except (ValueError, InvalidRecordError, UsageError) as err:
        # The reader's message lists what it reads: said once, as the hint.
        _, _, phrases = str(err).partition("; use ")
        raise UsageError(f"cannot read --since {value!r} as a time",
                         hint=f"use {phrases}" if phrases else "use an ISO date like 2026-11-01, or a phrase like "
                              "'yesterday', '3 days ago' or '上周'") from None


def log_entries(vault: Any, *, actor: str | None = None, op: str | None = None, record: str | None = None,
                since: datetime | None = None, limit: int | None = None) -> list[LogEntry]:
    """Return the vault's commits, newest first, filtered by actor, operation, record and time."""
    out: list[LogEntry] = []
    cutoff = since.timestamp() if since is not None else None
    store = vault.store
    if actor is not None:  # an MCP client's name as people know it ("Claude Desktop") is also its actor's
        from am.writes.authorship import actor_for_client

        actors = {actor, actor_for_client(actor)}
    for info in store.walk():
        if cutoff is not None and info.time < cutoff:
            # History is walked newest first by commit time; an older commit ends the range.
            break
        # Who and what first: a hand commit's files are read only for an entry the filters keep.
        entry = entry_of(store, info, records=False)
        if actor is not None and entry.actor not in actors:
            continue
        if op is not None and not (entry.op == op or entry.op.startswith(op + ".")):
            continue
        if entry.manual:
            files = _record_files(store, info)
            if record is not None and not _may_name(store, files, record):
                continue
            entry = replace(entry, records=_record_ids(store, files))
        if record is not None and record not in entry.records:
            continue
        out.append(entry)
        if limit is not None and len(out) >= limit:
            break
    return out


@dataclass(frozen=True)
class Version:
    """One version of a record: the commit that wrote it and what it said."""

    commit: str
    time: str
    actor: str
    op: str
    path: str
    deleted: bool
    meta: dict[str, Any]
    body: str

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the version."""
        return {"commit": self.commit, "time": self.time, "actor": self.actor, "op": self.op, "path": self.path,
                "deleted": self.deleted, "frontmatter": self.meta, "body": self.body}


@dataclass(frozen=True)
class History:
    """Every version of one record, oldest first, and its supersede chain."""

    id: str
    versions: tuple[Version, ...]
    chain: tuple[str, ...]
    shallow: str | None = None  # the note of a history that starts at a shallow clone's last commit

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the history."""
        return {"id": self.id, "versions": [v.to_json() for v in self.versions], "supersede_chain": list(self.chain),
                "shallow": self.shallow}


def _parse_blob(data: bytes, path: str) -> tuple[dict[str, Any], str]:
    from am.records.codec import decode_record_bytes, parse_meta, split_frontmatter

    try:
        text = decode_record_bytes(data, path=path)
        front, body, eol = split_frontmatter(text, path=path)
        meta = parse_meta(front, eol, path=path)
        return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in meta.items()}, body
    except InvalidRecordError as err:
        return {"unreadable": str(err)}, data.decode("utf-8", "replace")


def _versions(vault: Any, record_id: str) -> Iterator[Version]:
    """Yield the versions of a record, newest first, by walking history once.

    A file is the record's when it is named after the id or its frontmatter
    says so (a file renamed by hand, a readable name); a commit that deletes
    one path of the record and writes another moved it, and shows once, under
    the new path.
    """
    store = vault.store
    needle = record_id.encode("utf-8")
    from am.git.program.partial import shallow_commits

    stops = shallow_commits(Path(store.gitdir))
    for info in store.walk():
        entry = entry_of(store, info, records=False)  # a hand commit's files are read below, once
        # A shallow clone's last commit shows every file as new: the record as it was there, whoever wrote it.
        base = info.id in stops and record_id not in entry.records
        if base:
            entry = replace(entry, op=SHALLOW_OP, actor=SHALLOW_ACTOR)
        # An am commit names every record it wrote, so the others need no diff.
        elif not entry.manual and record_id not in entry.records:
            continue
        found: list[Version] = []
        files = _record_files(store, info)
        if base and any(stem == record_id for _, stem, _, _ in files):
            files = [f for f in files if f[1] == record_id]  # its own name: no other file need be read
        for path, stem, blob, deleted in files:
            named = stem == record_id
            if deleted:
                if named or _holds(store, blob, needle, path, record_id):
                    found.append(Version(info.id, entry.time, entry.actor, entry.op, path, True, {}, ""))
                continue
            data = store.read_object(blob)
            if not named and needle not in data:
                continue
            meta, body = _parse_blob(data, path)
            if meta.get("id", record_id if named else None) != record_id:
                continue
            found.append(Version(info.id, entry.time, entry.actor, entry.op, path, False, meta, body))
        if any(not v.deleted for v in found):  # moved, not deleted
            found = [v for v in found if not v.deleted]
        yield from found


def _holds(store: Any, blob: str | None, needle: bytes, path: str, record_id: str) -> bool:
    """Return whether a blob is a version of the record (its frontmatter id)."""
    if blob is None:
        return False
    data = store.read_object(blob)
    return needle in data and _parse_blob(data, path)[0].get("id") == record_id


def _chain(vault: Any, record_id: str) -> tuple[str, ...]:
    """Return the supersede chain through a fact, oldest first (just the id for other records)."""
    from am.records.model import Fact

    def fact(rid: str) -> Fact | None:
        try:
            path = vault.locate(rid)
            rec = vault.read_path(path) if path is not None else None
        except (InvalidRecordError, NotFoundError):
            return None
        return rec if isinstance(rec, Fact) else None

    chain = [record_id]
    seen = {record_id}
    current = fact(record_id)
    while current is not None and current.supersedes:
        prev = current.supersedes[0]
        if prev in seen:
            break
        chain.insert(0, prev)
        seen.add(prev)
        current = fact(prev)
    current = fact(record_id)
    while current is not None and current.superseded_by and current.superseded_by not in seen:
        nxt = current.superseded_by
        chain.append(nxt)
        seen.add(nxt)
        current = fact(nxt)
    return tuple(chain)


def record_history(vault: Any, record_id: str) -> History:
    """Return every version of a record across Git history, oldest first, and its supersede chain."""
    check_id(record_id)
    versions = list(_versions(vault, record_id))
    note = shallow_note(vault)
    if not versions:
        raise NotFoundError(f"no record with id {record_id!r} in the vault's history"
                            + (f" ({note})" if note else ""), hint="list them with: am fact list / am topic list")
    versions.reverse()
    based = versions[0].op == SHALLOW_OP
    return History(record_id, tuple(versions), _chain(vault, record_id), note if based else None)


def shallow_note(vault: Any) -> str | None:
    """Return what to say in a shallow clone of the vault (git clone --depth): where its history stops, and the fix."""
    from am.git.program.partial import UNSHALLOW, shallow_commits

    stops = sorted(shallow_commits(Path(vault.store.gitdir)))
    if not stops:
        return None
    return (f"the vault is a shallow clone: its history stops at {', '.join(s[:10] for s in stops)}, and what came "
            f"before is not here (a record's oldest version shown there, op {SHALLOW_OP}, actor {SHALLOW_ACTOR}, is "
            f"the record as it was at that commit); for the whole history run {UNSHALLOW} in the vault")


@dataclass(frozen=True)
class FieldBlame:
    """Who last set one field of a record, and in which commit."""

    field: str
    value: Any
    commit: str
    actor: str
    time: str
    op: str

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the blame line."""
        return {"field": self.field, "value": self.value, "commit": self.commit, "actor": self.actor,
                "time": self.time, "op": self.op}


def blame(vault: Any, record_id: str) -> list[FieldBlame]:
    """Return, for each field of a record's latest version, the commit and actor that set it."""
    history = record_history(vault, record_id)
    setters: dict[str, FieldBlame] = {}
    previous: dict[str, Any] = {}
    for version in history.versions:
        if version.deleted:
            previous = {}
            setters = {}
            continue
        current = dict(version.meta)
        current["body"] = version.body
        for key, value in current.items():
            if key not in previous or previous[key] != value:
                setters[key] = FieldBlame(key, value, version.commit, version.actor, version.time, version.op)
        for key in list(setters):
            if key not in current:
                del setters[key]
        previous = current
    order = list(previous)
    return [setters[k] for k in order if k in setters]


@dataclass(frozen=True)
class UndoResult:
    """What an undo did."""

    commit: str
    reverted: str
    records: tuple[str, ...]
    paths: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the result."""
        return {"commit": self.commit, "reverted": self.reverted, "records": list(self.records),
                "paths": list(self.paths)}


def _refuse_if_undone(store: Any, commit: str, parent: str, head: str, changed: list[str]) -> None:
    """Raise when every file the commit changed is, at HEAD, as it was before the commit (undone already).

    Without this the revert is a three-way merge that finds nothing to do but
    may still name a conflict: rename detection pairs the undone file with an
    unrelated later file of similar text.
    """
    if not changed or any(store.blob_id(p, commit=head) != store.blob_id(p, commit=parent) for p in changed):
        return
    by = ""
    for later in store.walk():
        if later.id == commit:
            break
        if any(k == "Am-Reverts" and v.strip() == commit for k, v in later.trailers()):
            by = f" by {later.id[:10]} ({later.subject})"
            break
    raise AlreadyUndoneError(f"{commit[:10]} is already undone{by}: its files are as they were before it",
                             hint="nothing to do; see am log for what changed since")


def undo(vault: Any, rev: str) -> UndoResult:
    """Revert one commit as a new commit (compare-and-swap); refuse clearly when it conflicts."""
    from am.records.writes import one_line

    store = vault.store
    commit = store.resolve(rev)
    info = store.commit_info(commit)
    if len(info.parents) > 1:
        raise UsageError(f"{commit[:10]} is a merge commit", hint="undo the writes it brought in one at a time")
    if not info.parents:
        from am.git.program.partial import UNSHALLOW, shallow_commits

        if commit in shallow_commits(Path(store.gitdir)):
            raise UsageError(f"{commit[:10]} is where this shallow clone's history stops: the commit before it is "
                             "not here, so there is nothing to go back to", hint=f"run {UNSHALLOW} in the vault, "
                             "then am undo again")
        raise UsageError(f"{commit[:10]} is the vault's first commit; there is nothing before it to go back to")
    head = store.head()
    if head is None or commit not in store.ancestors(head):
        raise UsageError(f"{commit[:10]} is not on the current branch", hint="see am log for the commits you can undo")
    entry = entry_of(store, info)
    changed = [p for p, _ in store.changed_files(commit)]
    _refuse_if_undone(store, commit, info.parents[0], head, changed)
    ids = list(entry.records) or [PurePosixPath(p).stem for p in changed if p.endswith(".md")]
    lines = [one_line(f"undo: {info.subject}", limit=120), "", f"Reason: undo of {commit}",
             "Am-Op: undo", f"Am-Reverts: {commit}"]
    lines += [f"Am-Record: {i}" for i in ids]
    lines.append(f"Am-Actor: {vault.actor}")
    message = "\n".join(lines) + "\n"
    vault.writer.check_writable(())
    with store.write_lock(op="undo"):
        new = store.commit_tree(lambda tip: store.revert_tree(commit, tip), message=message,
                                author=vault.authorship.author(), committer=vault.authorship.committer())
        if new is None:
            raise AlreadyUndoneError(f"{commit[:10]} is already undone: reverting it changes nothing")
        touched = [PurePosixPath(p) for p, _ in store.changed_files(new)]
        vault.writer.after_write(new, touched)
    return UndoResult(new, commit, tuple(ids), tuple(str(p) for p in touched))

