"""`am check` across files: topics, relation ends, supersessions, cycles, body links, merged texts.

Each check reads records as ``Gist`` values (am/upkeep/checkmemo.py): what a
file's bytes say of its names and references, kept between checks, so an
unchanged file is not parsed again for them.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from am.records.names import NOTE_PREFIX
from am.upkeep.checkmemo import Gist
from am.upkeep.issues import Issue

__all__ = ["check_cycles", "check_duplicate_names", "check_lookalikes", "check_references"]


def check_references(path: str, record: Gist, resolve: Callable[[str], str | None],
                     get: Callable[[str], Gist | None], issues: list[Issue],
                     attachment: Callable[[str], bool] | None = None) -> None:
    """Add the issues of one record's references to others: topics, ends, supersessions, links."""
    if record.merged:
        issues.append(Issue("warning", "merged-text", path,
                            "holds two versions of its text kept by a merge; edit them into one text "
                            "and delete the am:merged lines", "body"))

    def by_value(ref: str) -> str | None:
        # A property value: a [[link]] resolves as Obsidian does, a bare value is an id (as the cache reads it:
        # "postgres" is not the topic titled Postgres, and a slice would show its fact under no topic file).
        found = resolve(ref)
        return found if ref.startswith("[[") or found == ref else None

    def exists(ref: str) -> bool:
        found = by_value(ref)
        return found is not None and not found.startswith(NOTE_PREFIX)

    if record.type == "fact":
        for topic in record.topics:
            found = by_value(topic)
            if found is None:
                issues.append(Issue("warning", "unknown-topic", path,
                                    f"topic {topic!r} does not exist; create it with: am topic add "
                                    f"{topic if not topic.startswith('[[') else 'ID --title ' + repr(topic[2:-2])}",
                                    "topics"))
            elif found.startswith(NOTE_PREFIX):
                issues.append(Issue("warning", "not-a-topic", path,
                                    f"{topic!r} is the note {found[len(NOTE_PREFIX):]}, not a topic", "topics"))
            else:
                target = get(found)
                if target is not None and target.type != "topic":
                    issues.append(Issue("error", "not-a-topic", path, f"{topic!r} is a {target.type}, not a topic",
                                        "topics"))
        _check_supersession(path, record, exists, lambda r: get(resolve(r) or r), issues)
    elif record.type == "relation":
        for field, value in (("from", record.from_), ("to", record.to)):
            if value and not exists(value):
                issues.append(Issue("error", "missing-target", path, f"{field} names {value!r}, which does not exist",
                                    field))
    # A relation's own ends are already reported as missing targets.
    ends = {record.from_, record.to} if record.type == "relation" else set()
    for name, line in record.links:
        if resolve(name) is None and name not in ends and not (attachment is not None and attachment(name)):
            issues.append(Issue("warning", "dangling-link", path, f"[[{name}]] links to no record or note",
                                "body", line))


def _check_supersession(path: str, fact: Gist, exists: Callable[[str], bool],
                        get: Callable[[str], Gist | None], issues: list[Issue]) -> None:
    for old_id in fact.supersedes:
        if not exists(old_id):
            issues.append(Issue("error", "missing-target", path, f"supersedes {old_id!r}, which does not exist",
                                "supersedes"))
            continue
        old = get(old_id)
        if old is not None and old.type == "fact" and old.superseded_by != fact.id:
            issues.append(Issue("error", "half-supersession", path,
                                f"supersedes {old_id!r}, but that fact's superseded_by is "
                                f"{old.superseded_by!r}; set superseded_by: {fact.id} there",
                                "supersedes"))
    if fact.superseded_by:
        new = get(fact.superseded_by)
        if not exists(fact.superseded_by):
            issues.append(Issue("error", "half-supersession", path,
                                f"superseded_by names {fact.superseded_by!r}, which does not exist",
                                "superseded_by"))
        elif new is not None and new.type == "fact" and fact.id not in new.supersedes:
            issues.append(Issue("error", "half-supersession", path,
                                f"superseded_by {fact.superseded_by!r}, but that fact does not list "
                                f"{fact.id!r} in supersedes", "superseded_by"))
    elif fact.status == "superseded":
        issues.append(Issue("warning", "half-supersession", path,
                            "status is superseded but superseded_by is not set", "superseded_by"))


def check_cycles(records: Mapping[str, tuple[str, Gist]], get: Callable[[str], Gist | None],
                 issues: list[Issue]) -> None:
    """Report every supersede cycle once (a fact that, step by step, supersedes itself)."""
    def successors(rid: str) -> list[str]:
        rec = records[rid][1] if rid in records else get(rid)
        return list(rec.supersedes) if rec is not None and rec.type == "fact" else []

    state: dict[str, int] = {}
    reported: set[frozenset[str]] = set()
    for start in sorted(r for r, (_, rec) in records.items() if rec.type == "fact"):
        if state.get(start):
            continue
        stack: list[tuple[str, list[str]]] = [(start, successors(start))]
        trail = [start]
        state[start] = 1
        while stack:
            node, nexts = stack[-1]
            if not nexts:
                stack.pop()
                trail.pop()
                state[node] = 2
                continue
            nxt = nexts.pop()
            if state.get(nxt) == 1:
                cycle = trail[trail.index(nxt):]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    where = records[cycle[0]][0] if cycle[0] in records else cycle[0]
                    issues.append(Issue("error", "supersede-cycle", where,
                                        "supersede cycle: " + " -> ".join([*cycle, nxt]), "supersedes"))
            elif not state.get(nxt):
                state[nxt] = 1
                trail.append(nxt)
                stack.append((nxt, successors(nxt)))


def record_names(path: str, rid: str, gist: Gist) -> list[tuple[str, str]]:
    """Return (what, name) for each name a record answers to, as ``Names.add_record`` takes them: its file name
    (when it is not the id), id, a topic's title and aliases."""
    from am.records.names import file_stem

    stem = file_stem(path)
    names = [("id", rid)] if stem == rid else [("file name", stem), ("id", rid)]
    if gist.type == "topic" and gist.title:
        names.append(("title", gist.title))
    names += (("alias", a) for a in gist.aliases)
    return names


def check_lookalikes(records: Mapping[str, tuple[str, Gist]], issues: list[Issue]) -> None:
    """Warn about two records with names that look alike (``dеploy``, Cyrillic е, and ``deploy``): am refuses
    a new such name (am/records/lookalikes.py); one already in the vault is read as ever, and named here."""
    from am.records.lookalikes import lookalike_pairs, spelled

    names = ((name, path) for rid, (path, gist) in sorted(records.items(), key=lambda kv: kv[1][0])
             for _, name in record_names(path, rid, gist))
    for name, path, other, other_path in lookalike_pairs(names):
        issues.append(Issue("warning", "lookalike-name", path,
                            f"name {name!r}{spelled(name)} looks like {other!r}{spelled(other)}, a name of {other_path}: "
                            "a [[link]] typed one way or the other reaches a different record (Unicode TS #39); "
                            "rename one of them (am topic rename ID NEW-ID --title TITLE)"))


def check_duplicate_names(records: Mapping[str, tuple[str, Gist]], issues: list[Issue]) -> None:
    """Warn about two records that answer to the same name (file name, id, title, alias; case-insensitively):
    a ``[[Name]]`` link reaches one of them only (am/records/names.py). am refuses a new name in use; one
    written by hand or before that rule is read as ever, and named here, once a pair, on the later file."""
    from am.records.names import name_key

    first: dict[str, tuple[str, str, str, str]] = {}  # key -> (id, path, what, name) of its first owner by path
    told: set[tuple[str, str]] = set()
    for rid, (path, gist) in sorted(records.items(), key=lambda kv: kv[1][0]):
        for what, name in record_names(path, rid, gist):
            key = name_key(name)
            if not key:
                continue
            owner = first.get(key)
            if owner is None:
                first[key] = (rid, path, what, name)
            elif owner[0] != rid and (owner[0], rid) not in told:
                told.add((owner[0], rid))
                issues.append(Issue("warning", "duplicate-name", path,
                                    f"{what} {name!r} is also a name of {owner[1]} (its {owner[2]} {owner[3]!r}): a "
                                    f"[[{name}]] link reaches one of them only; rename one of them (am topic rename "
                                    "ID NEW-ID --title TITLE) or drop the alias", field=_FIELDS.get(what)))


_FIELDS = {"title": "title", "alias": "aliases", "id": "id"}
