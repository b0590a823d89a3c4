"""Lost commits (``LostCommits``): what no branch or tag reaches any more, found in the reflogs and the objects.

Read-only: ``am recover`` lists what this finds and restores it through the
repairs (repair.py). Owned by ``GitStore`` (am/git/store.py).

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pygit2

import am.git.coord.inflight as inflight
from am.git.reading import Reader
from am.git.values import CommitInfo


class LostCommits:
    """Reflogs, and the commits no ref reaches (from the reflogs, or every object like git fsck --unreachable)."""

    def __init__(self, reader: Reader, am_dir: Path) -> None:
        self.reader = reader
        self.repo = reader.repo
        self._am_dir = am_dir

    def reflog(self, ref: str) -> list[tuple[str, str, str]]:
        """Return (old id, new id, message) of a ref's reflog, newest first (empty when there is none)."""
        reference = self.repo.references.get(ref)
        if reference is None:
            return []
        try:
            return [(str(e.oid_old), str(e.oid_new), e.message or "") for e in reference.log()]
        except (pygit2.GitError, KeyError):
            return []

    def left_by(self, ids: set[str]) -> dict[str, str]:
        """Return, for each of ``ids`` a reflog shows leaving a ref, the message of the newest entry that took it off.

        Every reflog is read (HEAD's and each ref's), newest entry first across them
        all; an entry takes off what its old id reaches and its new id does not
        (walking only commits no branch or tag reaches, as lost ones are).
        """
        head = self.reader.head()
        tips = [] if head is None else [pygit2.Oid(hex=head)]
        for name in self.repo.references:
            if name.startswith("refs/am-"):
                continue  # as _reachable_from_refs: what only am's own refs hold counts as lost
            try:
                tips.append(self.repo.references[name].resolve().peel(pygit2.Commit).id)
            except (pygit2.GitError, KeyError, ValueError, pygit2.InvalidSpecError):
                continue
        entries: list[tuple[int, int, Any]] = []
        for name in ["HEAD", *self.repo.references]:
            reference = self.repo.references.get(name)
            try:
                log = list(reference.log()) if reference is not None else []
            except (pygit2.GitError, KeyError):
                continue
            entries += [(-e.committer.time, len(entries) + i, e) for i, e in enumerate(log)]
        pending, out = set(ids), {}
        for _, _, entry in sorted(entries, key=lambda item: item[:2]):
            old, new = entry.oid_old, entry.oid_new
            if not pending:
                break
            if old == new or set(str(old)) == {"0"}:
                continue
            try:
                walker = self.repo.walk(old, pygit2.enums.SortMode.NONE)
                for tip in [*tips, new] if set(str(new)) != {"0"} else tips:
                    walker.hide(tip)
                gone = [str(c.id) for c in walker]
            except (pygit2.GitError, KeyError, ValueError):
                continue
            for cid in pending.intersection(gone):
                out[cid] = entry.message or ""
            pending.difference_update(gone)
        return out

    def _reachable_from_refs(self) -> set[str]:
        walker = None
        for name in self.repo.references:
            if name == "HEAD" or name.startswith("refs/am-"):
                continue
            try:
                target = self.repo.references[name].resolve().peel(pygit2.Commit).id
            except (pygit2.GitError, KeyError, ValueError, pygit2.InvalidSpecError):
                continue
            if walker is None:
                walker = self.repo.walk(target, pygit2.enums.SortMode.NONE)
            else:
                walker.push(target)
        head = self.reader.head()
        if head is not None:
            if walker is None:
                walker = self.repo.walk(head, pygit2.enums.SortMode.NONE)
            else:
                walker.push(pygit2.Oid(hex=head))
        return set() if walker is None else {str(c.id) for c in walker}

    def lost_commits(self, *, scan_objects: bool = True) -> list[tuple[CommitInfo, str]]:
        """Return commits no branch or tag reaches, oldest first, each with how it was found.

        The reflogs are read first (``reflog``); with ``scan_objects`` every
        object in the database is then looked at too (``unreachable``), like
        ``git fsck --unreachable``, for a repository without reflogs.
        """
        reachable = self._reachable_from_refs()
        found: dict[str, str] = {}

        def collect(start: str, how: str) -> None:
            if start in reachable or start in found or set(start) == {"0"}:
                return
            try:
                walker = self.repo.walk(start, pygit2.enums.SortMode.NONE)
            except (pygit2.GitError, KeyError, ValueError):
                return
            for c in walker:
                cid = str(c.id)
                if cid in reachable or cid in found:
                    walker.hide(c.id)
                    continue
                found[cid] = how

        refs = ["HEAD", *self.repo.references]
        for name in refs:
            for old, new, _ in self.reflog(name):
                collect(new, "reflog")
                collect(old, "reflog")
        if scan_objects:
            commit_type = pygit2.enums.ObjectType.COMMIT
            failed = self._failed_writes(reachable)
            for oid in self.repo.odb:
                if str(oid) in reachable or str(oid) in found or str(oid) in failed:
                    continue
                try:
                    kind = self.repo.odb.read_header(oid)[0]
                except (pygit2.GitError, KeyError, ValueError):
                    continue
                if kind == commit_type:
                    collect(str(oid), "unreachable")
        infos = [self.reader.commit_info(cid) for cid in found]
        # Oldest first, parents before children, so restoring them replays history in order.
        order = {cid: i for i, cid in enumerate(self._topo_order(found))}
        infos.sort(key=lambda i: order[i.id])
        return [(info, found[info.id]) for info in infos]

    def _failed_writes(self, reachable: set[str]) -> set[str]:
        """Return the commits of am writes whose branch move failed (noted by the writer, who reported the error)."""
        chain: set[str] = set()
        for new, tip in inflight.failed_moves(self._am_dir):
            try:
                walker = self.repo.walk(new, pygit2.enums.SortMode.NONE)
                if tip is not None:
                    walker.hide(pygit2.Oid(hex=tip))
            except (pygit2.GitError, KeyError, ValueError):
                continue
            for c in walker:
                if str(c.id) in reachable or str(c.id) in chain:
                    walker.hide(c.id)
                    continue
                chain.add(str(c.id))
        return chain

    def _topo_order(self, ids: dict[str, str]) -> list[str]:
        """Return ids so that every commit comes after its parents among them (ties by time)."""
        infos = {cid: self.reader.commit_info(cid) for cid in ids}
        done: list[str] = []
        seen: set[str] = set()

        def visit(cid: str) -> None:
            stack = [(cid, False)]
            while stack:
                node, expanded = stack.pop()
                if expanded:
                    if node not in seen:
                        seen.add(node)
                        done.append(node)
                    continue
                if node in seen:
                    continue
                stack.append((node, True))
                for parent in infos[node].parents:
                    if parent in infos and parent not in seen:
                        stack.append((parent, False))

        for cid in sorted(infos, key=lambda c: (infos[c].time, c)):
            visit(cid)
        return done
