"""The record-aware three-way merge (DESIGN §9), pure: record texts in, merged texts out.

One rule set, used by ``am sync``, ``am merge`` and the ``am merge-driver`` that
``git merge`` / ``git pull`` / obsidian-git call for record files:

- one record changed on both sides: frontmatter merged key by key (a key
  changed on one side takes that side); list keys (``topics``, ``tags``,
  ``paths``, ``aliases``, ``supersedes`` and any other list) as sets; a status
  changed on both sides takes the later state of the lifecycle
  (superseded > expired > contested > pending-review > active);
- the same fact's statement changed differently on both sides (its text, or a
  key that says where it holds): one side keeps the file, the other side's
  version becomes a new fact beside it, both ``contested``, joined by a
  ``conflicts-with`` relation;
- a fact superseded on both sides by two new facts: one stays its successor,
  the other is contested and joined to it by ``conflicts-with``;
- a topic's (or relation's) body changed on both sides: both texts are kept in
  the file between ``<!-- am:merged -->`` marker lines, which ``am check`` lists
  until someone edits them away;
- never conflict markers inside frontmatter.

The merge is symmetric: merging A into B gives the same files as merging B
into A (which side keeps a split fact's file, which title stays the title, the
order of list items do not depend on the direction), so two machines that
merge the same pair independently agree, and a second merge of their merges
changes nothing. New ids and paths are derived from the texts, never drawn at
random, for the same reason.

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from am.errors import InvalidRecordError
from am.records.codec import (
    conflict_marker_line,
    decode_record_bytes,
    parse_meta,
    record_from_meta,
    render_record,
    split_frontmatter,
)
from am.records.ids import MAX_ID_LENGTH, is_valid_id, record_path
from am.records.model import Relation
from am.records.names import file_stem

__all__ = [
    "LIFECYCLE",
    "MERGED_BEGIN",
    "MERGED_END",
    "Decision",
    "RecordMerge",
    "TreeMerge",
    "conflict_marker_line",
    "has_merged_text",
    "is_record_path",
    "merge_changes",
    "merge_record",
    "rival_files",
]

# The lifecycle order: a status changed on both sides takes the later state.
LIFECYCLE = ("active", "pending-review", "contested", "expired", "superseded")
# Keys that say what a fact claims and where it holds: both changed differently is a conflict, like its text.
_CLAIM_KEYS = frozenset({"repo", "version", "commit", "until_commit", "axis", "valid_from", "valid_until"})
# Keys a contested copy does not take over: a supersession names the original file, not the copy.
_NOT_COPIED = ("supersedes", "superseded_by", "pinned")
# Keys that say who wrote a fact's text and how sure they were: in a split, each copy keeps its own side's, so
# Bob's text is never shown as session:alice (nor Alice's as Bob's, by "a key changed on one side takes it").
_WRITER_KEYS = ("provenance", "confidence")
_CONFIDENCE = ("low", "medium", "high")

MERGED_BEGIN = "<!-- am:merged-begin"
MERGED_END = "<!-- am:merged-end -->"
_MERGED_HEAD = (MERGED_BEGIN + ": this text was changed on two machines; both versions are kept below."
                " Edit them into one text and delete the am:merged lines. -->")
_VERSION = "<!-- am:merged-version {n} -->"
_RECORD_TOPS = ("topics", "facts", "relations")
_ABSENT = object()


@dataclass(frozen=True)
class Decision:
    """What the merge decided for one record: ``how`` is keys, status, lists, split, texts, kept or union."""

    id: str
    path: str
    how: str
    detail: str = ""

    def trailer(self) -> str:
        """Return the decision as a commit trailer value."""
        return f"{self.id} {self.how}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class RecordMerge:
    """The merge of one record file: its new text, new files beside it, and what was decided."""

    text: str
    extra: tuple[tuple[str, str], ...] = ()
    decisions: tuple[Decision, ...] = ()
    contested: tuple[str, ...] = ()
    rivals: tuple[tuple[str, str], ...] = ()  # (fact, fact it loses to): both superseded this record


@dataclass(frozen=True)
class TreeMerge:
    """The merge of two sides' changes: files to set on ours and the decisions.

    A file's value is its new bytes, the id of a blob the repository already
    has (taken whole from the other side), or None (deleted).
    """

    files: dict[str, bytes | str | None]
    decisions: tuple[Decision, ...]
    contested: tuple[str, ...]
    conflicts: tuple[str, ...]  # paths no rule could merge (not record files); nothing is decided for them


def is_record_path(path: str) -> bool:
    """Return whether a vault path is a record file (an .md under topics/, facts/ or relations/)."""
    parts = path.split("/")
    return (len(parts) > 1 and parts[0] in _RECORD_TOPS and path.endswith(".md")
            and not any(p.startswith(".") for p in parts))


def has_merged_text(body: str) -> bool:
    """Return whether a body still holds two versions kept by a merge (``am check`` lists it)."""
    return MERGED_BEGIN in body


def _named(path: str, blob: str | None, read: Reader) -> str:
    """The id a decision names: the file name when it is one, else (a readable name: Obsidian's) the frontmatter's."""
    stem = file_stem(path)
    if is_valid_id(stem) or blob is None:
        return stem
    try:
        rid = _parse(decode_record_bytes(read(blob), path=path), path)[0].get("id")
    except (InvalidRecordError, UnicodeDecodeError):
        return stem
    return rid if isinstance(rid, str) and rid else stem


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _parse(text: str, path: str) -> tuple[dict[str, Any], str, str]:
    front, body, eol = split_frontmatter(text, path=path)
    meta = parse_meta(front, eol, path=path)
    if not isinstance(meta, dict):
        raise InvalidRecordError("frontmatter is not a mapping of keys to values", path=path)
    return meta, body, eol


def _render(meta: dict[str, Any], body: str, eol: str, path: str) -> str:
    return render_record(record_from_meta(meta, body, eol=eol, path=path))


def _rank(status: object) -> int:
    return LIFECYCLE.index(status) if status in LIFECYCLE else -1


def _merge_list(base: object, ours: list[Any], theirs: list[Any], *, needed: bool = False) -> list[Any]:
    """Merge two lists as sets, three-way: what either side added is in, what either side removed is out."""
    old = base if isinstance(base, list) else []
    kept = [x for x in old if x in ours and x in theirs]
    added = sorted({_key(x): x for x in [*ours, *theirs] if x not in old and x not in kept}.items())
    merged = kept + [x for _, x in added]
    # A fact needs a topic: when the removals would leave none, keep everything either side has.
    if needed and not merged and (ours or theirs):
        merged = [v for _, v in sorted({_key(x): x for x in [*ours, *theirs]}.items())]
    return merged


def _key(value: object) -> str:
    return repr(value)


def _later(a: Any, b: Any) -> Any:
    return a if (_key(a) >= _key(b)) else b


class _Conflict(Exception):
    """A fact's claim changed differently on both sides: split it."""


def _merge_meta(base: dict[str, Any] | None, ours: dict[str, Any], theirs: dict[str, Any],
                *, rtype: str, notes: list[str], rivals: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Merge frontmatter key by key; raise _Conflict for a fact whose claim differs on both sides."""
    old = base or {}
    rivals = [] if rivals is None else rivals
    out: dict[str, Any] = {}
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        b, o, t = old.get(key, _ABSENT), ours.get(key, _ABSENT), theirs.get(key, _ABSENT)
        if o == t:
            value = o
        elif o == b:
            value = t
        elif t == b:
            value = o
        else:
            value = _both_changed(key, b, o, t, rtype=rtype, notes=notes, rivals=rivals)
        if value is not _ABSENT:
            out[key] = value
    return out


def _both_changed(key: str, b: Any, o: Any, t: Any, *, rtype: str, notes: list[str],
                  rivals: list[tuple[str, str]]) -> Any:
    if isinstance(o, list) and isinstance(t, list):
        notes.append(f"{key} as sets")
        return _merge_list(b, o, t, needed=key == "topics")
    if o is _ABSENT or t is _ABSENT:
        # Removed on one side, changed on the other: the change keeps the key (nothing is lost).
        return t if o is _ABSENT else o
    if key == "status":
        winner = o if _rank(o) > _rank(t) else t if _rank(t) > _rank(o) else _later(o, t)
        notes.append(f"status {winner} by lifecycle")
        return winner
    if key == "created":
        return min(str(o), str(t))
    if key == "confidence":
        return min((o, t), key=lambda c: _CONFIDENCE.index(c) if c in _CONFIDENCE else -1)
    if key == "pinned":
        return bool(o) or bool(t)
    if key == "reason":
        notes.append("both reasons kept")
        return " | ".join(sorted({str(o), str(t)}))
    if rtype in ("fact", "split") and key == "superseded_by":
        # Superseded twice, by two new facts: one stays the successor, the other is its rival (see merge_changes).
        winner, loser = sorted((str(o), str(t)))
        notes.append(f"superseded by {winner}; {loser} contests it")
        rivals.append((loser, winner))
        return winner
    if rtype == "fact" and key in _CLAIM_KEYS:
        raise _Conflict(key)
    notes.append(f"{key} {_later(o, t)!s} of two")
    return _later(o, t)


def _merged_body(ours: str, theirs: str) -> str:
    """Keep both texts of a topic or relation, between marker lines, in an order that does not depend on the side."""
    first, second = sorted((ours, theirs), key=_digest)
    parts = [_MERGED_HEAD, _VERSION.format(n=1), first.strip("\n"), _VERSION.format(n=2),
             second.strip("\n"), MERGED_END]
    return "\n".join(parts) + "\n"


def _copy_id(record_id: str, text: str) -> str:
    suffix = "c" + _digest(text)[:7]
    stem = record_id[: MAX_ID_LENGTH - len(suffix) - 1].rstrip("-")
    return f"{stem}-{suffix}"


def _relation_id(a: str, b: str) -> str:
    rid = f"{a}--conflicts-with--{b}"
    if len(rid) <= MAX_ID_LENGTH and is_valid_id(rid):
        return rid
    return f"conflict-{_digest(a + ' ' + b)[:12]}"


def merge_record(path: str, base: str | None, ours: str, theirs: str) -> RecordMerge:
    """Merge one record file changed on both sides (``base`` None: added on both); raise InvalidRecordError if a side does not parse."""
    if ours == theirs:
        return RecordMerge(ours)
    o_meta, o_body, eol = _parse(ours, path)
    t_meta, t_body, _ = _parse(theirs, path)
    b_meta, b_body = (None, None) if base is None else _parse(base, path)[:2]
    rtype = str(o_meta.get("type"))
    rid = str(o_meta.get("id") or PurePosixPath(path).stem)
    if t_meta.get("type") != rtype or t_meta.get("id") != o_meta.get("id"):
        raise InvalidRecordError("the two sides hold different records under one file name", path=path,
                                 hint="rename one of them (its id and file name), commit, and merge again")
    notes: list[str] = []
    rivals: list[tuple[str, str]] = []
    body_changed_both = o_body != t_body and b_body not in (o_body, t_body)
    try:
        if rtype == "fact" and body_changed_both:
            raise _Conflict("text")
        meta = _merge_meta(b_meta, o_meta, t_meta, rtype=rtype, notes=notes, rivals=rivals)
    except _Conflict as why:
        return _split(path, rid, b_meta, (o_meta, o_body, ours), (t_meta, t_body, theirs), eol, str(why))
    if o_body == t_body:
        body = o_body
    elif b_body == o_body:
        body = t_body
    elif b_body == t_body:
        body = o_body
    else:
        body = _merged_body(o_body, t_body)
        notes.append("both texts kept")
    if rtype == "topic" and o_meta.get("title") != t_meta.get("title") and b_meta is not None \
            and b_meta.get("title") not in (o_meta.get("title"), t_meta.get("title")):
        # The title that did not stay the title becomes an alias: a link by either name still resolves.
        other = t_meta.get("title") if meta.get("title") == o_meta.get("title") else o_meta.get("title")
        aliases = list(meta.get("aliases") or [])
        if isinstance(other, str) and other not in aliases:
            meta["aliases"] = [*aliases, other]
    text = _render(meta, body, eol, path)
    how = "texts" if "both texts kept" in notes else "keys"
    decision = Decision(rid, path, how, "; ".join(dict.fromkeys(notes)))
    return RecordMerge(text, decisions=(decision,),
                       contested=(rid,) if meta.get("status") == "contested" else (), rivals=tuple(rivals))


def _split(path: str, rid: str, base: dict[str, Any] | None, ours: tuple[dict[str, Any], str, str],
           theirs: tuple[dict[str, Any], str, str], eol: str, why: str) -> RecordMerge:
    """One side keeps the fact's file, the other side's version becomes a new contested fact."""
    keep, other = sorted((ours, theirs), key=lambda side: _digest(side[2]))
    notes: list[str] = []
    rivals: list[tuple[str, str]] = []
    try:
        meta = _merge_meta(base, keep[0], other[0], rtype="split", notes=notes, rivals=rivals)  # no further split
    except _Conflict:  # pragma: no cover - only facts split
        meta = dict(keep[0])
    for key in (*_CLAIM_KEYS, *_WRITER_KEYS):
        if key in keep[0]:
            meta[key] = keep[0][key]
        else:
            meta.pop(key, None)
    meta["status"] = _max_status(meta.get("status"), "contested")
    kept_text = _render(meta, keep[1], eol, path)
    copy_id = _copy_id(rid, other[2])
    copy_meta = {k: v for k, v in other[0].items() if k not in _NOT_COPIED}
    copy_meta["id"] = copy_id
    copy_meta["status"] = _max_status(other[0].get("status"), "contested")
    parent = PurePosixPath(path).parent
    copy_path = str(parent / f"{copy_id}.md")
    copy_text = _render(copy_meta, other[1], eol, copy_path)
    rel_id = _relation_id(copy_id, rid)
    created = meta.get("created") if isinstance(meta.get("created"), str) else None
    try:
        rel_path = str(record_path("relation", rel_id, created))
    except InvalidRecordError:
        rel_path = f"relations/{rel_id}.md"
    relation = Relation(
        id=rel_id, rel="conflicts-with", from_=copy_id, to=rid, created=created, eol=eol,
        body=(f"[[{copy_id}]] conflicts-with [[{rid}]]: the fact's {why} was changed differently on two "
              f"machines and both versions were kept. Resolve it with am fact supersede.{eol}"),
    )
    decision = Decision(rid, path, "split", f"{why} changed on both sides; other version is {copy_id}")
    return RecordMerge(kept_text, extra=((copy_path, copy_text), (rel_path, render_record(relation))),
                       decisions=(decision, Decision(copy_id, copy_path, "split", f"contested copy of {rid}")),
                       contested=(rid, copy_id), rivals=tuple(rivals))


def _max_status(status: object, floor: str) -> str:
    return str(status) if _rank(status) > _rank(floor) else floor


Reader = Callable[[str], bytes]


def merge_changes(ours: dict[str, str | None], theirs: dict[str, str | None], *, base: dict[str, str | None],
                  read: Reader, exists: Callable[[str], str | None]) -> TreeMerge:
    """Merge two sides' changes since their merge base, to be applied on ours.

    ``ours`` and ``theirs`` map each changed path to its new blob id (None:
    deleted); ``base`` has the base's blob id of every path changed on both
    sides; ``read`` returns a blob's bytes; ``exists`` returns the blob id a
    path has on ours (for new files a split wants to add).
    """
    files: dict[str, bytes | str | None] = {}
    rivals: list[tuple[str, str, str]] = []
    decisions: list[Decision] = []
    contested: list[str] = []
    conflicts: list[str] = []

    def merge_one(path: str, old: str | None, mine: str, new: str, *, at: str | None = None) -> None:
        """Merge one record's two versions (blob ids) into ``path``; ``at`` is where they were (a rename)."""
        base_text = None if old is None else decode_record_bytes(read(old), path=at or path)
        result = merge_record(path, base_text, decode_record_bytes(read(mine), path=path),
                              decode_record_bytes(read(new), path=path))
        files[path] = result.text.encode("utf-8")
        decisions.extend(result.decisions)
        contested.extend(result.contested)
        rivals.extend((loser, winner, PurePosixPath(at or path).stem) for loser, winner in result.rivals)
        for extra_path, extra_text in result.extra:
            data = extra_text.encode("utf-8")
            if extra_path in files or exists(extra_path) is not None:
                continue  # a merge made it already (the merge is deterministic)
            files[extra_path] = data

    # A record renamed on one side (Obsidian: a readable file name) and changed on the other is one record:
    # merged into its new name, its old name gone, never two files of one id.
    done: set[str] = set()
    for path, renamed_by_ours, to in _renames(ours, theirs, base, read):
        our_blob, their_blob = (ours[to], theirs[path]) if renamed_by_ours else (ours[path], theirs[to])
        assert our_blob is not None and their_blob is not None
        if not renamed_by_ours:
            files[path] = None
        merge_one(to, base[path], our_blob, their_blob, at=path)
        done.update((path, to))
    for path, new in sorted(theirs.items()):
        if path in done:
            continue
        mine = ours.get(path, _ABSENT)
        if mine is _ABSENT:
            files[path] = new  # the other side's blob, as it is
            if is_record_path(path):
                decisions.append(Decision(_named(path, new, read), path, "union" if new else "deleted"))
            continue
        if mine == new:
            continue
        if new is None or mine is None:
            # Deleted on one side, changed on the other: the change stays (nothing is lost).
            if mine is None:
                files[path] = new
            if is_record_path(path):
                kept = new if new is not None else mine
                decisions.append(Decision(_named(path, kept if isinstance(kept, str) else None, read), path, "kept",
                                          "changed on one side, deleted on the other"))
            continue
        if not is_record_path(path):
            conflicts.append(path)
            continue
        assert isinstance(mine, str)
        merge_one(path, base.get(path), mine, new)
    for loser, winner, old_id in rivals:
        found = rival_files(loser, winner, old_id, ours, theirs, files, read)
        if found is not None:
            files.update(found)
            decisions.append(Decision(loser, next(iter(found)), "rival", f"superseded {old_id} too; {winner} did first"))
            contested.append(loser)
    return TreeMerge(files, tuple(decisions), tuple(dict.fromkeys(contested)), tuple(conflicts))


def _renames(ours: dict[str, str | None], theirs: dict[str, str | None], base: dict[str, str | None],
             read: Reader) -> list[tuple[str, bool, str]]:
    """Records one side renamed and the other changed: (old path, renamed by ours?, new path).

    The renamed file is the one that side added with the same id in its frontmatter (read only for a record
    deleted on one side and changed on the other, the rare case)."""
    found: list[tuple[str, bool, str]] = []
    taken: set[str] = set()
    for path in sorted(base):
        mine, new, old = ours.get(path), theirs.get(path), base[path]
        if old is None or not is_record_path(path) or (mine is None) == (new is None):
            continue
        renamed_by_ours = mine is None
        side, other = (ours, theirs) if renamed_by_ours else (theirs, ours)
        try:
            rid = _parse(decode_record_bytes(read(old), path=path), path)[0].get("id")
        except (InvalidRecordError, UnicodeDecodeError):
            continue
        if not isinstance(rid, str) or not rid:
            continue
        folder = path.partition("/")[0]
        for to, blob in sorted(side.items()):
            if blob is None or to in base or to in other or to in taken or not to.startswith(folder + "/") \
                    or not is_record_path(to):
                continue
            data = read(blob)
            if rid.encode("utf-8") not in data:
                continue
            try:
                if _parse(decode_record_bytes(data, path=to), to)[0].get("id") != rid:
                    continue
            except (InvalidRecordError, UnicodeDecodeError):
                continue
            found.append((path, renamed_by_ours, to))
            taken.add(to)
            break
    return found


def rival_files(loser: str, winner: str, old_id: str, ours: dict[str, str | None], theirs: dict[str, str | None],
           files: dict[str, bytes | str | None], read: Reader) -> dict[str, bytes] | None:
    """Make the losing successor of a fact superseded on both sides contested, joined to the winner.

    It no longer lists the fact in ``supersedes`` (that fact names the winner),
    so the supersession stays whole, and a ``conflicts-with`` relation says the
    two successors disagree. Returns the files to set, or None when the loser
    is not among the changes.
    """
    path = next((p for p in sorted({*ours, *theirs}) if PurePosixPath(p).stem == loser and is_record_path(p)), None)
    if path is None:
        return None
    current = files.get(path, ours.get(path) if path in ours else theirs.get(path))
    if current is None:
        return None
    data = current if isinstance(current, bytes) else read(current)
    meta, body, eol = _parse(decode_record_bytes(data, path=path), path)
    meta["supersedes"] = [x for x in meta.get("supersedes") or [] if x != old_id]
    meta["status"] = _max_status(meta.get("status"), "contested")
    rel_id = _relation_id(loser, winner)
    created = meta.get("created") if isinstance(meta.get("created"), str) else None
    try:
        rel_path = str(record_path("relation", rel_id, created))
    except InvalidRecordError:
        rel_path = f"relations/{rel_id}.md"
    relation = Relation(id=rel_id, rel="conflicts-with", from_=loser, to=winner, created=created, eol=eol,
                        body=(f"[[{loser}]] conflicts-with [[{winner}]]: both superseded [[{old_id}]] on two "
                              f"machines; [[{winner}]] stays its successor. Resolve it with am fact supersede.{eol}"))
    return {path: _render(meta, body, eol, path).encode("utf-8"), rel_path: render_record(relation).encode("utf-8")}

