"""`am slice --path FILE...`: the memory about the files at hand, for an editor or a before-edit hook.

The facts that hold in the world and **watch** one of the paths (their ``paths``
key names the file, a folder above it, or a glob that matches it) or **mention**
it (the path, or its file name, appears in the text) come first; then the
facts about their topics and the topics one hop away (relations and links).
A watched path that no longer exists at the world's commit in the registered
clone is flagged as dead in the scope line, with the fact that watches it.
Paths are taken relative to the clone when they lie inside it.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from am.records.model import Fact, Record

if TYPE_CHECKING:
    from am.packs.pack import Pack, SliceRequest
    from am.packs.reader import VaultReader
    from am.worlds.ancestry import WorldSetup

__all__ = ["normalise", "touching", "dead_paths", "slice_paths"]


def normalise(paths: Sequence[str], clone: str | None) -> list[str]:
    """Return the paths relative to the clone when they lie inside it, as POSIX paths without ./."""
    out = []
    for raw in paths:
        path = raw.replace("\\", "/")
        if clone is not None:
            full = Path(raw).expanduser()
            full = full if full.is_absolute() else Path.cwd() / full
            try:
                path = Path(os.path.normpath(full)).relative_to(Path(clone).resolve()).as_posix()
            except ValueError:
                pass
        while path.startswith("./"):
            path = path[2:]
        out.append(path.strip("/"))
    return list(dict.fromkeys(p for p in out if p))


def _mentions(body: str, path: str) -> bool:
    if path in body:
        return True
    name = path.rsplit("/", 1)[-1]
    return "." in name and len(name) >= 4 and re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w-])", body) is not None


def touching(facts: Sequence[Fact], paths: Sequence[str]) -> list[str]:
    """Return the ids of the facts that watch or mention one of the paths, in id order."""
    from am.worlds.stale import path_matches

    return sorted(f.id for f in facts
                  if any(path_matches(w, p) for w in f.paths for p in paths)
                  or any(_mentions(f.body, p) for p in paths))


def dead_paths(facts: Sequence[Fact], setup: WorldSetup) -> list[tuple[str, str]]:
    """Return (fact id, watched path) for watched paths missing at the world's commit in the clone."""
    if setup.clone is None or setup.world.commit is None:
        return []
    from am.git import GitStore

    code = GitStore.open_code(Path(setup.clone))
    commit = setup.world.commit
    dead = []
    for fact in facts:
        for watched in fact.paths:
            path = watched.strip().lstrip("./").rstrip("/")
            if not path:
                continue
            if set(path) & set("*?["):
                top = re.split(r"[*?\[]", path, maxsplit=1)[0].rsplit("/", 1)[0]
                listed = [p for p, _ in code.tree_files([top] if top else [""], commit=commit)]
                alive = any(fnmatch.fnmatchcase(p, path) for p in listed)
            else:
                alive = code.blob_id(path, commit=commit) is not None or next(
                    iter(code.tree_files([path], commit=commit)), None) is not None
            if not alive:
                dead.append((fact.id, watched))
    return dead


def slice_paths(vault: VaultReader, request: SliceRequest, paths: Sequence[str]) -> Pack:
    """Build the pack of what the world's memory holds about these files."""
    import dataclasses

    from am.packs.assemble import build_pack
    from am.packs.retrieval import neighbourhood
    from am.packs.slice import _usage, _with_links
    from am.clock import now as clock_now
    from am.worlds.ancestry import now, setup_world
    from am.worlds.rules import resolve

    setup = setup_world(request.repo, request.branch, request.commit, at=request.at or now(),
                        include_pending=request.include_pending, cache_dir=vault.root / ".am" / "cache" / "ancestry",
                        known_repos=getattr(vault, "known_repos", None), commit_source=request.commit_source)
    wanted = normalise(paths, setup.clone)
    request = dataclasses.replace(request, paths=tuple(wanted))  # the pack's id and its hints name them
    records: list[Record]
    if request.as_of is not None:  # the vault as it was then, as a whole-world pack reads it
        from am.errors import UsageError
        from am.worlds.ancestry import records_at

        commit = vault.store.last_commit_at(request.as_of.timestamp())
        if commit is None:
            raise UsageError(f"the vault has no commit at or before {request.as_of_label or request.as_of}",
                             hint="pick a later time (see: git log --reverse --format=%ci | head -1)")
        records = list(records_at(vault, commit))
    else:
        index = vault.cache()
        records = list(index.record_values()) if index is not None else [r for _, r in vault.iter_records()]
        commit = (index.head if index is not None else None) or vault.store.head()
    res = resolve(records, setup.world, setup.oracle)
    held = [f for f in res.facts.values() if isinstance(f, Fact)]
    hits = touching(held, wanted)
    by_id = {f.id: f for f in held}
    topics = sorted({t for i in hits for t in by_id[i].topics})
    near = neighbourhood(topics, 1, topics=res.topics, facts=res.facts, relations=res.relations) if topics else {}
    around = dict.fromkeys(sorted(set(near) | set(topics)), 0)  # every fact of these topics; hits have one
    signals = _usage(vault).signals(repo=setup.world.repo, branch=setup.world.branch, at=clock_now())
    # Every record goes in, so the header counts what holds in the world, as a --topic pack's does.
    pack = build_pack(records, request, setup, vault_name=vault.name, vault_commit=commit, signals=signals,
                      first=hits, near=around)
    dead = dead_paths([by_id[i] for i in hits], setup)
    verb = "s watch or mention" if len(hits) != 1 else " watches or mentions"
    scope = (f"paths {', '.join(f'`{p}`' for p in wanted)}: {len(hits)} fact{verb} them, "
             "then the facts about their topics and the topics one hop away")
    if dead:
        scope += "; dead watched paths (gone at the world's commit): " + ", ".join(
            f"`{p}` (watched by `{fid}`)" for fid, p in dead)
    pack.scope = scope
    return _with_links(pack, vault, request, setup)  # use counted, --follow-links followed, as for any pack
