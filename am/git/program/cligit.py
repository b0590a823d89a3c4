"""What a Git hook reads of its repository through the git CLI, without importing pygit2.

A hook is a new process on every ``git commit`` (obsidian-git commits on a
timer), and importing pygit2 costs more than the whole check of a one-file
commit (PERF.md "Start-up"). What the pre-commit and post-commit hooks need is
small: the files the index changes against HEAD (``git diff-index --cached``,
which skips unchanged folders by the index's cached trees), what a commit
changed (``git diff-tree``), a commit's parents, and a few blobs
(one ``git cat-file --batch`` process for all of them). ``CliStore`` answers
those, and the names the pre-commit check uses of a ``GitStore``
(``root``, ``gitdir``, ``head``, ``read_object``, ``staged_entries``), so the
check runs on either.

The hook's own environment is passed on: Git hands a pre-commit hook the index
being committed in ``GIT_INDEX_FILE`` (a temporary one for ``git commit -a``).

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from am.errors import GitError, NotAVaultError
from am.git.refs import UNKNOWN, read_ref

__all__ = ["EMPTY_TREE", "CliStore"]

# The id of the empty tree (SHA-1; am refuses SHA-256 repositories): what an unborn HEAD is compared with.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _decode(path: bytes) -> str:
    return path.decode("utf-8", "surrogateescape")


class CliStore:
    """A repository read through the git CLI: diffs, a commit's parents, and blobs by id."""

    def __init__(self, root: Path, gitdir: Path) -> None:
        self.root = root
        self.gitdir = gitdir
        self._batch: subprocess.Popen[bytes] | None = None

    @classmethod
    def open(cls, cwd: Path) -> CliStore:
        """Open the repository whose work tree is at ``cwd`` (where Git runs its hooks)."""
        dotgit = cwd / ".git"
        if dotgit.is_dir() and (dotgit / "HEAD").is_file() and not os.environ.get("GIT_DIR"):
            return cls(cwd, dotgit)
        # A linked worktree, a submodule, or GIT_DIR set: let git say where things are.
        proc = subprocess.run(["git", "rev-parse", "--show-toplevel", "--absolute-git-dir"], cwd=cwd,
                              capture_output=True, text=True, check=False)
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or len(lines) != 2:
            raise NotAVaultError(f"{cwd} is not in a Git work tree", hint="run the hook inside the vault")
        return cls(Path(lines[0]), Path(lines[1]))

    def _git(self, *args: str, index_file: str | None = None) -> bytes:
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
        if index_file:
            env["GIT_INDEX_FILE"] = index_file
        proc = subprocess.run(["git", *args], cwd=self.root, env=env, capture_output=True, check=False)
        if proc.returncode != 0:
            detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {args[0]} failed in {self.root}: {detail[-1] if detail else proc.returncode}",
                           hint="run: git status (and am doctor) in the vault")
        return proc.stdout

    def head(self) -> str | None:
        """Return the commit HEAD names, or None on an unborn branch."""
        found = read_ref(self.gitdir)
        if found != UNKNOWN:
            return found
        proc = subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd=self.root,
                              capture_output=True, text=True, check=False)
        return proc.stdout.strip() or None

    def _raw_diff(self, out: bytes) -> list[tuple[str, str | None, str | None]]:
        """Parse ``--raw -z`` output into (path, old blob or None, new blob or None)."""
        fields = out.split(b"\0")
        found: list[tuple[str, str | None, str | None]] = []
        at = 0
        while at + 1 < len(fields):
            meta = fields[at].decode("ascii").lstrip(":").split()
            at += 1
            if len(meta) < 5:
                break
            old_mode, new_mode, old, new, status = meta[:5]
            paths = [fields[at]]
            at += 1
            if status[:1] in ("R", "C"):  # not asked for (--no-renames), but read right if a config forces it
                paths.append(fields[at])
                at += 1
            before = None if set(old) == {"0"} or old_mode == "000000" else old
            after = None if set(new) == {"0"} or new_mode == "000000" else new
            if len(paths) == 2:
                found.append((_decode(paths[0]), before, None))
                found.append((_decode(paths[1]), None, after))
            else:
                found.append((_decode(paths[0]), before, after))
        return found

    def staged_changes(self, index_file: str | None,
                       tops: tuple[str, ...] = ()) -> list[tuple[str, str | None, str | None]]:
        """Return (path, blob in HEAD or None, blob staged or None) of every file the index changes against HEAD."""
        base = self.head() or EMPTY_TREE
        out = self._git("diff-index", "--cached", "--raw", "-z", "--no-renames", "--ignore-submodules=none",
                        base, "--", *tops, index_file=index_file)
        return self._raw_diff(out)

    def changes_between(self, old: str | None, new: str, tops: tuple[str, ...] = ()) -> list[tuple[str, str | None]]:
        """Return (path, new blob or None) of every file that differs between two commits (old None: empty)."""
        out = self._git("diff-tree", "-r", "--raw", "-z", "--no-renames", old or EMPTY_TREE, new, "--", *tops)
        return [(p, after) for p, _, after in self._raw_diff(out)]

    def staged_paths(self, index_file: str | None, pathspecs: tuple[str, ...] = ()) -> bytes:
        """Return the index's paths (matching ``pathspecs``), each followed by a NUL, as git lists them."""
        return self._git("ls-files", "-z", "--cached", "--", *pathspecs, index_file=index_file)

    def staged_entries(self, index_file: str | None = None) -> dict[str, str]:
        """Return {path: blob id} of the index (stage 0), for index formats am's own reader leaves alone."""
        out = self._git("ls-files", "-s", "-z", index_file=index_file)
        entries: dict[str, str] = {}
        for item in out.split(b"\0"):
            if not item:
                continue
            meta, _, path = item.partition(b"\t")
            _, oid, stage = meta.decode("ascii").split()
            if stage == "0":
                entries[_decode(path)] = oid
        return entries

    def _object(self, name: str) -> tuple[str, bytes]:
        if self._batch is None:
            self._batch = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.root, stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        stdin, stdout = self._batch.stdin, self._batch.stdout
        assert stdin is not None and stdout is not None
        stdin.write(name.encode("utf-8") + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) != 3:
            raise GitError(f"git cat-file found no object {name!r} in {self.root}",
                           hint="run: git fsck (and am doctor) in the vault")
        data = _read_exactly(stdout, int(header[2]))
        stdout.read(1)  # the newline after each object
        return header[1].decode("ascii"), data

    def read_object(self, oid: str) -> bytes:
        """Return the bytes of a blob by id."""
        return self._object(oid)[1]

    def read_blob(self, path: object, commit: str = "HEAD") -> bytes | None:
        """Return the bytes of the file at ``path`` in ``commit``, or None when it has none."""
        try:
            kind, data = self._object(f"{commit}:{path}")
        except GitError:
            return None
        return data if kind == "blob" else None

    def parents(self, commit: str) -> list[str]:
        """Return a commit's parents."""
        kind, data = self._object(commit)
        if kind != "commit":
            raise GitError(f"{commit} is a {kind}, not a commit")
        head = data.split(b"\n\n", 1)[0]
        return [ln[7:].decode("ascii") for ln in head.split(b"\n") if ln.startswith(b"parent ")]

    def close(self) -> None:
        """End the cat-file process, if one was started."""
        batch, self._batch = self._batch, None
        if batch is not None:
            assert batch.stdin is not None
            batch.stdin.close()
            batch.wait()
            if batch.stdout is not None:
                batch.stdout.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = stream.read(left)
        if not chunk:
            raise GitError("git cat-file ended early")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
