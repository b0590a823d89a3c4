"""`am check`: the whole vault (or some of its files) against the format.

Per file: UTF-8, frontmatter, the JSON Schema of its type, the seven relation
types, id <-> file name, the folder it sits in. Across files: duplicate ids,
relations and facts naming records that do not exist, dangling ``[[links]]``,
supersede cycles and half-finished supersessions; pairs of holding facts that
restate or may contradict each other (am/upkeep/similarpairs.py, warnings).

A check of the whole vault keeps each file's own findings, and the gist of
its record that the checks across files read (am/upkeep/checklinks.py), by the
file's bytes (am/upkeep/checkmemo.py): an unchanged file is read and hashed,
not parsed again.

Severities: ``error`` (the exit code says so), ``warning`` (errors under
``--strict``) and ``note`` (never fatal: a person may keep a file where they
like, DESIGN §2).

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from am.errors import InvalidRecordError
from am.records.ids import RECORD_DIRS, folder_problem, record_file
from am.records.model import RELATION_TYPES, Record
from am.records.names import Names
from am.records.notes import is_record_meta, is_record_text
from am.upkeep.checkmemo import CheckMemo, Gist, gist_of
from am.upkeep.issues import Issue

__all__ = ["CheckReport", "check_texts", "check_vault", "check_record_bytes", "is_record_text",
           "is_record_meta", "name_other", "session_file_issues"]

_FOLDER_OF = {v: k for k, v in RECORD_DIRS.items()}
_NOTE_MESSAGE = ("a note, not a record (no am frontmatter): am indexes it for links and search; "
                 "to make it a record, give it type: and id: (or create it with am topic add)")
_CONFLICT_MESSAGE = ("holds Git's conflict markers (<<<<<<<, =======, >>>>>>>) from a merge made without am's merge "
                     "driver; resolve it: keep one text and delete the marker lines (or keep the other as a new fact: "
                     "am fact supersede), then commit; am hooks install registers the merge driver that avoids this")


@dataclass(frozen=True)
class CheckReport:
    """What a check found."""

    issues: tuple[Issue, ...]
    files: int
    records: int

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def notes(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "note"]

    def is_ok(self, *, strict: bool = False) -> bool:
        """Return whether there is nothing fatal (warnings count under strict)."""
        return not self.errors and not (strict and self.warnings)

    def exit_code(self, *, strict: bool = False) -> int:
        """Return 0 when clean, else InvalidRecordError's exit code."""
        return 0 if self.is_ok(strict=strict) else InvalidRecordError.exit_code

    def to_json(self, *, strict: bool = False) -> dict[str, Any]:
        """Return the stable JSON shape of the report."""
        return {
            "ok": self.is_ok(strict=strict),
            "files": self.files,
            "records": self.records,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "notes": len(self.notes),
            "issues": [i.to_json() for i in self.issues],
        }


def _parse(path: str, data: bytes, issues: list[Issue], *,
           schema: bool = True) -> tuple[Record | None, dict[str, Any] | None]:
    """Parse one file, adding its per-file issues; return the record and its raw frontmatter."""
    from am.records.codec import (
        decode_record_bytes,
        parse_meta,
        record_from_meta,
        split_frontmatter,
    )
    from am.records.merge import conflict_marker_line, is_record_path
    from am.records.schemas import check_record, passes_as_written, schema_problems

    try:
        text = decode_record_bytes(data, path=path)
    except InvalidRecordError as err:
        issues.append(Issue("error", "parse", path, _said(err), err.field, err.line))
        return None, None
    marker = conflict_marker_line(text)
    if marker is not None and (is_record_text(text) or is_record_path(path)):
        issues.append(Issue("error", "conflict-markers", path, _CONFLICT_MESSAGE, line=marker))
        if not is_record_text(text):
            return None, None  # both sides' whole files: a record, not a note
    if not is_record_text(text):
        # A note: Obsidian's "New note" (Untitled.md), a page of a person's own. Never a record.
        issues.append(Issue("note", "note", path, _NOTE_MESSAGE))
        return None, None
    try:
        front, body, eol = split_frontmatter(text, path=path)
        meta = parse_meta(front, eol, path=path)
    except InvalidRecordError as err:
        issues.append(Issue("error", "parse", path, _said(err), err.field, err.line))
        return None, None
    if not isinstance(meta, dict):
        issues.append(Issue("error", "parse", path, "frontmatter is not a mapping of keys to values"))
        return None, None
    if not is_record_meta(meta):
        issues.append(Issue("note", "note", path, _NOTE_MESSAGE))
        return None, None
    rel = meta.get("rel")
    if meta.get("type") == "relation" and isinstance(rel, str) and rel not in RELATION_TYPES:
        issues.append(Issue("error", "relation-type", path,
                            f"relation type {rel!r} is not allowed; use one of: {', '.join(RELATION_TYPES)}",
                            "rel"))
    try:
        record, failed = record_from_meta(meta, body, eol=eol, path=path), None
    except InvalidRecordError as err:
        record, failed = None, err
    # A file that holds its record as written and passes check_record: the schema finds nothing there either.
    fast = record is not None and passes_as_written(meta, record)
    for field, message in schema_problems(_jsonable(meta)) if schema and not fast else ():
        if field == "rel" and any(i.code == "relation-type" and i.path == path for i in issues):
            continue
        issues.append(Issue("error", "schema", path, message, field))
    misplaced = folder_problem(path, meta["type"]) if isinstance(meta.get("type"), str) else None
    if misplaced is not None:
        issues.append(Issue("error", "wrong-folder", path, misplaced, "type"))
        return None, meta
    if record is None:
        if failed is not None and not any(i.path == path for i in issues):
            issues.append(Issue("error", "schema", path, _said(failed), failed.field, failed.line))
        return None, meta
    if not fast and not any(i.path == path and i.severity == "error" for i in issues):
        try:
            check_record(record, path=path)
        except InvalidRecordError as err:
            issues.append(Issue("error", "schema", path, _said(err), err.field, err.line))
    _check_place(path, record, issues)
    return record, meta


def _said(err: InvalidRecordError) -> str:
    """Return an error's message with its fix (the report names the file and field itself)."""
    return err.detail if not err.hint else f"{err.detail}; {err.hint}"


def _jsonable(meta: dict[str, Any]) -> dict[str, Any]:
    # The strict loader keeps timestamps as text, but a date object would fail
    # "type: string" for the wrong reason; say what the schema means instead.
    out: dict[str, Any] = {}
    for key, value in meta.items():
        out[key] = value.isoformat() if hasattr(value, "isoformat") else value
    return out


def _check_place(path: str, record: Record, issues: list[Issue]) -> None:
    if not path.endswith(f"/{record.id}.md") and PurePosixPath(path).stem != record.id:
        return  # a readable file name (topics/people/Li Wei.md): Obsidian links by it, am by id
    top = path.split("/", 1)[0]
    if _FOLDER_OF.get(top) != record.type:
        issues.append(Issue("note", "misplaced", path,
                            f"a {record.type} in {top}/; am would keep it in {RECORD_DIRS[record.type]}/"))
        return
    try:
        expected = record_file(record.type, record.id, record.created)
    except InvalidRecordError:
        return
    if expected != path:
        issues.append(Issue("note", "misplaced", path, f"am would keep this file at {expected}"))


def _is_own(path: str, record_id: str) -> bool:
    """Return whether a record file is named after its id (where two files share an id, that one is the record)."""
    return path.rpartition("/")[2] == f"{record_id}.md"


def check_record_bytes(path: str, data: bytes) -> list[Issue]:
    """Return the per-file issues of one record file's bytes (what pre-commit checks)."""
    issues: list[Issue] = []
    _parse(path, data, issues)
    return issues


def check_texts(files: Iterable[tuple[str, bytes]], *, other_ids: Mapping[str, str] | None = None,
                load_other: Callable[[str], Record | None] | None = None,
                names: Names | None = None, notes: Iterable[str] = (), schema: bool = True,
                attachment: Callable[[str], bool] | None = None,
                parsed: list[tuple[str, Gist]] | None = None, memo: CheckMemo | None = None) -> CheckReport:
    """Check record files given as (path, bytes), and the links between them.

    ``other_ids`` maps ids of records outside ``files`` to their paths (they
    count as existing); ``load_other`` reads one of them when a supersession
    must be checked from both ends. ``names`` holds the file names, titles and
    aliases of records outside ``files``, and ``notes`` the paths of other
    Markdown files, so links resolve as Obsidian resolves them; ``attachment``
    says whether a link names a file of another kind (``![[Pasted image.png]]``);
    ``parsed`` receives the gist of every record read, duplicates too (the world
    pass reads them). ``memo`` holds each file's own findings and gist from an
    earlier check, by content (am/upkeep/checkmemo.py): a file it knows is not parsed.
    """
    from am.upkeep.checklinks import check_cycles, check_duplicate_names, check_lookalikes, check_references

    issues: list[Issue] = []
    records: dict[str, tuple[str, Gist]] = {}
    table = names if names is not None else Names()
    nfiles = 0
    for note in notes:
        table.add_note(note)
    for path, data in files:
        nfiles += 1
        key = memo.key(path, data) if memo is not None and schema else None
        kept = memo.get(key) if memo is not None and key is not None else None
        if kept is None:
            own: list[Issue] = []
            record, _ = _parse(path, data, own, schema=schema)
            gist = gist_of(record) if record is not None else None
            if memo is not None and key is not None:
                memo.put(key, [(i.severity, i.code, i.field, i.line, i.message) for i in own], gist)
        else:
            own = [Issue(severity, code, path, message, field, line) for severity, code, field, line, message in kept[0]]
            gist = kept[1]
        issues += own
        if gist is None:
            if any(i.code == "note" for i in own):
                table.add_note(path)
            continue
        if parsed is not None:
            parsed.append((path, gist))
        # Of two files with one id, the one named after it is the record and the other the duplicate (issue
        # 36.8: topics/project-x-evil.md holding id project-x is blamed, not topics/project-x.md).
        named = _is_own(path, gist.id)
        if gist.id in records:
            first = records[gist.id][0]
            if not named or _is_own(first, gist.id):
                issues.append(Issue("error", "duplicate-id", path, f"id {gist.id!r} is also used by {first}", "id"))
                continue
            issues.append(Issue("error", "duplicate-id", first, f"id {gist.id!r} is also used by {path}", "id"))
        other = other_ids.get(gist.id) if other_ids is not None else None
        if other is not None and other != path:
            blamed, by = (other, path) if named and not _is_own(other, gist.id) else (path, other)
            issues.append(Issue("error", "duplicate-id", blamed, f"id {gist.id!r} is also used by {by}", "id"))
        records[gist.id] = (path, gist)
        table.add_record(path, gist.id, title=gist.title, aliases=gist.aliases)
    others: Mapping[str, str] = other_ids if other_ids is not None else {}
    table.add_ids(others)

    def resolve(ref: str) -> str | None:
        if ref in records or ref in others:
            return ref
        return table.resolve(ref)

    def get(rid: str) -> Gist | None:
        if rid in records:
            return records[rid][1]
        if load_other is not None and rid in others:
            loaded = load_other(rid)
            return gist_of(loaded) if loaded is not None else None
        return None

    for rid, (path, gist) in sorted(records.items(), key=lambda kv: kv[1][0]):
        check_references(path, gist, resolve, get, issues, attachment)
    check_cycles(records, get, issues)
    check_lookalikes(records, issues)
    check_duplicate_names(records, issues)
    issues.sort(key=_issue_order)
    return CheckReport(tuple(issues), nfiles, len(records))


def check_vault(vault: Any, *, paths: Iterable[PurePosixPath | str] | None = None,
                schema: bool = True, cache_fresh: bool = False, worlds: bool = True,
                memo: bool = True) -> CheckReport:
    """Check a vault's work tree: every record file, or only ``paths`` against the rest.

    With ``paths``, the other files count by id (a file named after an id is
    taken at its word; others are read for their id, title and aliases) and
    are read whole only when a supersession must be checked from both ends.
    Markdown files elsewhere in the vault count as notes, link targets by file name.
    ``worlds=False`` leaves out the world pass (its issues are all warnings).
    A check of the whole vault keeps each file's own findings by content
    (am/upkeep/checkmemo.py) and parses only files it has not seen; ``memo=False``
    parses every file and keeps nothing.
    """
    root = vault.root
    names = Names()
    others: Mapping[str, str] = {}
    notes: list[str] = []
    index = _cache_of(vault, refresh=not cache_fresh) if paths is not None else None
    if paths is not None and index is not None:
        # After a commit (the post-* hooks): the rest of the vault as the cache holds it, no walk.
        wanted = {str(p) for p in paths}
        chosen = sorted(p for p in wanted if (root / p).is_file())
        others = _CacheIds(index, wanted)
        notes = [p for p in index.unparsed_paths() if p not in wanted]
        names.fallback = index.resolve_name_key
    else:
        all_paths = list(vault.record_file_names())
        if paths is None:
            chosen = all_paths
        else:
            wanted = {str(p) for p in paths}
            chosen = [p for p in all_paths if p in wanted]
            found: dict[str, str] = {}
            for p in all_paths:
                if p not in wanted:
                    name_other(p, functools.partial(_read_capped, root, p), found, names)
            others = found

    from am.git.workfiles import WorkTreeReader, is_real_dir
    from am.records.codec import MAX_RECORD_BYTES

    unread: list[Issue] = []
    if paths is None:
        for top in RECORD_DIRS.values():
            if os.path.lexists(root / top) and not is_real_dir(str(root / top)):
                unread.append(Issue("error", "not-a-file", top, f"{top} is not a folder but a link or a file; "
                                    "am reads nothing through it (make it a real folder)"))
        from am.git.program.sparse import hidden_message, hidden_record_folders

        for top in hidden_record_folders(root, vault.store.gitdir):  # its records look gone: am reads the work tree
            message, fix = hidden_message([top])
            unread.append(Issue("error", "sparse-checkout", top, f"{message}; include it: {fix}"))

    def files() -> Iterable[tuple[str, bytes]]:
        with WorkTreeReader(str(root), cap=MAX_RECORD_BYTES) as reader:
            for p in chosen:
                try:
                    found = reader.read(p)
                except OSError as err:
                    unread.append(Issue("error", "not-a-file", p, f"unreadable ({err.strerror})"))
                    continue
                if found is None:
                    continue  # gone since it was listed
                if found.data is None:
                    code = "too-large" if found.problem and found.problem.startswith("larger") else "not-a-file"
                    unread.append(Issue("error", code, p, f"not read: {found.problem}"))
                    continue
                yield p, found.data

    def load_other(rid: str) -> Record | None:
        try:
            rec: Record = vault.read_path(PurePosixPath(others[rid]))
            return rec
        except (InvalidRecordError, KeyError, OSError):
            return None

    parsed: list[tuple[str, Gist]] = []
    from am.upkeep.vaultfiles import attachments, vault_notes

    kept = CheckMemo.open(vault.store.gitdir) if memo and schema and paths is None else None
    report = check_texts(files(), other_ids=others, load_other=load_other, names=names,
                         notes=[*notes, *vault_notes(root)], schema=schema, attachment=attachments(root),
                         parsed=parsed, memo=kept)
    if kept is not None:
        kept.save()
    if paths is None and worlds:
        # The whole vault: also the worlds its records name (am/upkeep/worldcheck.py), as read above.
        from am.upkeep.worldcheck import world_issues

        unread += world_issues(parsed)
        from am.upkeep.similarpairs import pair_issues

        if not any(i.code == "sparse-checkout" for i in unread):  # a vault seen in part has no pairs to judge
            unread += pair_issues(vault)  # look-alike holding facts (DESIGN §13), through the cache
    unread += session_file_issues(root, parsed)
    if not unread:
        return report
    issues = sorted([*report.issues, *unread], key=_issue_order)
    return CheckReport(tuple(issues), report.files, report.records)


def session_file_issues(root: Any, parsed: list[tuple[str, Gist]]) -> list[Issue]:
    """Return an error for each session topic whose ``file`` is not a log in the vault's sessions/ folder.

    ``root``: the work tree the path is resolved in (a link leading out counts as out). Used by ``am check``
    and by the pre-commit hook.
    """
    if not any(gist.session_file is not None for _, gist in parsed):
        return []
    from am.records.sessionlog import log_file

    return [Issue("error", "session-file", path, f"the session log {gist.session_file[0]} is not in the vault's "
                  "sessions/ folder (absolute, ../, a link leading out), so am propose refuses it and search and "
                  "review leave it out; set file: to the log's path under sessions/ (as am ingest writes it)",
                  "file")
            for path, gist in parsed if gist.session_file is not None
            and (gist.session_file[1] is None or log_file(root, gist.session_file[1]) is None)]


def _issue_order(i: Issue) -> tuple[int, str, str, str, str]:
    return ({"error": 0, "warning": 1, "note": 2}[i.severity], i.path, i.code, i.field or "", i.message)


def _read_capped(root: Any, path: str) -> bytes:
    """Return a record file's bytes, read as am reads (no link followed, size capped); raise OSError otherwise."""
    from am.git.workfiles import read_work_file
    from am.records.codec import MAX_RECORD_BYTES

    found = read_work_file(str(root), path, cap=MAX_RECORD_BYTES)
    if found is None or found.data is None:
        raise OSError(f"{path}: {found.problem if found else 'gone'}")
    return found.data


class _CacheIds(Mapping[str, str]):
    """The ids of the records outside a check, asked of the cache one at a time (no 10k-row dict)."""

    def __init__(self, index: Any, skip: set[str]) -> None:
        self._index, self._skip = index, skip

    def __getitem__(self, rid: str) -> str:
        path = self._index.lookup(rid)
        if path is None or str(path) in self._skip:
            raise KeyError(rid)
        return str(path)

    def __iter__(self) -> Iterator[str]:
        return iter(i for i, p in self._index.id_paths().items() if p not in self._skip)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _cache_of(vault: Any, *, refresh: bool) -> Any:
    """Return the vault's open cache, or None when it has none or it cannot be used."""
    opener = getattr(vault, "cache", None)
    try:
        index = opener() if callable(opener) else None
        if index is not None and refresh:
            index.refresh()  # the opener refreshes at most once a second; a check must see the files now
        return index
    except Exception:  # noqa: BLE001 - the cache is disposable: check from the files
        return None


def name_other(path: str, read: Callable[[], bytes], others: dict[str, str], names: Names) -> None:
    """Note a file outside the checked ones: by its id-shaped name, or read for its id, title and aliases.

    Facts and relations that am named are taken by file name (no read: a
    10k-fact vault's commit must stay cheap); topics and readable names are read.
    """
    from am.records.ids import is_valid_id

    stem = path.rsplit("/", 1)[-1][:-3]
    if not path.startswith("topics/") and is_valid_id(stem):
        others.setdefault(stem, path)
        return
    from am.records.codec import decode_record_bytes, parse_meta, split_frontmatter

    try:
        text = decode_record_bytes(read(), path=path)
        if not is_record_text(text):
            names.add_note(path)
            return
        front, _, eol = split_frontmatter(text, path=path)
        meta = parse_meta(front, eol, path=path)
    except (InvalidRecordError, OSError):
        if is_valid_id(stem):
            others.setdefault(stem, path)
        return
    if not is_record_meta(meta):
        names.add_note(path)
        return
    rid = meta.get("id")
    if not isinstance(rid, str):
        return
    others.setdefault(rid, path)
    title = meta.get("title")
    aliases = meta.get("aliases")
    names.add_record(path, rid, title=title if isinstance(title, str) else None,
                     aliases=[a for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else ())
