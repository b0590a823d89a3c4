"""Whether a commit outside a world's history *landed* there as an equivalent commit (DESIGN §5 rule 3, widened).

A fact learned on a feature branch at commit C holds on main once C is in
main's history: a merge commit or a fast-forward. Most teams merge otherwise —
squash merge, rebase-and-merge, cherry-pick — and a rebased feature branch
leaves C behind too. Then C's change is in the world as another commit, and
``git cherry`` tells it by its patch id (``git patch-id --stable``). So does
``Landings.find(C)``, for a commit the clone has and the world's tip M lacks,
against the non-merge commits of M's history since merge-base(C, M) (the
newest ``CAP``; beyond them, no match):

1. one has the patch id of C itself (cherry-pick, rebase-and-merge, rebased branch);
2. or of the whole diff merge-base(C, M)..C (a squash merge of a branch whose tip was C);
3. or, for a branch, remote-tracking branch or tag of the clone whose tip T
   contains C (T outside M's history), of the diff merge-base(T, M)..T (a
   squash merge of the branch after it went on past C).

A squash that needed conflict resolution, or a rebase that changed the patch
(its context lines included), has another patch id: it does not match.

Cost: nothing for a commit in the history (``CommitGraph.contains`` asks only
for the others). The first such commit computes the candidates' patch ids
(one ``git diff-tree --stdin | git patch-id`` for those not yet known); a
commit's patch id never changes, so they are kept on disk beside the
histories (``patchids.txt``, append-only), as are the findings: a landing
(C landed as L) holds wherever L is in the history, and "no landing of C (or of
branch tip T) in M" never changes either (``landed.json``). The cache is
derived: deleting it loses nothing, a corrupt file or line is ignored.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from am.errors import GitError

if TYPE_CHECKING:
    from am.git.program.patchids import PatchIds

__all__ = ["CAP", "Landing", "Landings"]

log = logging.getLogger("am")

CAP = 5000  # the newest non-merge commits of the world's history since the merge-base that are compared
_PIDS = "patchids.txt"
_FOUND = "landed.json"
_KEEP = 2000  # the newest findings per kind kept on disk: the file is written again as each is learnt
_NONE = "-"  # a commit whose diff is empty has no patch id

SAME_PATCH = "same-patch"
SQUASH = "squash"
SQUASH_BRANCH = "squash-branch"


@dataclass(frozen=True)
class Landing:
    """A commit of the world's history with the change of a commit outside it: how it came, and through which ref."""

    commit: str
    how: str  # same-patch, squash, squash-branch
    ref: str | None = None  # squash-branch: the branch (or tag) whose squash landed

    def describe(self) -> str:
        """Say how the change landed, for people (``am why``)."""
        if self.how == SQUASH:
            way = "squash merge of its branch at this commit"
        elif self.how == SQUASH_BRANCH:
            name = (self.ref or "a branch").removeprefix("refs/heads/").removeprefix("refs/remotes/")
            way = f"squash merge of {name}, which contains it"
        else:
            way = "cherry-pick, rebase-and-merge, a rebased branch or a squash of this one commit"
        return f"same change, as git cherry sees it: {way}"

    def to_json(self) -> list[str | None]:
        return [self.commit, self.how, self.ref]


class Landings:
    """Finds where commits outside one world's history landed in it; computed lazily, cached on disk."""

    def __init__(self, git: PatchIds, tip: str, history: frozenset[str], *, folder: Path | None) -> None:
        self.git = git
        self.tip = tip
        self.history = history
        self.folder = folder
        self._pids: dict[str, str] | None = None
        self._found: dict[str, list[Landing]] | None = None
        self._absent: dict[str, None] = {}  # "C M" (newest last): neither C's patch nor its branch's diff landed in M
        self._tips: dict[str, str | None] = {}  # "T M": the commit of M that squashed branch tip T, or None
        self._since: dict[str | None, dict[str, str]] = {}  # merge-base -> {patch id: oldest candidate}
        self._dirty = False
        self._stamp: str | None = None  # a digest of every ref tip: refs_containing answers hold while it stays
        self._contained: dict[str, tuple[str, list[tuple[str, str]]]] = {}

    def find(self, commit: str) -> Landing | None:
        """Return how ``commit`` (a full id the clone has, outside the history) landed in this world, else None."""
        self._load()
        assert self._found is not None
        for landing in self._found.get(commit, ()):
            if landing.commit in self.history:
                return landing
        try:
            found = self._search(commit)
        except (GitError, OSError) as err:  # no git, or a damaged clone: judged as not landed, and said
            log.warning("could not compare patch ids in %s: %s", self.git.gitdir, err)
            return None
        if found is not None and found.how != SQUASH_BRANCH:
            # Rules 1 and 2 are facts about two commits: C landed as L wherever L is. Rule 3 also
            # needs a branch of the clone, asked again each time (a deleted branch stops counting).
            self._found.setdefault(commit, []).append(found)
            self._dirty = True
        if self._dirty:
            self._save()
        return found

    def _search(self, commit: str) -> Landing | None:
        key = f"{commit} {self.tip}"
        if key not in self._absent:
            base = self.git.merge_base(commit, self.tip)
            candidates = self._candidates(base)
            if candidates:
                own = self._pid(commit, lambda: self.git.of_commits([commit]).get(commit))
                if own is not None and own in candidates:
                    return Landing(candidates[own], SAME_PATCH)
                whole = self._pid(f"{base}..{commit}", lambda: self.git.of_diff(base, commit))
                if whole is not None and whole in candidates:
                    return Landing(candidates[whole], SQUASH)
            self._absent[key] = None
            self._dirty = True
        for tip, ref in self._refs_containing(commit):
            if tip == commit or tip in self.history:
                continue
            key = f"{tip} {self.tip}"  # whether tip's squash landed in this world: a fact about commits
            if key not in self._tips:
                base = self.git.merge_base(tip, self.tip)
                candidates = self._candidates(base)
                whole = self._pid(f"{base}..{tip}", lambda: self.git.of_diff(base, tip)) if candidates else None
                self._tips[key] = candidates.get(whole) if whole is not None else None
                self._dirty = True
            landed = self._tips[key]
            if landed is not None:
                return Landing(landed, SQUASH_BRANCH, ref)
        return None

    def _refs_containing(self, commit: str) -> list[tuple[str, str]]:
        """Return the refs whose tips contain ``commit``: kept per commit while the clone's ref tips stay the same."""
        if self._stamp is None:
            import hashlib  # OpenSSL's start-up only when a fact's commit is outside the history

            listed = "".join(f"{tip} {ref}\n" for tip, ref in self.git.refs())
            self._stamp = hashlib.sha1(listed.encode("utf-8")).hexdigest()
        kept = self._contained.get(commit)
        if kept is not None and kept[0] == self._stamp:
            return kept[1]
        found = self.git.refs(containing=commit)
        self._contained[commit] = (self._stamp, found)
        self._dirty = True
        return found

    def _candidates(self, base: str | None) -> dict[str, str]:
        """Return {patch id: oldest commit} of the world's non-merge commits since ``base`` (the newest CAP)."""
        found = self._since.get(base)
        if found is None:
            commits = self.git.since(self.tip, base, cap=CAP)
            assert self._pids is not None
            missing = [c for c in commits if c not in self._pids]
            if missing:
                computed = self.git.of_commits(missing)
                self._remember({c: computed.get(c, _NONE) for c in missing})
            found = {}
            for c in commits:  # newest first: the oldest equivalent commit is kept
                pid = self._pids.get(c, _NONE)
                if pid != _NONE:
                    found[pid] = c
            self._since[base] = found
        return found

    def _pid(self, key: str, compute: Callable[[], str | None]) -> str | None:
        assert self._pids is not None
        if key not in self._pids:
            self._remember({key: compute() or _NONE})
        pid = self._pids[key]
        return None if pid == _NONE else pid

    # -- the disk cache ------------------------------------------------------------------------------

    def _load(self) -> None:
        if self._pids is not None:
            return
        self._pids, self._found = {}, {}
        if self.folder is None:
            return
        try:
            with open(self.folder / _PIDS, encoding="ascii", errors="replace") as handle:
                for line in handle:
                    parts = line.split()
                    if len(parts) == 2 and line.endswith("\n"):  # a torn last line is ignored
                        self._pids[parts[0]] = parts[1]
        except OSError:
            pass
        try:
            data = json.loads((self.folder / _FOUND).read_text(encoding="utf-8"))
            self._absent = dict.fromkeys(str(k) for k in data["absent"])
            self._tips = {str(k): None if v is None else str(v) for k, v in data["tips"].items()}
            self._contained = {str(c): (str(stamp), [(str(t), str(r)) for t, r in refs])
                               for c, (stamp, refs) in data["refs"].items()}
            for commit, rows in data["found"].items():
                self._found[str(commit)] = [Landing(str(c), str(h), None if r is None else str(r)) for c, h, r in rows]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            self._absent, self._found, self._tips, self._contained = {}, {}, {}, {}

    def _remember(self, pids: dict[str, str]) -> None:
        assert self._pids is not None
        self._pids.update(pids)
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.folder / _PIDS, "a", encoding="ascii") as handle:
                handle.write("".join(f"{k} {v}\n" for k, v in pids.items()))
        except OSError as err:  # a cache that cannot be written only costs time
            log.warning("could not cache patch ids: %s", err)

    def _save(self) -> None:
        if self.folder is None or self._found is None:
            return
        try:
            absent = list(self._absent)[-_KEEP:]  # the newest: older tips are asked no more
            found = {c: [x.to_json() for x in rows] for c, rows in sorted(self._found.items())}
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{_FOUND}.{os.getpid()}.tmp"
            tips = dict(list(self._tips.items())[-_KEEP:])
            refs = {c: [stamp, [list(x) for x in listed]] for c, (stamp, listed) in
                    sorted(self._contained.items()) if stamp == self._stamp}  # older answers never serve again
            tmp.write_text(json.dumps({"found": found, "absent": absent, "tips": tips, "refs": refs}), encoding="utf-8")
            os.replace(tmp, self.folder / _FOUND)
            self._dirty = False
        except OSError as err:
            log.warning("could not cache where commits landed: %s", err)
