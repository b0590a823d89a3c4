"""Record text <-> record values: pure, no I/O.

``parse_record(text, path)`` reads a Markdown file with YAML frontmatter into a
Topic, Fact or Relation; ``render_record(record)`` writes am's canonical form,
and ``parse_record(render_record(r)) == r``. Line endings of a hand-written file
are kept (``record.eol``); a UTF-8 BOM is skipped on read and kept by ``render_update``.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from am.errors import InvalidRecordError
from am.records.frontmatter import LIST_FIELDS, MAX_FRONTMATTER_BYTES, dump, fast_load, strict_load
from am.records.ids import check_id, folder_problem
from am.records.model import Fact, Record, Relation, Topic
from am.records.properties import LINK_KEYS, link_target, link_value, update_frontmatter

__all__ = [
    "MAX_RECORD_BYTES",
    "REQUIRED_KEYS",
    "split_frontmatter",
    "parse_record",
    "parse_meta",
    "record_from_meta",
    "record_to_meta",
    "render_record",
    "render_update",
    "decode_record_bytes",
    "conflict_marker_line",
]

MAX_RECORD_BYTES = 1024 * 1024

_TOPIC_KEYS = ("type", "id", "kind", "title", "aliases", "tags", "status", "created")
_FACT_KEYS = (
    "type", "id", "topics", "status", "confidence", "provenance", "repo", "version", "commit", "dirty",
    "until_commit", "axis", "valid_from", "valid_until", "supersedes", "superseded_by", "reason",
    "paths", "tags", "pinned", "created",
)
_RELATION_KEYS = (
    "type", "id", "rel", "from", "to", "status", "repo", "version", "commit", "until_commit",
    "axis", "valid_from", "valid_until", "reason", "tags", "created",
)
_KNOWN = {"topic": _TOPIC_KEYS, "fact": _FACT_KEYS, "relation": _RELATION_KEYS}
_TIMESTAMPS = frozenset({"created", "valid_from", "valid_until"})


def decode_record_bytes(data: bytes, *, path: str | None = None) -> str:
    """Decode a record file's bytes as UTF-8, naming the line of a bad byte."""
    if len(data) > MAX_RECORD_BYTES:
        raise InvalidRecordError(
            f"file is larger than {MAX_RECORD_BYTES // 1024} KiB", path=path,
            hint="a record is one small note; split it",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InvalidRecordError(
            f"invalid UTF-8 at byte {err.start}", path=path, line=line,
            hint="save the file as UTF-8",
        ) from None


def split_frontmatter(text: str, *, path: str | None = None) -> tuple[str, str, str]:
    """Split a record's text into (frontmatter, body, eol); raise if there is no frontmatter."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if text.startswith("---\r\n"):
        eol = "\r\n"
    elif text.startswith("---\n"):
        eol = "\n"
    else:
        raise InvalidRecordError(
            "does not start with a '---' frontmatter line", path=path, line=1,
            hint="begin the file with ---, the YAML keys, then --- on its own line",
        )
    start = 3 + len(eol)
    if text[start:].startswith("---" + eol) or text[start:] == "---":
        return "", text[start + 3 + len(eol):], eol
    end = text.find(eol + "---" + eol, start - len(eol))
    if end == -1:
        if text.endswith(eol + "---"):
            end = len(text) - 3 - len(eol)
        else:
            raise InvalidRecordError(
                "frontmatter is not closed", path=path,
                hint="add a line with just --- after the YAML keys",
            )
    front = text[start:end + len(eol)]
    body = text[end + len(eol) * 2 + 3:]
    return front, body, eol


def parse_meta(front: str, eol: str, *, path: str | None = None) -> dict[str, Any]:
    """Load a frontmatter block: the fast path for canonical text, else the strict loader."""
    if eol == "\n" and len(front) <= MAX_FRONTMATTER_BYTES // 4:  # the strict loader's size cap holds here too
        meta = fast_load(front)
        if meta is not None:
            return meta
    normalised = front.replace("\r\n", "\n") if eol == "\r\n" else front
    return strict_load(normalised, path=path, line_offset=1)


def _str(meta: dict[str, Any], key: str, path: str | None, *, required: bool = False) -> str | None:
    value = meta.get(key)
    if value is None:
        if required:
            raise InvalidRecordError("is required", path=path, field=key)
        return None
    if not isinstance(value, str):
        raise InvalidRecordError(
            f"must be a string, not {type(value).__name__}", path=path, field=key,
        )
    return value


def _list(meta: dict[str, Any], key: str, path: str | None, *, links: bool = False) -> tuple[str, ...]:
    value = meta.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidRecordError(
            "must be a list of strings", path=path, field=key,
            hint=f"write it as {key}: [a, b]",
        )
    return tuple(link_target(v) if links else v for v in value)


def _opt_link(value: str | None) -> str | None:
    return None if value is None else link_target(value)


# The keys a record of each type must state: with one missing, am would have to guess (active, medium, human) and
# trust the guess. A file that skipped the hooks (git commit --no-verify, a phone's Obsidian, an agent writing
# files) is invalid instead: in no pack, named by am check and by every listing's unreadable note.
REQUIRED_KEYS = {"fact": ("status", "confidence", "provenance"), "relation": ("status",)}
_REQUIRED_HINT = {"status": "active", "confidence": "medium", "provenance": "human"}


def _check_required(meta: dict[str, Any], rtype: str, path: str | None) -> None:
    missing = [key for key in REQUIRED_KEYS.get(rtype, ()) if meta.get(key) in (None, "")]
    if missing:
        lines = ", ".join(f"{key}: {_REQUIRED_HINT[key]}" for key in missing)
        raise InvalidRecordError(
            "is required: without it the record holds nowhere (am does not guess it)", path=path, field=missing[0],
            hint=f"add the missing key{'s' * (len(missing) > 1)} to its frontmatter, with the right values "
                 f"(e.g. {lines}), and commit; the pre-commit hook (am hooks install) checks this")


def record_from_meta(meta: dict[str, Any], body: str, *, eol: str = "\n", path: str | None = None) -> Record:
    """Build a record from loaded frontmatter and body; raise naming the field on bad shape."""
    rtype = _str(meta, "type", path, required=True)
    if rtype not in _KNOWN:
        raise InvalidRecordError(
            f"unknown record type {rtype!r}", path=path, field="type",
            hint="use one of: topic, fact, relation",
        )
    extra = {k: v for k, v in meta.items() if k not in _KNOWN[rtype]}
    rid = check_id(_str(meta, "id", path, required=True), path=path)

    def s(key: str, required: bool = False) -> str | None:
        return _str(meta, key, path, required=required)

    status = s("status") or "active"
    if rtype == "topic":
        return Topic(
            id=rid, kind=s("kind") or rid.split("-", 1)[0], title=s("title") or rid, body=body,
            aliases=_list(meta, "aliases", path), tags=_list(meta, "tags", path), status=status,
            created=s("created"), extra=extra, eol=eol,
        )
    if rtype == "fact":
        pinned = meta.get("pinned", False)
        if not isinstance(pinned, bool):
            raise InvalidRecordError("must be true or false", path=path, field="pinned")
        dirty = meta.get("dirty", False)
        if not isinstance(dirty, bool):
            raise InvalidRecordError("must be true or false", path=path, field="dirty")
        fact = Fact(
            id=rid, topics=_list(meta, "topics", path, links=True), body=body, status=status,
            confidence=s("confidence") or "medium", provenance=s("provenance") or "human",
            repo=s("repo"), version=s("version"), commit=s("commit"), axis=s("axis"),
            created=s("created"), valid_from=s("valid_from"), valid_until=s("valid_until"),
            until_commit=s("until_commit"), supersedes=_list(meta, "supersedes", path, links=True),
            superseded_by=_opt_link(s("superseded_by")), reason=s("reason"), paths=_list(meta, "paths", path),
            tags=_list(meta, "tags", path), pinned=pinned, extra=extra, eol=eol, dirty=dirty,
        )
        _check_required(meta, rtype, path)  # after the shape of each key: a wrong key is named before a missing one
        return fact
    relation = Relation(
        id=rid, rel=s("rel", True) or "", from_=link_target(s("from", True) or ""),
        to=link_target(s("to", True) or ""), body=body, status=status, created=s("created"),
        repo=s("repo"), version=s("version"), commit=s("commit"), until_commit=s("until_commit"),
        axis=s("axis"), valid_from=s("valid_from"), valid_until=s("valid_until"),
        reason=s("reason"), tags=_list(meta, "tags", path), extra=extra, eol=eol,
    )
    _check_required(meta, rtype, path)
    return relation


def parse_record(text: str, path: str | None = None) -> Record:
    """Parse a record file's text; raise InvalidRecordError naming the file, line and field."""
    front, body, eol = split_frontmatter(text, path=path)
    meta = parse_meta(front, eol, path=path)
    record = record_from_meta(meta, body, eol=eol, path=path)
    misplaced = folder_problem(path, record.type)
    if misplaced is not None:
        raise InvalidRecordError(misplaced, path=path, field="type",
                                 hint="a record's kind must match its folder (an impostor could shadow a record)")
    return record


def record_to_meta(record: Record) -> dict[str, Any]:
    """Return the frontmatter mapping of a record, in canonical key order."""
    meta: dict[str, Any] = {"type": record.type, "id": record.id}
    if isinstance(record, Topic):
        meta.update(kind=record.kind, title=record.title, aliases=list(record.aliases),
                    tags=list(record.tags), status=record.status, created=record.created)
    elif isinstance(record, Fact):
        meta.update(
            topics=list(record.topics), status=record.status, confidence=record.confidence,
            provenance=record.provenance, repo=record.repo, version=record.version,
            commit=record.commit, dirty=record.dirty or None, until_commit=record.until_commit, axis=record.axis,
            valid_from=record.valid_from, valid_until=record.valid_until,
            supersedes=list(record.supersedes), superseded_by=record.superseded_by,
            reason=record.reason, paths=list(record.paths), tags=list(record.tags),
            pinned=record.pinned or None, created=record.created,
        )
    else:
        meta.update(
            rel=record.rel, **{"from": record.from_}, to=record.to, status=record.status,
            repo=record.repo, version=record.version, commit=record.commit,
            until_commit=record.until_commit, axis=record.axis, valid_from=record.valid_from,
            valid_until=record.valid_until, reason=record.reason, tags=list(record.tags),
            created=record.created,
        )
    # Empty lists and unset values are left out, so files stay small and readable.
    meta = {k: v for k, v in meta.items() if v is not None and v != [] and not (k in LIST_FIELDS and not v)}
    for key, value in record.extra.items():
        meta[key] = value
    return meta


def _as_links(meta: dict[str, Any], names: dict[str, str] | None) -> dict[str, Any]:
    # Obsidian counts a property value that is one whole "[[...]]" as a link (graph, backlinks).
    def wrap(value: str) -> str:
        return link_value((names or {}).get(value, value))

    out = dict(meta)
    for key in LINK_KEYS:
        value = out.get(key)
        if isinstance(value, list):
            out[key] = [wrap(v) if isinstance(v, str) else v for v in value]
        elif isinstance(value, str):
            out[key] = wrap(value)
    return out


def render_record(record: Record, *, links: bool = False, names: dict[str, str] | None = None) -> str:
    """Render a record in am's canonical form.

    With ``links``, the link-valued keys (topics, supersedes, from, to...) are
    written as ``"[[...]]"`` so that Obsidian shows them in its graph;
    ``names`` maps an id to the file name to link by when they differ.
    """
    meta = record_to_meta(record)
    if links:
        meta = _as_links(meta, names)
    front = dump(meta, timestamp_fields=_TIMESTAMPS)
    eol = record.eol
    if eol != "\n":
        front = front.replace("\n", eol)
    return f"---{eol}{front}---{eol}{record.body}"


def render_update(old_text: str, record: Record, *, path: str | None = None,
                  names: dict[str, str] | None = None) -> str:
    """Render a changed record over its file's old text, keeping the file's own form.

    Keys whose value did not change keep their lines byte for byte (flow or
    block lists, link or plain values, comments); changed keys are written the
    way the file wrote them. A file that does not parse is rendered anew. A
    UTF-8 BOM the file starts with is kept (an editor on Windows wrote it).
    """
    bom = "\ufeff" if old_text.startswith("\ufeff") else ""
    old_text = old_text[len(bom):]
    try:
        front, body, eol = split_frontmatter(old_text, path=path)
        old = parse_meta(front, eol, path=path)
        before = record_from_meta(old, body, eol=eol, path=path)
    except InvalidRecordError:
        return bom + render_record(record)
    for links in (True, False):
        # A file in am's own form stays in it (keys in canonical order): only a person's form is kept key by key.
        # Links first: a file of "[[...]]" values renders the same either way, and must stay links.
        if render_record(before, links=links, names=names) == old_text:
            return bom + render_record(record, links=links, names=names)
    normal = front.replace("\r\n", "\n") if eol == "\r\n" else front
    new = record_to_meta(record)
    if names:  # ids of records whose file names differ: new links name them by file name
        for key in LINK_KEYS:
            value = new.get(key)
            was = old.get(key)
            kept = {link_target(v) for v in (was if isinstance(was, list) else [was]) if isinstance(v, str)}
            if isinstance(value, list):
                new[key] = [link_value(names[v]) if v in names and v not in kept else v for v in value]
            elif isinstance(value, str) and value in names and value not in kept:
                new[key] = link_value(names[value])
    text = update_frontmatter(normal, old, new, timestamp_fields=_TIMESTAMPS)
    if eol != "\n":
        text = text.replace("\n", eol)
    return f"{bom}---{eol}{text}---{eol}{record.body}"


def record_dict(record: Record, path: PurePosixPath | None = None) -> dict[str, Any]:
    """Return the stable JSON shape of a record (as `am ... show --format json` and the MCP tools give it)."""
    data = record_to_meta(record)
    data["body"] = record.body
    if path is not None:
        data["path"] = str(path)
    return data


def conflict_marker_line(text: str) -> int | None:
    """Return the line number of the first Git conflict marker in a file's text, or None.

    A line that starts with ``<<<<<<< `` or ``>>>>>>> `` (Git's seven signs
    and a label) is one; ``=======`` counts only beside them (alone it
    underlines a Markdown heading), so it is never reported by itself. am's
    own merge never writes these: it keeps two texts between ``am:merged``
    comment lines (``am.records.merge.has_merged_text``).
    """
    if "<<<<<<<" not in text and ">>>>>>>" not in text:
        return None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line in ("<<<<<<<", ">>>>>>>"):
            return n
    return None
