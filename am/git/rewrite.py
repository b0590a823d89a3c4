"""Rewrite a vault's local history so that no commit holds given text: `am purge`'s Git work.

Every commit reachable from the local branches is made again, parents first, with:

* each blob that holds a needle (the purged text) rewritten: a record file named in
  ``tombstones`` becomes the tombstone's bytes at every path it had; any other file has each
  needle replaced by ``[purged]``;
* each commit message with the needles replaced, and the summary after a purged id on its
  subject line (am writes ``fact: add ID <first words…>``) replaced.

A commit whose tree, parents and message are unchanged keeps its id, so history before the
text first appeared is untouched. Trees and blobs are rewritten once each (memoised by id).
The old tips are kept under ``refs/am/purged/<stamp>/`` until the caller prunes them; the
branches are moved with a reflog message; the index and the work tree's changed files are
brought to the new HEAD (the caller refused an unclean work tree first).

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

if TYPE_CHECKING:
    from am.git.store import GitStore

__all__ = ["Rewritten", "rewrite_history", "reachable_holding", "BACKUP_PREFIX", "MASK"]

BACKUP_PREFIX = "refs/am/purged/"
MASK = b"[purged]"


@dataclass(frozen=True)
class Rewritten:
    """What a rewrite did: each branch's old and new tip, the first commits that held the text, the backup refs."""

    branches: dict[str, tuple[str, str]]
    first_holding: tuple[str, ...]
    commits_rewritten: int
    backup: tuple[str, ...]


class _Rewriter:
    def __init__(self, repo: pygit2.Repository, needles: list[bytes], tombstones: Mapping[str, bytes],
                 ids: Iterable[str]) -> None:
        self.repo = repo
        self.needles = sorted(set(needles), key=len, reverse=True)  # a longer text first: its lines are inside it
        self.tombstones = dict(tombstones)
        self.ids = sorted(ids)
        self.trees: dict[tuple[pygit2.Oid, str], pygit2.Oid] = {}
        self.blobs: dict[tuple[pygit2.Oid, str], pygit2.Oid] = {}
        self.subject = re.compile(r"^(\S+: \S+ )(" + "|".join(re.escape(i) for i in self.ids) + r")\b(.*)$") \
            if self.ids else None

    def scrub(self, data: bytes) -> bytes:
        for needle in self.needles:
            if needle in data:
                data = data.replace(needle, MASK)
        return data

    def blob(self, oid: pygit2.Oid, path: str) -> pygit2.Oid:
        key = (oid, path if path in self.tombstones else "")
        found = self.blobs.get(key)
        if found is None:
            data = self.repo[oid].read_raw()
            if path in self.tombstones and self._holds(data):
                new = self.tombstones[path]
            else:
                new = self.scrub(data)
            found = oid if new == data else self.repo.create_blob(new)
            self.blobs[key] = found
        return found

    def _holds(self, data: bytes) -> bool:
        return any(n in data for n in self.needles)

    def tree(self, oid: pygit2.Oid, prefix: str = "") -> pygit2.Oid:
        key = (oid, prefix)  # a tombstone is by path: the same tree elsewhere may hold other files' names
        found = self.trees.get(key)
        if found is not None:
            return found
        tree = self.repo[oid].peel(pygit2.Tree)
        builder = self.repo.TreeBuilder(tree)
        changed = False
        for entry in tree:
            path = prefix + str(entry.name)
            if entry.type_str == "tree":
                new = self.tree(entry.id, path + "/")
            elif entry.type_str == "blob":
                new = self.blob(entry.id, path)
            else:
                continue
            if new != entry.id:
                builder.insert(str(entry.name), new, entry.filemode)
                changed = True
        result = builder.write() if changed else oid
        self.trees[key] = result
        return result

    def message(self, text: str) -> str:
        data = self.scrub(text.encode("utf-8")).decode("utf-8", "replace")
        if self.subject is None:
            return data
        first, sep, rest = data.partition("\n")
        m = self.subject.match(first)
        if m and m.group(3).strip():
            first = m.group(1) + m.group(2) + " " + MASK.decode()
        return first + sep + rest


def _local_tips(repo: pygit2.Repository) -> dict[str, pygit2.Oid]:
    out: dict[str, pygit2.Oid] = {}
    for name in repo.references:
        if name.startswith("refs/heads/"):
            target = repo.references[name].resolve().target
            if isinstance(target, pygit2.Oid):
                out[name] = target
    return out


def reachable_holding(store: GitStore, needles: list[bytes], refs_prefix: str = "refs/") -> list[str]:
    """Return the refs (under ``refs_prefix``) whose history holds a needle in a blob or a message."""
    repo = store.repo
    out = []
    seen_blobs: dict[pygit2.Oid, bool] = {}
    for name in repo.references:
        if not name.startswith(refs_prefix):
            continue
        target = repo.references[name].resolve().target
        for commit in repo.walk(target, pygit2.enums.SortMode.TOPOLOGICAL):
            if any(n in commit.message.encode("utf-8") for n in needles) or _tree_holds(repo, commit.tree, needles,
                                                                                         seen_blobs):
                out.append(name)
                break
    return out


def _tree_holds(repo: pygit2.Repository, tree: pygit2.Tree, needles: list[bytes],
                seen: dict[pygit2.Oid, bool]) -> bool:
    for entry in tree:
        if entry.type_str == "tree":
            if _tree_holds(repo, repo[entry.id].peel(pygit2.Tree), needles, seen):
                return True
        elif entry.type_str == "blob":
            hit = seen.get(entry.id)
            if hit is None:
                data = repo[entry.id].read_raw()
                hit = seen[entry.id] = any(n in data for n in needles)
            if hit:
                return True
    return False


def rewrite_history(store: GitStore, needles: list[bytes], tombstones: Mapping[str, bytes], ids: Iterable[str],
                    *, stamp: str, reflog: str) -> Rewritten:
    """Rewrite every local branch's history without the needles (see the module's docstring)."""
    repo = store.repo
    rewriter = _Rewriter(repo, needles, tombstones, ids)
    tips = _local_tips(repo)
    order: list[pygit2.Commit] = []
    seen: set[pygit2.Oid] = set()
    for tip in tips.values():
        for commit in repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE):
            if commit.id not in seen:
                seen.add(commit.id)
                order.append(commit)
    mapping: dict[pygit2.Oid, pygit2.Oid] = {}
    first: list[str] = []
    rewritten = 0
    for commit in order:
        tree = rewriter.tree(commit.tree_id)
        parents = [mapping.get(p, p) for p in commit.parent_ids]
        message = rewriter.message(commit.message)
        if tree == commit.tree_id and parents == list(commit.parent_ids) and message == commit.message:
            mapping[commit.id] = commit.id
            continue
        if all(mapping.get(p, p) == p for p in commit.parent_ids):
            first.append(str(commit.id))  # its parents held no text: the text enters history here
        mapping[commit.id] = repo.create_commit(None, commit.author, commit.committer, message, tree, parents)
        rewritten += 1
    branches: dict[str, tuple[str, str]] = {}
    backup: list[str] = []
    for name, tip in tips.items():
        new = mapping[tip]
        if new == tip:
            continue
        keep = f"{BACKUP_PREFIX}{stamp}/{name.removeprefix('refs/')}"
        repo.references.create(keep, tip, force=True)
        backup.append(keep)
        repo.references[name].set_target(new, reflog)
        branches[name] = (str(tip), str(new))
    head_ref = repo.references.get("HEAD")
    target = head_ref.resolve() if head_ref is not None else None
    if target is not None and target.name in branches:
        before, after = branches[target.name]
        _bring_work_tree(store, repo, before, after)
    return Rewritten(branches, tuple(first), rewritten, tuple(backup))


def _bring_work_tree(store: GitStore, repo: pygit2.Repository, old: str, new: str) -> None:
    """Write the files HEAD's rewrite changed into the work tree, and Git's index to the new tree."""
    before, after = repo[old].peel(pygit2.Commit).tree, repo[new].peel(pygit2.Commit).tree
    root = Path(store.root)
    for delta in before.diff_to_tree(after).deltas:
        path = delta.new_file.path
        target = root / path
        data = repo[delta.new_file.id].read_raw()
        tmp = target.with_name(f".{target.name}.am-purge.{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    index = repo.index
    index.read_tree(after)
    index.write()


def dirty_paths(store: GitStore) -> list[str]:
    """Return the tracked files whose work-tree or index state differs from HEAD (untracked files aside)."""
    flags = pygit2.enums.FileStatus
    ignore = flags.WT_NEW | flags.IGNORED
    return sorted(p for p, f in store.repo.status().items() if f & ~ignore)


def prune_purged(store: GitStore) -> list[str]:
    """Delete the purge's backup refs, expire every reflog now, and drop unreachable objects (git gc)."""
    import subprocess

    repo = store.repo
    gone = [name for name in repo.references if name.startswith(BACKUP_PREFIX)]
    for name in gone:
        repo.references.delete(name)
    root = str(store.root)
    for args in (["reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all"],
                 ["gc", "--prune=now", "--quiet"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return gone
