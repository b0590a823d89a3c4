"""An import's topics set against the vault's names: references resolved, clashes refused alone, ``--map``.

A source names topics it does not define (a basic-memory ``[[Redis]]`` no note
of it is, an mcp-memory relation to an entity it never made). Such a topic is
the vault's record of that name when the vault has one: it is not written, and
every fact, relation and ``[[link]]`` of the import that names it reaches the
vault's topic (``tool-redis``) instead. ``--map NAME=ID`` does the same for a
topic the source does define: NAME (its title or id, compared as links compare
names) becomes the vault's topic ID.

A topic the source defines that would answer to a name another record of the
vault answers to (the name rule of ``am topic add``: am/writes/forms.py) is
refused alone: it is left aside with the clash and the fix, and so is what
hangs on it (its facts, the relations to it); the rest of the import is written.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from am.errors import UsageError
from am.io.source import Aside, Item
from am.records.ids import MAX_ID_LENGTH, is_valid_id
from am.records.model import Fact, Relation, Topic, replace

if TYPE_CHECKING:
    from am.vault import Vault

__all__ = ["parse_map", "refuse_clashes", "resolve_topics"]


def parse_map(pairs: Sequence[str]) -> dict[str, str]:
    """Return ``--map NAME=ID`` pairs as {name key: id}; a pair without ``=`` is a usage error."""
    from am.records.names import name_key

    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, target = pair.partition("=")
        if not sep or not name.strip() or not target.strip():
            raise UsageError(f"--map {pair!r} is not NAME=ID", hint="for example: --map Redis=tool-redis")
        out[name_key(name)] = target.strip()
    return out


def _vault_topic(vault: Vault, key: str) -> str | None:
    """Return the id of the vault's topic a name key names (a link's resolution), else None."""
    cache = vault.cache()
    if cache is None:
        return None
    owner = cache.resolve_name_key(key)
    if owner is None or ":" in owner:  # a note is no topic
        return None
    path = vault.locate(owner)
    return owner if path is not None and path.parts[0] == "topics" else None


def resolve_topics(vault: Vault, items: list[Item], topic_map: Mapping[str, str],
                   aside: list[Aside]) -> tuple[list[Item], dict[str, str], set[str]]:
    """Point the import's references at the vault's topics: (items, {source topic: vault topic}, relation ids)."""
    from am.records.names import name_key

    targets: dict[str, str] = {}
    used: set[str] = set()
    for item in items:
        topic = item.record
        if not isinstance(topic, Topic):
            continue
        keys = [name_key(topic.title), name_key(topic.id)]
        mapped = next((k for k in keys if k in topic_map), None)
        if mapped is not None:
            target = topic_map[mapped]
            used.add(mapped)
            path = vault.locate(target) if is_valid_id(target) else None
            if path is None or path.parts[0] != "topics":
                raise UsageError(f"--map {topic.title}={target}: the vault has no topic {target}",
                                 hint="map the name to the id of a topic of this vault (see: am topic list)")
            targets[topic.id] = target
        elif not item.defined:
            found = _vault_topic(vault, keys[0])
            if found is not None and found != topic.id:
                targets[topic.id] = found
    for key in sorted(set(topic_map) - used):
        aside.append(Aside(f"--map {key}={topic_map[key]}", "no topic of the source has this name (nothing mapped)"))
    if not targets:
        return items, targets, set()
    out, renamed = _retarget(items, targets)
    return out, targets, renamed


def _retarget(items: list[Item], targets: dict[str, str]) -> tuple[list[Item], set[str]]:
    link = re.compile(r"\[\[(" + "|".join(re.escape(t) for t in sorted(targets, key=len, reverse=True))
                      + r")(\||\]\])")

    def relink(text: str) -> str:
        return link.sub(lambda m: f"[[{targets[m.group(1)]}{m.group(2)}", text)

    def to(tid: str) -> str:
        return targets.get(tid, tid)

    out: list[Item] = []
    renamed: set[str] = set()
    for item in items:
        r = item.record
        if isinstance(r, Topic):
            if r.id in targets:
                continue
            r = replace(r, body=relink(r.body))
        elif isinstance(r, Fact):
            r = replace(r, topics=tuple(dict.fromkeys(to(t) for t in r.topics)), body=relink(r.body))
        elif isinstance(r, Relation) and (r.from_ in targets or r.to in targets):
            parts = r.id.split("--")
            rid = "--".join(to(p) for p in parts) if len(parts) >= 3 else r.id
            rid = rid if len(rid) <= MAX_ID_LENGTH and is_valid_id(rid) else r.id
            r = replace(r, id=rid, from_=to(r.from_), to=to(r.to), body=relink(r.body))
            renamed.add(rid)
        out.append(Item(r, item.origin, item.path, item.defined))
    return out, renamed


def refuse_clashes(vault: Vault, items: list[Item], aside: list[Aside],
                   path_of: Callable[[Item], PurePosixPath]) -> list[Item]:
    """Leave aside each new topic that would answer to a name another record of the vault answers to."""
    from am.errors import CollisionError
    from am.writes.forms import check_names_free, topic_names

    cache = vault.cache()
    topics = [item for item in items if isinstance(item.record, Topic)]
    if cache is None or not topics:
        return items
    foreign = cache.foreign_names()
    refused: set[str] = set()
    for item in topics:
        topic = item.record
        assert isinstance(topic, Topic)
        try:
            check_names_free(vault.files, topic.id, topic_names(topic, path_of(item)), one_script=False,
                             foreign=foreign)
        except CollisionError as err:
            refused.add(topic.id)
            aside.append(Aside(item.origin, f"topic {topic.id} refused: {err.message}; map it to the vault's topic "
                                            f"(--map '{topic.title}=ID') or rename it in the source"))
    return [item for item in items if item.record.id not in refused] if refused else items
