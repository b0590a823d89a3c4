"""OpenChronicle's memory folder: prefixed entity files of append-only entries with supersede pointers.

Source: Einsia/OpenChronicle, src/openchronicle/store/files.py and entries.py,
prompts/schema.md. ``~/.openchronicle/memory/<prefix>-<name>.md`` (prefixes
user, project, tool, topic, person, org, event; ``index.md`` is generated),
frontmatter ``description, tags, status, created, updated, entry_count,
needs_compact``, and entries headed ``## [YYYY-MM-DDTHH:MM] {id: ...} #tag``.
A superseded entry's heading carries ``#superseded-by:<id>`` and its body is
wrapped in ``~~``; the new entry ends with ``<!-- supersedes: <id>; reason: ... -->``.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from am.errors import InvalidRecordError
from am.io.files import read_text, source_time, walk_files
from am.io.source import (
    Builder,
    SourceRead,
    extra_key,
    keep_time,
    plain_value,
    to_timestamp,
)
from am.records.ids import slugify

__all__ = ["read_openchronicle"]

SYSTEM = "openchronicle"
_PREFIX_KIND = {"user": "person", "project": "project", "tool": "tool", "topic": "concept", "person": "person",
                "org": "org", "event": "event"}
_HEADING = re.compile(r"^##\s*\[(?P<ts>[^\]]+)\]\s*\{id:\s*(?P<id>[a-zA-Z0-9\-]+)\}(?P<tags>[^\n]*)$", re.MULTILINE)
_LOOSE_HEADING = re.compile(r"^##\s*\[", re.MULTILINE)
_SUPERSEDES = re.compile(r"<!--\s*supersedes:\s*(?P<id>[A-Za-z0-9\-]+)\s*;\s*reason:\s*(?P<reason>.*?)\s*-->", re.DOTALL)
_MARKER = re.compile(r"[ \t]*#superseded-by:(?P<id>[A-Za-z0-9\-]+)")
_STRIKE = re.compile(r"~~(.+?)~~", re.DOTALL)
_FILE_KEYS = ("description", "tags", "status", "created")


def _front(text: str, origin: str) -> tuple[dict[str, Any], str]:
    """Split YAML frontmatter (loaded strictly) from the body; no frontmatter gives an empty mapping."""
    from am.records.codec import split_frontmatter
    from am.records.frontmatter import strict_load

    if not text.startswith("---"):
        return {}, text
    front, body, _ = split_frontmatter(text, path=origin)
    meta = strict_load(front.replace("\r\n", "\n"), path=origin, line_offset=1) if front.strip() else {}
    return (meta if isinstance(meta, dict) else {}), body.replace("\r\n", "\n")


def read_openchronicle(path: Path) -> SourceRead:
    """Read an OpenChronicle memory folder (or one of its files) into topics and facts."""
    folder = path / "memory" if (path / "memory").is_dir() and not any(path.glob("*-*.md")) else path
    b = Builder(SYSTEM, source_time(folder))
    for file in walk_files(folder, suffix=".md"):
        if file.name == "index.md":  # generated from the other files
            continue
        origin = file.relative_to(folder).as_posix() if file != folder else file.name
        stem = file.stem
        prefix = stem.split("-", 1)[0]
        if "-" not in stem or prefix not in _PREFIX_KIND:
            b.leave(origin, f"file name needs one of the prefixes {', '.join(p + '-' for p in _PREFIX_KIND)}")
            continue
        b.read["files"] += 1
        try:
            meta, body = _front(read_text(file), origin)
        except InvalidRecordError as err:
            b.leave(origin, f"frontmatter: {err.message}")
            continue
        _read_file(b, origin, stem, prefix, meta, body, file_time=source_time(file))
    return b.finish()


def _read_file(b: Builder, origin: str, stem: str, prefix: str, meta: dict[str, Any], body: str,
               file_time: str) -> None:
    kind = _PREFIX_KIND[prefix]
    rest = stem if prefix == "user" else stem.split("-", 1)[1]
    title = rest.replace("-", " ").strip().capitalize() or stem
    tags = meta.get("tags")
    tags = tags if isinstance(tags, list) else []
    extra: dict[str, Any] = {"source_file": f"{stem}.md"}
    status = meta.get("status")
    if isinstance(status, str) and status not in ("active",):
        extra["source_status"] = status
    extra.update((extra_key(k), plain_value(v)) for k, v in meta.items() if k not in _FILE_KEYS)
    if meta.get("tags") is not None and not isinstance(meta.get("tags"), list):
        extra["source_tags"] = plain_value(meta["tags"])
    description = meta.get("description")
    created = keep_time(meta.get("created"), "created", extra) or file_time
    tid = b.topic(stem, kind=kind, title=title, origin=origin, created=created,
                  body=description if isinstance(description, str) else "",
                  tags=[str(t) for t in tags], extra=extra, id=f"{kind}-{slugify(rest)}")
    matches = list(_HEADING.finditer(body))
    starts = {m.start() for m in matches}
    for loose in _LOOSE_HEADING.finditer(body):
        if loose.start() not in starts:
            line = body[: loose.start()].count("\n") + 1
            b.leave(f"{origin}: body line {line}", "an entry heading that is not '## [time] {id: ...} #tags'")
    head = body[: matches[0].start()].strip() if matches else body.strip()
    if head and not head.startswith("#"):
        b.leave(f"{origin}: before the first entry", "text outside any entry (kept in no fact)")
    pending: list[tuple[str, str, str]] = []  # (new fact, old source id, reason)
    for n, m in enumerate(matches):
        end = matches[n + 1].start() if n + 1 < len(matches) else len(body)
        b.read["entries"] += 1
        entry_id, stamp = m.group("id"), m.group("ts").strip()
        where = f"{origin} entry {entry_id}"
        when = to_timestamp(stamp)
        if when is None:
            b.leave(where, f"entry time {stamp!r} is not a date-time")
            continue
        raw_tags = [t[1:] for t in m.group("tags").split() if t.startswith("#")]
        superseded_by = next((t.split(":", 1)[1] for t in raw_tags if t.startswith("superseded-by:")), None)
        tags = [t for t in raw_tags if not t.startswith("superseded-by:")]
        text = body[m.end():end].strip("\n")
        link = _SUPERSEDES.search(text)
        if link is not None:
            text = (text[: link.start()] + text[link.end():]).strip("\n")
        # OpenChronicle's marker belongs on the heading; one written into the entry's text (by hand, or by a
        # tool that moved it) is read the same way and never left in the fact's text.
        marker = _MARKER.search(text)
        if marker is not None:
            superseded_by = superseded_by or marker.group("id")
            text = _MARKER.sub("", text).strip("\n")
        text = _STRIKE.sub(r"\1", text).strip()
        fid = b.fact(text, key=(stem, entry_id), topics=[tid], origin=where, created=when, tags=tags,
                     source_id=f"{stem}#{entry_id}")
        if fid is None:
            continue
        if superseded_by:
            pending.append(("", f"{stem}#{superseded_by}", fid))
        if link is not None:
            pending.append((fid, f"{stem}#{link.group('id')}", link.group("reason")))
    for new, old_source, extra_arg in pending:
        if new:  # "<!-- supersedes: old; reason: ... -->" on the new entry
            old = b.fact_by_source_id(old_source)
            if old is not None:
                b.supersede(old, new, reason=extra_arg or None)
            else:
                b.leave(f"{origin} supersedes {old_source}", "names an entry that is not in the file")
        else:  # "#superseded-by:new" on the old entry (extra_arg holds the old fact)
            newer = b.fact_by_source_id(old_source)
            if newer is not None:
                b.supersede(extra_arg, newer)
            else:
                b.leave(f"{origin} superseded-by {old_source}", "names an entry that is not in the file")
