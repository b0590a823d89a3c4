"""Finding the record an id names, for a write that updates it and for the facade's reads by id.

``get`` raises ``NotFoundError`` with a "did you mean" for a mistyped id (``id_hint``: ids that share
its longest start, read from the cache's index); ``topic_hint`` does the same among the topics.

``check_filters`` refuses the filters of a listing (``--repo``, ``--branch``, ``--topic``) that name
nothing, as ``am slice`` refuses them (issue 33.4): a typo only finds fewer records, and "no facts match",
exit 0, cannot be told from "there are none". A repo is known when registered, in ``.am/vault.yml`` or
named by a record; a topic when a record is it or is about it; a branch when a record names it or a
registered clone has it. ``am search`` checks before it lists; ``am fact list`` and ``am relation list``
only when nothing matched (a filter that matched something names something), so a listing that finds
records pays nothing for it.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import NotFoundError, UnknownWorldError
from am.records.model import Fact, Record, Relation, Topic

if TYPE_CHECKING:
    from am.cache.recordfiles import RecordFiles

__all__ = ["check_branch_named", "check_filters", "check_record_named", "get", "get_typed", "id_hint", "known_repos",
           "topic_hint"]


def get(files: RecordFiles, record_id: str) -> tuple[PurePosixPath, Record]:
    """Return (path, record) for an id, or raise NotFoundError."""
    path = files.locate(record_id)
    if path is None:
        raise NotFoundError(f"no record with id {record_id!r}",
                            hint=id_hint(files, record_id) + "list them with: am fact list / am topic list")
    return path, files.read_path(path)


def get_typed(files: RecordFiles, record_id: str, kind: type[Record], noun: str) -> tuple[PurePosixPath, Any]:
    """Return (path, record) for an id that must name a record of the given type."""
    path, record = get(files, record_id)
    if not isinstance(record, kind):
        raise NotFoundError(f"{record_id!r} is a {record.type}, not a {noun}")
    return path, record


def id_hint(files: RecordFiles, missing: str) -> str:
    """Return 'did you mean X? ' for a mistyped record id, or '': ids that share its longest start are compared."""
    from am.worlds.branches import did_you_mean

    cache = files.cache()
    if cache is None:
        return ""
    for end in range(len(missing) - 1, 2, -1):  # index range scans, longest shared start first
        near = [hit.id for hit in cache.ids_with_prefix(missing[:end], limit=200)]
        if near:
            guess = did_you_mean(missing, near)
            return f"did you mean {guess!r}? " if guess else ""
    return ""


def topic_hint(files: RecordFiles, missing: str) -> str:
    """Return 'did you mean X? ' for a mistyped topic id, or ''."""
    from am.worlds.branches import did_you_mean

    ids: Sequence[str] = sorted(r.id for _, r in files.record_pairs("topic") if isinstance(r, Topic))
    guess = did_you_mean(missing, ids)
    return f"did you mean {guess!r}? " if guess else ""


def check_filters(files: RecordFiles, *, repo: str | None = None, topic: str | None = None,
                  branch: str | None = None) -> None:
    """Refuse a --repo, --topic or --branch that names nothing (exit 13, or 4 for a topic), with the closest name."""
    if repo is not None:
        from am.worlds.branches import check_repo_known

        check_repo_known(repo, known_repos(files))  # exit 13, as am slice
    if topic is not None:
        from am.cache.search import topic_named

        cache = files.cache()
        # A topic only facts name (no file of its own) still narrows: the rule am.cache.search applies.
        if cache is not None and not topic_named(cache, topic):
            raise NotFoundError(f"unknown topic {topic!r}",
                                hint=topic_hint(files, topic) + "list them with: am topic list")
    if branch is not None:
        check_branch_named(files, branch, repo=repo)


def check_branch_named(files: RecordFiles, branch: str, *, repo: str | None = None) -> None:
    """Refuse a --branch that no record names and no registered clone of the vault's repos has."""
    named = {r.version for kind in ("fact", "relation") for _, r in files.record_pairs(kind)
             if isinstance(r, (Fact, Relation)) and r.version and (repo is None or r.repo == repo)}
    if branch in named:
        return
    names = named | _clone_branches([repo] if repo is not None else known_repos(files))
    if branch in names:
        return
    from am.worlds.branches import closest_hint, known_list

    raise UnknownWorldError(
        f"branch {branch!r} is named by no record and is in no registered clone"
        + (f" of {repo}" if repo else "") + f" (branches: {known_list(sorted(names))})",
        hint=closest_hint(branch, sorted(names), "check the name (am fact list shows each fact's repo@branch)"))


def _clone_branches(repos: Iterable[str]) -> set[str]:
    from am.registry import Registry
    from am.worlds.ancestry import open_clone
    from am.worlds.branches import branch_names

    registry = Registry.load()
    found: set[str] = set()
    for name in sorted(set(repos) & set(registry.repos)):
        store, _ = open_clone(name, registry)
        if store is not None:
            found |= set(branch_names(store))
    return found


def check_record_named(files: RecordFiles, record_id: str) -> None:
    """Refuse a --topic of ``am relation list`` that names no record (a relation's ends are topics or facts)."""
    if files.locate(record_id) is None:
        raise NotFoundError(f"no record {record_id!r} in the vault",
                            hint=id_hint(files, record_id) + "list them with: am topic list, am fact list")


def known_repos(files: RecordFiles) -> set[str]:
    """Return the code-repo names a vault knows: registered here, in .am/vault.yml, or named by records."""
    from am.records.model import Fact, Relation
    from am.records.vaultfile import repos_of
    from am.registry import Registry

    names = set(Registry.load().repos) | set(repos_of(files.settings))
    cache = files.cache()
    if cache is not None and hasattr(cache, "repo_names"):
        names |= set(cache.repo_names())
    else:
        names |= {r.repo for _, r in files.iter_records() if isinstance(r, (Fact, Relation)) and r.repo}
    return names


def topic_named(files: RecordFiles, name: str) -> str:
    """Return the id of the topic ``name`` names: its id, else its title or an alias (as a [[link]] resolves them).

    A name that is no topic's is returned as given, so the caller's own "no topic" error (with its hint) says so.
    """
    from am.records.ids import is_valid_id
    from am.records.names import name_key

    if is_valid_id(name) and files.locate(name) is not None:
        return name
    index = files.cache()
    found = index.resolve_name_key(name_key(name)) if index is not None else None
    if found is not None:
        try:
            _, record = get(files, found)
        except NotFoundError:
            return name
        if isinstance(record, Topic):
            return found
    return name
