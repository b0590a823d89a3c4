"""Renaming a topic: the file moves and every reference in the vault follows, in one commit.

References are facts' ``topics``, relations' ``from``/``to`` (a relation whose
id is ``<from>--<rel>--<to>`` gets the new id and file name too) and
``[[wikilinks]]`` in bodies that name the topic by id or file name. Each file
is changed in its own form (``render_update``). With a new title, the old
title becomes an alias, so links by the old name still resolve.

Takes the vault's ``RecordWriter`` (the facade calls in); imports no facade.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import CollisionError, UsageError
from am.records.ids import check_id, is_valid_id, relation_id
from am.records.model import Fact, Record, Relation, Topic, replace
from am.records.names import name_key
from am.records.properties import split_link
from am.records.writes import WriteResult

if TYPE_CHECKING:
    from am.writes.writer import RecordWriter

__all__ = ["edit_fact", "rename_topic", "rewrite_links"]


def edit_fact(writer: RecordWriter, fact_id: str, text: str, *, allow_secrets: bool = False,
              provenance: str | None = None) -> WriteResult:
    """Fix a fact's text (a typo) in one commit, keeping its id; a change of meaning is a supersede.

    The text is now the editor's: the fact's ``provenance`` becomes ``provenance``, else the editor's own
    (``session:ACTOR``, or ``human``), as a new fact's would, and the commit's reason names the one it replaces.
    """
    if not text.strip():
        raise UsageError("the fact's text is empty", hint="say it in one to three sentences")
    path, fact, base = writer.existing_for_update(fact_id, Fact, "fact")
    body = (text.replace("\r\n", "\n").strip("\n") + "\n").replace("\n", fact.eol)  # the file's line ends
    if fact.body == body:
        raise UsageError(f"{fact_id} already says that", hint="nothing to change")
    from am.records.writes import check_one_line

    check_one_line("--provenance", provenance)
    source = provenance or writer.authorship.provenance()
    reason = None if source == fact.provenance else f"text by {source}; it was by {fact.provenance}"
    return writer.write([(path, replace(fact, body=body, provenance=source), base)], noun="fact", verb="edit",
                        ids=[fact_id], summary=text, reason=reason, allow_secrets=allow_secrets)


def rewrite_links(body: str, names: set[str], new: str) -> str:
    """Return ``body`` with wikilinks whose target is one of ``names`` (compared as Obsidian does) pointing at ``new``.

    Headings and labels are kept; code spans and fences are left alone.
    """
    if "[[" not in body:
        return body
    from am.records.links import parse_links

    wanted = {name_key(n) for n in names}
    hits = {link.line for link in parse_links(body) if link.vault is None and name_key(link.target) in wanted}
    if not hits:
        return body
    pattern = re.compile(r"\[\[([^\[\]\n|#]*)((?:\\?\||#)[^\[\]\n]*)?\]\]")

    def swap(match: re.Match[str]) -> str:
        target = match.group(1)
        if name_key(target) not in wanted or ":" in target:
            return match.group(0)
        return f"[[{new}{match.group(2) or ''}]]"

    lines = body.split("\n")
    for number in hits:
        lines[number - 1] = pattern.sub(swap, lines[number - 1])
    return "\n".join(lines)


def _names_of(topic: Topic, path: PurePosixPath) -> set[str]:
    return {topic.id, path.stem}


def _refers(ref: str, old_names: set[str]) -> bool:
    if ref.startswith("[["):
        parts = split_link(ref)
        return parts is not None and parts[1] is None and name_key(parts[0]) in {name_key(n) for n in old_names}
    return ref in old_names


def rename_topic(writer: RecordWriter, old_id: str, new_id: str, *, title: str | None = None) -> WriteResult:
    """Rename topic ``old_id`` to ``new_id`` (and optionally retitle it), rewriting every reference, in one commit."""
    from am.git.edits import edited_tree

    check_id(new_id, field="new id")
    files = writer.files
    old_path, topic, _ = writer.existing_for_update(old_id, Topic, "topic")
    if new_id == old_id and (title is None or title.strip() == topic.title):
        raise UsageError(f"{old_id} already has that id and title", hint="nothing to change")
    if new_id != old_id and files.locate(new_id) is not None:
        raise CollisionError(f"a record with id {new_id!r} already exists", hint="choose another id")
    new_title = title.strip() if title and title.strip() else topic.title
    aliases = topic.aliases
    if new_title != topic.title and topic.title not in aliases:
        aliases = (*aliases, topic.title)  # links by the old name still resolve
    old_names = _names_of(topic, old_path)
    if old_path.stem == old_id:
        new_path = old_path.with_name(f"{new_id}.md")
    elif title and old_path.stem == topic.title:
        from am.records.ids import readable_path

        new_path = readable_path(old_path, new_title, exists=lambda p: (files.root / p).exists())
    else:
        new_path = old_path  # a readable name that is not the title: the person chose it
    link_name = new_path.stem if new_path.stem != new_id else new_id
    from am.writes.forms import check_names_free

    brought = [("title", new_title)] if new_title != topic.title else []  # names it answers to already are its own
    check_names_free(files, new_id, [*brought, *([("file name", new_path.stem)] if new_path != old_path else [])],
                     was=old_id)
    renamed = replace(topic, id=new_id, title=new_title, aliases=aliases,
                      body=rewrite_links(topic.body, old_names, link_name))
    edits: list[tuple[PurePosixPath, PurePosixPath, Record]] = [(old_path, new_path, renamed)]
    index = files.cache()  # its records name others by id, names resolved ("[[Li Wei]]" -> person-li-wei)
    for path, record in (index.records() if index is not None else files.iter_records()):
        if path == old_path:
            continue
        changed = _retarget(record, old_names, new_id, link_name)
        if changed is None:
            continue
        target = path
        if isinstance(record, Relation) and isinstance(changed, Relation) and changed.id != record.id:
            if path.stem == record.id:
                target = path.with_name(f"{changed.id}.md")
            if files.locate(changed.id) is not None:
                raise CollisionError(f"renaming would make relation {changed.id}, which already exists",
                                     hint=f"expire one of them first: am relation expire {record.id}")
        edits.append((path, target, changed))
    return _commit(writer, edits, old_id, new_id, edited_tree, {new_id: link_name} if link_name != new_id else {})


def _retarget(record: Record, old_names: set[str], new_id: str, link_name: str) -> Record | None:
    """Return the record pointed at the new id, or None when it does not mention the old one."""
    body = rewrite_links(record.body, old_names, link_name)
    changes: dict[str, Any] = {}
    if body != record.body:
        changes["body"] = body
    if isinstance(record, Fact):
        topics = tuple(dict.fromkeys(new_id if _refers(t, old_names) else t for t in record.topics))
        if topics != record.topics:
            changes["topics"] = topics
    elif isinstance(record, Relation):
        src = new_id if _refers(record.from_, old_names) else record.from_
        dst = new_id if _refers(record.to, old_names) else record.to
        if (src, dst) != (record.from_, record.to):
            changes.update(from_=src, to=dst)
            if record.id == f"{record.from_}--{record.rel}--{record.to}" and is_valid_id(src) and is_valid_id(dst):
                changes["id"] = relation_id(src, record.rel, dst)
    return replace(record, **changes) if changes else None


def _commit(writer: RecordWriter, edits: list[tuple[PurePosixPath, PurePosixPath, Record]], old_id: str, new_id: str,
            edited_tree: Any, renamed: dict[str, str]) -> WriteResult:
    from am.records.codec import render_update
    from am.records.schemas import check_record
    from am.writes.forms import link_names

    writer.check_writable(())  # a vault of a newer format: refused before anything is read or written
    writes: dict[str, bytes] = {}
    removes: list[str] = []
    for old, new, record in edits:
        check_record(record, path=str(new))
        text = (writer.files.root / old).read_bytes().decode("utf-8")
        names = {**link_names(writer.files, record), **renamed}  # links by file name stay links by file name
        writes[str(new)] = render_update(text, record, path=str(new), names=names).encode("utf-8")
        if new != old:
            removes.append(str(old))
    ids = [new_id, old_id] + [r.id for _, _, r in edits[1:]]
    message = writer.authorship.message("topic", "rename", list(dict.fromkeys(ids)),
                                        subject=f"topic: rename {old_id} -> {new_id}")
    store = writer.store
    with store.write_lock(op="topic.rename"):
        commit = store.commit_tree(lambda tip: edited_tree(store, tip, writes, removes), message=message,
                                   author=writer.authorship.author(), committer=writer.authorship.committer())
    if commit is None:
        raise UsageError("nothing to change")
    paths = [PurePosixPath(p) for p in [*writes, *removes]]
    writer.after_write(commit, paths)
    return WriteResult(commit=commit, records=tuple(r for _, _, r in edits), paths=tuple(paths))
