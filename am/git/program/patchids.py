"""Patch ids of a code repository's commits, read through the git CLI (``git patch-id --stable``).

A patch id names a change by its diff, with line numbers and whitespace left
out: a cherry-picked or rebased commit has the patch id of the original, and a
squash merge has the patch id of the whole diff of the branch it squashed. It is
how ``git cherry`` tells which commits of a branch are already upstream, and how
``am.worlds.landed`` tells a fact's change landed in a world as another commit.

Git computes them: libgit2 has no ``git cherry``, and the git CLI is the oracle
the tests hold these to. The clone is only read: external diff drivers and
textconv filters are off, rename detection is off (as ``git cherry`` sees it),
and no optional lock is taken.

Decisions: docs/decisions/worlds.md.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from am.errors import GitError

__all__ = ["PatchIds"]

# A diff as git cherry computes it: no renames, no external programs, plain prefixes.
_DIFF = ("-p", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color", "--src-prefix=a/",
         "--dst-prefix=b/", "--full-index", "--binary")


class PatchIds:
    """The git CLI over one clone's git directory: merge-bases, candidate commits and their patch ids."""

    def __init__(self, gitdir: Path, *, repo: Callable[[], Any] | None = None) -> None:
        self.gitdir = gitdir
        # The clone opened with pygit2, asked for only when a merge-base is (a warm slice imports no pygit2).
        self.repo = repo

    def _run(self, args: list[str], *, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
        from am.git.program.prewrite import SAFE_GIT, git_env

        # am's safe settings (no hook, no fsmonitor the clone's config could point at), no hook's GIT_* variables.
        env = {**git_env(), "GIT_OPTIONAL_LOCKS": "0", "GIT_DIR": str(self.gitdir)}
        proc = subprocess.run(["git", *SAFE_GIT, *args], input=stdin, env=env, capture_output=True, check=False,
                              stdin=None if stdin is not None else subprocess.DEVNULL)
        if proc.returncode not in ok:
            detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {args[0]} failed in {self.gitdir}: {detail[-1] if detail else proc.returncode}",
                           hint="run: git fsck in the clone")
        return proc.stdout

    def merge_base(self, a: str, b: str) -> str | None:
        """Return the best common ancestor of two commits, or None when they share no history."""
        if self.repo is not None:  # libgit2's, in this process: one per fact outside a world, each new tip
            import pygit2

            try:
                found = self.repo().merge_base(a, b)
            except (pygit2.GitError, KeyError, ValueError) as err:
                raise GitError(f"no merge base of {a[:10]} and {b[:10]} in {self.gitdir}: {err}",
                               hint="run: git fsck in the clone") from None
            return None if found is None else str(found)
        out = self._run(["merge-base", a, b], ok=(0, 1)).decode("ascii").split()
        return out[0] if out else None

    def since(self, tip: str, base: str | None, *, cap: int) -> list[str]:
        """Return the newest ``cap`` non-merge commits of ``tip``'s history that are not in ``base``'s."""
        args = ["rev-list", "--no-merges", f"--max-count={cap}", tip]
        if base is not None:
            args.append(f"^{base}")
        return self._run(args).decode("ascii").split()

    def of_commits(self, commits: Iterable[str]) -> dict[str, str]:
        """Return {commit: patch id} for non-merge commits (a commit with an empty diff has none)."""
        wanted = "".join(f"{c}\n" for c in commits)
        if not wanted:
            return {}
        diffs = self._run(["diff-tree", "--stdin", "--root", "-r", *_DIFF], stdin=wanted.encode("ascii"))
        return {commit: pid for pid, commit in _pairs(self._patch_id(diffs))}

    def of_diff(self, base: str | None, tip: str) -> str | None:
        """Return the patch id of the whole diff from ``base`` (None: the empty tree) to ``tip``, or None if empty."""
        start = base or "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # the empty tree (SHA-1)
        diff = self._run(["diff-tree", "-r", *_DIFF, start, tip])
        found = _pairs(self._patch_id(diff))
        return found[0][0] if found else None

    def refs(self, *, containing: str | None = None) -> list[tuple[str, str]]:
        """Return (tip commit, ref name) of the branches, remote-tracking branches and tags (whose history has ``containing``)."""
        args = ["for-each-ref", "--format=%(objectname) %(*objectname) %(refname)"]
        if containing is not None:
            args.append(f"--contains={containing}")
        out = self._run([*args, "refs/heads", "refs/remotes", "refs/tags"]).decode("utf-8", "replace")
        found = []
        for line in out.splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[2]:
                found.append((parts[1] or parts[0], parts[2]))  # an annotated tag names its commit as %(*objectname)
        return found

    def _patch_id(self, diffs: bytes) -> bytes:
        if not diffs.strip():
            return b""
        return self._run(["patch-id", "--stable"], stdin=diffs)


def _pairs(out: bytes) -> list[tuple[str, str]]:
    pairs = []
    for line in out.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 2:
            pairs.append((parts[0], parts[1]))
    return pairs
