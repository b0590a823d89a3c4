"""basic-memory's Markdown notes: frontmatter, ``- [category] text #tag (context)`` observations, relations.

Source: basicmachines-co/basic-memory, docs/NOTE-FORMAT.md and
src/basic_memory/markdown/plugins.py. A note is a topic; each observation a
fact; each ``- relation_type [[Target]] (context)`` a relation; a ``[[Target]]``
in prose a link (rewritten to the target's id). Targets that no note defines
(basic-memory's forward references) become topics of their own.

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
    guess_kind,
    keep_time,
    plain_value,
)
from am.records.ids import slugify

__all__ = ["parse_observation", "parse_relation", "read_basic_memory"]

SYSTEM = "basic-memory"
_ITEM = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_CATEGORY = re.compile(r"^\[([^\[\]()]+)\]\s+(.+)")
_CLOCK = re.compile(r"^\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?(?:\s+-\s+\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?)?$")
_LINK = re.compile(r"\[\[([^\[\]]+?)\]\]")
_NOTE_KEYS = ("title", "type", "tags", "permalink", "created")


def parse_observation(content: str) -> dict[str, Any] | None:
    """Return {category, content, tags, context} for an observation list item, else None."""
    text = content.strip()
    if not text or text.startswith(("[ ]", "[x]", "[-]")) or re.match(r"^\[.*?\]\(.*?\)$", text) \
            or re.match(r"^\[\[.*?\]\]$", text):
        return None
    match = _CATEGORY.match(text)
    category = None
    if match:
        name = match.group(1).strip()
        if _CLOCK.match(name) or (len(name) == 1 and (name in "xX" or not name.isalnum())):
            match = None
        else:
            category, text = name, match.group(2).strip()
    if match is None and not any(part.startswith("#") for part in text.split()):
        return None
    context = None
    if text.endswith(")") and "(" in text:
        start = text.rfind("(")
        context, text = text[start + 1:-1].strip(), text[:start].strip()
    tags: list[str] = []
    for part in text.split():
        if part.startswith("#"):
            tags += [t for t in part.split("#") if t]
    return {"category": category, "content": text, "tags": tags, "context": context}


def parse_relation(content: str) -> dict[str, Any] | None:
    """Return {type, target, context} for ``type [[Target]] (context)``, else None."""
    text = content.strip()
    before = text.partition("[[")[0].strip()
    if not before or "[[" not in text:
        return None
    if before[0] in "'\"" and before.endswith(before[0]) and len(before) > 1:
        rel = before[1:-1].strip()
    elif any(c.isspace() for c in before):
        return None
    else:
        rel = before
    start = text.find("[[")
    end = text.find("]]", start + 2)
    if not rel or end == -1 or not text[start + 2:end].strip():
        return None
    after = text[end + 2:].strip()
    context = None
    if after:
        if not (after.startswith("(") and after.endswith(")") and _balanced(after)):
            return None
        context = after[1:-1].strip() or None
    return {"type": rel, "target": text[start + 2:end].strip(), "context": context}


def _balanced(text: str) -> bool:
    depth = 0
    for position, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return position == len(text) - 1
    return False


def _front(text: str, origin: str) -> tuple[dict[str, Any], str]:
    from am.records.codec import split_frontmatter
    from am.records.frontmatter import strict_load

    if not text.startswith("---"):
        return {}, text.replace("\r\n", "\n")
    front, body, _ = split_frontmatter(text, path=origin)
    meta = strict_load(front.replace("\r\n", "\n"), path=origin, line_offset=1) if front.strip() else {}
    if not isinstance(meta, dict):
        raise InvalidRecordError("frontmatter is not a mapping", path=origin)
    return meta, body.replace("\r\n", "\n")


def read_basic_memory(path: Path) -> SourceRead:
    """Read a basic-memory project folder (or one note) into topics, facts and relations."""
    b = Builder(SYSTEM, source_time(path))
    base = path if path.is_dir() else path.parent
    notes: list[tuple[str, str, str, dict[str, Any]]] = []  # (origin, topic id, body, frontmatter)
    by_name: dict[str, str] = {}
    for file in walk_files(path, suffix=".md"):
        origin = file.relative_to(base).as_posix()
        b.read["notes"] += 1
        try:
            meta, body = _front(read_text(file), origin)
        except InvalidRecordError as err:
            b.leave(origin, f"frontmatter: {err.message}")
            continue
        title = str(meta.get("title") or file.stem)
        note_type = str(meta.get("type") or "note")
        permalink = str(meta.get("permalink") or slugify(file.with_suffix("").relative_to(base).as_posix()))
        raw_tags = meta.get("tags") or []
        extra: dict[str, Any] = {"source_type": note_type, "permalink": permalink}
        extra.update((extra_key(k), plain_value(v)) for k, v in meta.items() if k not in _NOTE_KEYS)
        if isinstance(raw_tags, str):
            tags = [t.strip() for t in raw_tags.split(",")]
        elif isinstance(raw_tags, list):
            tags = [str(t) for t in raw_tags]
        else:  # a mapping would give its keys, a number no tags at all: kept whole instead
            tags = []
            extra["source_tags"] = plain_value(raw_tags)
        created = keep_time(meta.get("created"), "created", extra) or source_time(file)
        kind = guess_kind(note_type)
        tid = b.topic(permalink, kind=kind, title=title, tags=tags, origin=origin, created=created, extra=extra,
                      id=f"{kind}-{slugify(title)}")
        for name in (title, permalink, file.stem, origin[:-3]):
            by_name.setdefault(name.lower(), tid)
        notes.append((origin, tid, body, meta))

    def target(name: str, origin: str) -> str:
        known = by_name.get(name.strip().lower()) or by_name.get(slugify(name))
        if known is not None:
            return known
        # A forward reference: basic-memory resolves it when the note appears.
        b.read["targets no note defines"] += 1
        found = b.topic(f"forward:{name}", title=name.strip(), origin=origin, id=f"concept-{slugify(name)}",
                        extra={"source_forward_reference": True}, defined=False)
        by_name[name.strip().lower()] = found
        return found

    def relink(text: str, origin: str) -> str:
        return _LINK.sub(lambda m: f"[[{target(m.group(1).split('|')[0], origin)}|{m.group(1)}]]", text)

    for origin, tid, body, meta in notes:
        kept: list[str] = []
        fence = False
        note_time = b.topic_created(tid)
        for number, line in enumerate(body.split("\n"), start=1):
            if line.lstrip().startswith(("```", "~~~")):
                fence = not fence
            item = None if fence or line.lstrip().startswith(">") else _ITEM.match(line)
            if item is None:
                kept.append(relink(line, origin) if not fence else line)
                continue
            where = f"{origin}:{number}"
            content = item.group(2)
            relation = parse_relation(content) if "[[" in content else None
            if relation is not None:
                b.read["relations"] += 1
                extra = {"context": relation["context"]} if relation["context"] else {}
                b.relation(tid, relation["type"], target(relation["target"], where), origin=where, created=note_time,
                           extra=extra)
                continue
            observation = parse_observation(content)
            if observation is None:
                kept.append(relink(line, origin))
                continue
            b.read["observations"] += 1
            extra = {"category": observation["category"] or "Note"}
            if observation["context"]:
                extra["context"] = observation["context"]
            # The context qualifies the statement ("(for light roasts)"): it stays in the fact's text, so a pack
            # states the fact with its qualifier; it is also kept as `context`.
            said = observation["content"] + (f" ({observation['context']})" if observation["context"] else "")
            b.fact(relink(said, where), key=(tid, extra["category"], observation["content"]),
                   topics=[tid], origin=where, created=note_time, tags=observation["tags"], extra=extra)
        text = "\n".join(kept).strip("\n")
        if text.strip():
            b.set_body(tid, text)
    return b.finish()
