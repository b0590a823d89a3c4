"""CLAUDE.md, AGENTS.md and ADR folders: each bullet or decision a proposed fact (``pending-review``).

A file of instructions (CLAUDE.md, AGENTS.md, any Markdown) becomes a topic and
each list item a fact waiting for review, with the heading it sat under. An
Architecture Decision Record (Michael Nygard's form, as adr-tools writes it:
``# N. Title``, ``Date:``, ``## Status``, ``## Context``, ``## Decision``,
``## Consequences``; or MADR: frontmatter ``status``/``date``, ``## Decision
Outcome``) becomes a ``decision`` topic holding the whole record and one fact,
its decision; "Supersedes"/"Superseded by" links in the status become a
supersede chain.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from am.errors import InvalidRecordError
from am.io.files import read_text, source_time, walk_files
from am.io.source import Builder, SourceRead, extra_key, plain_value, to_timestamp
from am.records.ids import slugify

__all__ = ["read_markdown"]

SYSTEM = "markdown"
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*\S)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINKED = re.compile(r"(supersedes|superseded by)\s*:?\s*\[[^\]]*\]\(([^)\s]+)\)", re.IGNORECASE)
_DATE = re.compile(r"^Date:\s*(\S+)", re.MULTILINE | re.IGNORECASE)
_NUMBERED = re.compile(r"^(\d+)\.\s+(.*)$")


def _front(text: str, origin: str) -> tuple[dict[str, Any], str]:
    from am.records.codec import split_frontmatter
    from am.records.frontmatter import strict_load

    text = text.replace("\r\n", "\n")
    if not text.startswith("---\n"):
        return {}, text
    front, body, _ = split_frontmatter(text, path=origin)
    meta = strict_load(front, path=origin, line_offset=1) if front.strip() else {}
    return (meta if isinstance(meta, dict) else {}), body


def _sections(body: str) -> dict[str, str]:
    """Return the text under each ``##`` heading, by lowercased heading."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in body.split("\n"):
        heading = _HEADING.match(line)
        if heading and len(heading.group(1)) == 2:
            current = out.setdefault(heading.group(2).strip().lower(), [])
        elif current is not None:
            current.append(line)
    return {k: "\n".join(v).strip() for k, v in out.items()}


def _is_adr(body: str, meta: dict[str, Any]) -> bool:
    sections = _sections(body)
    return ("decision" in sections or "decision outcome" in sections) and ("status" in sections or "status" in meta)


def read_markdown(path: Path) -> SourceRead:
    """Read Markdown instruction files and ADRs into topics and proposed facts."""
    b = Builder(SYSTEM, source_time(path))
    base = path if path.is_dir() else path.parent
    adrs: dict[str, str] = {}  # file name -> decision fact
    chains: list[tuple[str, str, str, str]] = []  # (origin, fact, "supersedes"/"superseded by", file)
    for file in walk_files(path, suffix=".md"):
        origin = file.relative_to(base).as_posix()
        b.read["files"] += 1
        try:
            meta, body = _front(read_text(file), origin)
        except InvalidRecordError as err:
            b.leave(origin, f"frontmatter: {err.message}")
            continue
        created = to_timestamp(meta.get("date")) or source_time(file)
        if _is_adr(body, meta):
            fid = _read_adr(b, origin, file, meta, body, created, chains)
            if fid is not None:
                adrs[file.name] = fid
        else:
            _read_notes(b, origin, meta, body, created)
    for origin, fid, how, target in chains:
        other = adrs.get(Path(target.split("#", 1)[0]).name)
        if other is None:
            b.leave(origin, f"{how} {target}, which is not among the files read")
        elif how.lower() == "supersedes":
            b.supersede(other, fid)
        else:
            b.supersede(fid, other)
    return b.finish()


def _read_adr(b: Builder, origin: str, file: Path, meta: dict[str, Any], body: str, created: str,
              chains: list[tuple[str, str, str, str]]) -> str | None:
    b.read["decisions"] += 1
    title_line = next((h.group(2) for line in body.split("\n") if (h := _HEADING.match(line)) and
                       len(h.group(1)) == 1), None) or str(meta.get("title") or file.stem)
    numbered = _NUMBERED.match(title_line)
    title = numbered.group(2) if numbered else title_line
    sections = _sections(body)
    status_text = sections.get("status", "") or str(meta.get("status") or "")
    date = _DATE.search(body)
    if date and to_timestamp(date.group(1)):
        created = to_timestamp(date.group(1)) or created
    extra: dict[str, Any] = {"source_file": origin, "adr_status": " ".join(status_text.split()) or None}
    if numbered:
        extra["adr_number"] = int(numbered.group(1))
    extra.update((extra_key(k), plain_value(v)) for k, v in meta.items())
    tid = b.topic(origin, kind="decision", title=title, origin=origin, created=created, body=body, extra=extra,
                  id=f"decision-{slugify(title)}")
    decision = sections.get("decision") or sections.get("decision outcome") or ""
    fid = b.fact(decision, key=(origin,), topics=[tid], origin=f"{origin} (decision)", created=created,
                 status="pending-review", extra={"source_file": origin})
    if fid is not None:
        for how, target in _LINKED.findall(status_text):
            chains.append((origin, fid, how, target))
    return fid


def _read_notes(b: Builder, origin: str, meta: dict[str, Any], body: str, created: str) -> None:
    extra = {extra_key(k): plain_value(v) for k, v in meta.items()}
    extra["source_file"] = origin
    tid = b.topic(origin, title=origin, origin=origin, created=created, extra=extra)
    kept: list[str] = []
    section: str | None = None
    fence = False
    for number, line in enumerate(body.split("\n"), start=1):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        heading = None if fence else _HEADING.match(line)
        if heading:
            section = heading.group(2)
        item = None if fence else _ITEM.match(line)
        if item is None:
            kept.append(line)
            continue
        b.read["bullets"] += 1
        where = f"{origin}:{number}"
        fact_extra = {"section": section} if section else {}
        b.fact(item.group(2), key=(origin, section or "", item.group(2)), topics=[tid], origin=where,
               created=created, status="pending-review", extra=fact_extra)
    text = "\n".join(kept).strip("\n")
    if text.strip():
        b.set_body(tid, text)
