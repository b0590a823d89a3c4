"""How a write renders a record: a changed file in its own form, a new one as the vault's settings ask.

``render_for_write`` keeps a file a person wrote in its shape when am changes
it (``render_update``: flow or block lists, ``"[[links]]"``, comments), and
writes new records' link-valued keys as ``"[[...]]"`` when the vault has
``property_links: true`` (so Obsidian's graph joins facts to their topics),
linking by file name where a topic's file is not named after its id.
``topic_path`` names a new topic's file after its title when the vault has
``readable_names: true``. Takes the vault's ``RecordFiles`` (am/cache/recordfiles.py); imports no facade.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from am.records.codec import render_record, render_update
from am.records.ids import is_valid_id, readable_path, record_path
from am.records.model import Fact, Record, Relation, Topic

if TYPE_CHECKING:
    from am.cache.recordfiles import RecordFiles

__all__ = ["check_names_free", "link_names", "relation_body", "render_for_write", "topic_names",
           "topic_path", "with_ids"]


def render_for_write(files: RecordFiles, path: PurePosixPath, record: Record, base: str | None) -> str:
    """Return the text a write puts at ``path`` (``base``: the blob it replaces, None for a new file)."""
    if base is not None:
        try:
            old = (files.root / path).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            old = None
        if old is not None:
            return render_update(old, record, path=str(path), names=link_names(files, record))
    if files.settings.get("property_links") is not True:
        return render_record(record)
    return render_record(record, links=True, names=link_names(files, record))


def link_names(files: RecordFiles, record: Record) -> dict[str, str]:
    """Map the ids a record links to onto their file names where those differ (Obsidian links by file name)."""
    ids: tuple[str, ...] = record.topics if isinstance(record, Fact) else (
        (record.from_, record.to) if isinstance(record, Relation) else ())
    names: dict[str, str] = {}
    for rid in ids:
        if not is_valid_id(rid) or (files.root / "topics" / f"{rid}.md").is_file():
            continue  # the usual case: the file is named after the id
        found = files.locate(rid)
        if found is not None and found.stem != rid:
            names[rid] = found.stem
    return names


def with_ids(files: RecordFiles, fact: Fact) -> Fact:
    """Return the fact with its "[[Name]]" references as the ids they name, for a new fact to inherit.

    A fact that Obsidian or ``property_links`` wrote names its topics by link
    (``"[[Li Wei]]"``); a draft names records by id. Names are resolved as the
    cache resolves them (file name, id, title, alias); a link no record answers to is kept.
    """
    from am.cache.rows import resolve_refs
    from am.records.names import NOTE_PREFIX, name_key
    from am.records.properties import split_link

    cache = files.cache()

    def resolve(ref: str) -> str | None:
        parts = split_link(ref)
        if parts is None or parts[1] is not None:
            return None
        found = cache.resolve_name_key(name_key(parts[0])) if cache is not None else parts[0]
        return found if found and not found.startswith(NOTE_PREFIX) else None

    resolved = resolve_refs(fact, resolve)
    assert isinstance(resolved, Fact)
    return resolved


def topic_path(files: RecordFiles, topic_id: str, topic: Topic) -> PurePosixPath:
    """Return where a new topic's file goes: ``topics/<id>.md``, or ``topics/<Title>.md`` with readable names."""
    path = record_path("topic", topic_id, topic.created)
    if files.settings.get("readable_names") is True:
        path = readable_path(path, topic.title, exists=lambda p: (files.root / p).exists())
    return path


def topic_names(topic: Topic, path: PurePosixPath) -> list[tuple[str, str]]:
    """Return the names a new topic answers to besides its id: its file name, title and aliases."""
    return [("file name", path.stem), ("title", topic.title), *(("alias", a) for a in topic.aliases)]


def check_names_free(files: RecordFiles, record_id: str, names: Sequence[tuple[str, str]] = (), *,
                     was: str | None = None, one_script: bool = True,
                     foreign: list[tuple[str, str]] | None = None) -> None:
    """Refuse a new record whose id (or another of its ``names``: (what, name)) is already a name of another record.

    ``was``: the id the record had (a topic rename): names it answers to already are its own.
    ``one_script`` False: a name that mixes scripts is let be (an import keeps the source's names).
    ``foreign``: the vault's names outside ASCII (``cache.foreign_names()``), for a caller checking many.

    A ``[[Name]]`` link resolves by file name, id, title, alias, then path: a new record that takes a name
    already in use would silently pull links that reach another record today (a fact's ``"[[Redis]]"``
    topic) over to itself, or make them name a fact. A name that only looks like one in use (``dеploy``
    with a Cyrillic е next to ``deploy``), or that mixes scripts in one word, is refused too
    (am/records/lookalikes.py, Unicode TS #39): a link typed on another keyboard would reach the other record.
    """
    from am.errors import CollisionError, InvalidRecordError
    from am.records.lookalikes import foreign_letters, looks, mixed_script_word, spelled
    from am.records.names import NOTE_PREFIX, name_key

    cache = files.cache()
    if cache is None:
        return
    own = {record_id, was}
    for what, name in (("id", record_id), *names):
        key = name_key(name)
        owner, other = cache.resolve_name_key(key), key
        if owner is None or owner in own:
            # Not taken: does it look like a name in use? An ASCII one by key, the others by their looks.
            mine = looks(name)
            found = [(o, look) for look in sorted(mine - {key}) if (o := cache.resolve_name_key(look)) is not None]
            if not found:
                if foreign is None:  # the vault's names outside ASCII (key, id): read once, even when there are none
                    foreign = cache.foreign_names()
                found = [(o, k) for k, o in foreign if k != key and looks(k) & mine]
            owner, other = next(((o, k) for o, k in found if o not in own), (None, key))
        if owner is not None and owner not in own:
            taken = owner[len(NOTE_PREFIX):] if owner.startswith(NOTE_PREFIX) else owner
            fix = (f"choose another {'title' if what == 'file name' else what}, or use {taken}; nothing was written")
            if other == key:
                raise CollisionError(f"{what} {name!r} is already a name of {taken}: a [[{name}]] link, which reaches "
                                     f"{taken} today, would become ambiguous", hint=fix)
            raise CollisionError(f"{what} {name!r}{spelled(name)} looks like {other!r}{spelled(other)}, a name of "
                                 f"{taken}: a [[{name}]] link and a [[{other}]] link would look alike and reach "
                                 "different records (Unicode TS #39 confusables)", hint=fix)
        mixed = mixed_script_word(name) if one_script else None
        if mixed is not None:
            word, scripts = mixed
            raise InvalidRecordError(
                f"{name!r} mixes {' and '.join(s.title() for s in scripts)} letters in the word {word!r} "
                f"({foreign_letters(word)}): it looks like a word typed in one script, which a link typed that way "
                "would not reach (Unicode TS #39)",
                field=what, hint="type each word in one script; nothing was written")


def relation_body(files: RecordFiles, from_id: str, rel: str, to_id: str) -> str:
    """Return a new relation's body: its two ends as wikilinks, by file name where that is not the id."""
    names = link_names(files, Relation(id="x", rel=rel, from_=from_id, to=to_id))
    return f"[[{names.get(from_id, from_id)}]] {rel} [[{names.get(to_id, to_id)}]].\n"
