"""Remotes and merges of a vault: fetch and push through the git CLI, merge bases, and moving the branch to a merge.

Network operations run the ``git`` program in a subprocess, not libgit2:

- libgit2's push ignores ``receive.denyNonFastForwards`` on local remotes and
  reports success when a remote hook refuses (RELIABILITY.md); ``git push
  --porcelain`` reports each ref's outcome, which am checks;
- credentials stay Git's own: credential helpers, the ssh agent, ``~/.ssh/config``
  and ``http.*`` settings work exactly as for ``git push``; am stores none;
- libgit2 builds may lack ssh, and would need callbacks for every credential kind.

The refspec never has a ``+``: a push that is not a fast-forward is refused by
the remote and reported, never forced. Local work (the merge commit, the branch
move, the work tree and Git's index) is done here with pygit2 under am's write
lock, following the write protocol of ``am/git/writing.py``: files first, then
the branch by compare-and-swap, then the index. A journal in ``.git/am/`` names
the move while it is under way, so a sync killed half way is completed by the
next one (``resume_advance``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import pygit2

from am.errors import DirtyFileError, GitError, UsageError
from am.git import common
from am.git.common import _fsync_dir, _Moved, failpoint, hash_blob

if TYPE_CHECKING:
    from am.git.store import GitStore

__all__ = [
    "SYNC_FAILPOINTS",
    "PushResult",
    "advance",
    "build_tree",
    "fetch",
    "merge_base",
    "merge_commit",
    "push",
    "remote_names",
    "remote_url",
    "resume_advance",
    "set_upstream",
    "upstream",
]

SYNC_FAILPOINTS = (
    "sync-fetched",      # the remote's commits fetched, nothing merged
    "sync-merge-commit",  # the merge commit written, nothing of the vault changed
    "sync-files",        # the work tree holds the merged files, the branch has not moved
    "sync-moved",        # the branch moved, Git's index not yet updated
    "sync-pushing",      # the push is under way
)
_JOURNAL = "sync-move.json"
# Settings that keep a git subprocess from running code the vault's own files could plant.
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


@dataclass(frozen=True)
class PushResult:
    """How a push of one ref went: ok, up-to-date, rejected (the remote moved: fetch and merge again) or refused."""

    status: str
    message: str = ""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP_GIT_VARS}
    if not sys.stdin.isatty():
        env["GIT_TERMINAL_PROMPT"] = "0"  # no one to answer a password prompt: fail at once
    return env


# Git variables that describe the user's setup (credentials, ssh, proxies), not a repository.
_KEEP_GIT_VARS = frozenset({"GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_ASKPASS", "GIT_TERMINAL_PROMPT",
                            "GIT_HTTP_PROXY_AUTHMETHOD", "GIT_SSL_NO_VERIFY", "GIT_SSL_CAINFO", "GIT_CONFIG_GLOBAL",
                            "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                            "GIT_COMMITTER_EMAIL", "GIT_TRACE", "GIT_CURL_VERBOSE", "GIT_PROTOCOL"})


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(["git", *_SAFE, "-C", str(root), *args], check=False, capture_output=True, text=True,
                              env=_env(), stdin=subprocess.DEVNULL if not sys.stdin.isatty() else None)
    except FileNotFoundError:
        raise GitError("the git program was not found", hint="install Git; am syncs through it") from None
    if check and proc.returncode != 0:
        raise GitError(f"git {args[0]} failed: {_last_line(proc.stderr)}")
    return proc


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def remote_names(store: GitStore) -> list[str]:
    """Return the names of the vault's configured remotes."""
    return sorted(r.name for r in store.repo.remotes if r.name)


def remote_url(store: GitStore, name: str) -> str | None:
    """Return a remote's URL, or None when no remote has that name."""
    return store.config_value(f"remote.{name}.url")


def upstream(store: GitStore, branch: str) -> tuple[str, str] | None:
    """Return (remote, remote branch) a local branch tracks, or None."""
    remote = store.config_value(f"branch.{branch}.remote")
    merge = store.config_value(f"branch.{branch}.merge")
    if not remote or not merge or remote == ".":
        return None
    return remote, merge.removeprefix("refs/heads/")


def set_upstream(store: GitStore, *, remote: str, url: str, branch: str) -> None:
    """Point ``remote`` at ``url`` (adding it) and make it the upstream of ``branch``."""
    if url.startswith("-") or "\n" in url:
        raise UsageError(f"{url!r} is not a remote URL", hint="give a URL or path such as ssh://host/vault.git")
    if remote_url(store, remote) is None:
        _git(store.root, "remote", "add", remote, url)
    else:
        _git(store.root, "remote", "set-url", remote, url)
    _git(store.root, "config", f"branch.{branch}.remote", remote)
    _git(store.root, "config", f"branch.{branch}.merge", f"refs/heads/{branch}")
    store.__dict__.pop("_config", None)


def _check_names(remote: str, branch: str) -> None:
    if remote.startswith("-") or branch.startswith("-") or ".." in branch or any(c in branch for c in " ~^:?*[\\"):
        raise UsageError(f"refusing remote {remote!r} / branch {branch!r}", hint="name a configured remote and branch")


def fetch(store: GitStore, remote: str, branch: str) -> str | None:
    """Fetch a remote's branch; return its commit, or None when the remote has no such branch (yet)."""
    _check_names(remote, branch)
    named = remote_url(store, remote) is not None
    spec = f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}" if named else f"refs/heads/{branch}"
    proc = _git(store.root, "fetch", "--no-tags", "--quiet", remote, spec, check=False)
    if proc.returncode != 0:
        if "couldn't find remote ref" in proc.stderr or "could not find remote ref" in proc.stderr:
            return None
        raise GitError(f"could not fetch from {remote}: {_last_line(proc.stderr)}",
                       hint="check the remote (git remote -v) and your network or credentials; nothing was changed")
    if named:
        return store.branch_tip(f"refs/remotes/{remote}/{branch}")
    head = (store.gitdir / "FETCH_HEAD").read_text(encoding="utf-8", errors="replace").split("\t", 1)[0].strip()
    return head or None


def push(store: GitStore, remote: str, commit: str, branch: str) -> PushResult:
    """Push ``commit`` to the remote's ``branch`` as a fast-forward only, and say how it went for that ref."""
    _check_names(remote, branch)
    failpoint("sync-pushing")
    proc = _git(store.root, "push", "--porcelain", remote, f"{commit}:refs/heads/{branch}", check=False)
    target = f"refs/heads/{branch}"
    for line in proc.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or not parts[1].endswith(":" + target):
            continue
        flag, summary = parts[0], parts[2]
        if flag in (" ", "*"):
            return PushResult("ok", summary)
        if flag == "=":
            return PushResult("up-to-date", summary)
        if flag == "!" and ("fetch first" in summary or "non-fast-forward" in summary):
            return PushResult("rejected", summary)
        return PushResult("refused", summary)
    return PushResult("refused", _last_line(proc.stderr))


def merge_base(store: GitStore, a: str, b: str) -> str | None:
    """Return the best common ancestor of two commits, or None (unrelated histories)."""
    try:
        found = store.repo.merge_base(a, b)
    except (pygit2.GitError, KeyError, ValueError):
        return None
    return None if found is None else str(found)


def build_tree(store: GitStore, commit: str, files: dict[str, bytes | None]) -> str:
    """Return the id of ``commit``'s tree with ``files`` set (bytes) or removed (None)."""
    repo = store.repo
    nested: dict[str, object] = {}
    for path, data in files.items():
        parts = PurePosixPath(path).parts
        node = nested
        for part in parts[:-1]:
            node = node.setdefault(part, {})  # type: ignore[assignment]
            if not isinstance(node, dict):
                raise GitError(f"{path}: a file of the merge is where a folder should be")
        node[parts[-1]] = None if data is None else repo.create_blob(data)

    def write(tree: pygit2.Tree | None, changes: dict[str, object]) -> pygit2.Oid | None:
        builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
        for name, change in changes.items():
            entry = tree[name] if tree is not None and name in tree else None
            if isinstance(change, dict):
                sub = repo[entry.id].peel(pygit2.Tree) if entry is not None and entry.type_str == "tree" else None
                oid = write(sub, change)
                if oid is None:
                    if entry is not None:
                        builder.remove(name)
                else:
                    builder.insert(name, oid, pygit2.enums.FileMode.TREE)
            elif change is None:
                if entry is not None:
                    builder.remove(name)
            else:
                mode = entry.filemode if entry is not None and entry.type_str == "blob" else pygit2.enums.FileMode.BLOB
                builder.insert(name, change, mode)  # type: ignore[arg-type]
        if len(builder) == 0 and tree is not None and changes:
            return None
        return builder.write()

    root = repo[commit].peel(pygit2.Tree)
    oid = write(root, nested)
    return str(oid if oid is not None else repo.TreeBuilder().write())


def merge_commit(store: GitStore, tree: str, parents: list[str], *, message: str,
                 author: tuple[str, str], committer: tuple[str, str]) -> str:
    """Write a commit object (no branch moves) and return its id."""
    if "\x00" in message:
        raise GitError("a commit message may not contain NUL")
    oid = store.repo.create_commit(None, pygit2.Signature(*author), pygit2.Signature(*committer), message,
                                   pygit2.Oid(hex=tree), [pygit2.Oid(hex=p) for p in parents])
    failpoint("sync-merge-commit")
    return str(oid)


def advance(store: GitStore, target: str, *, expected: str | None, reflog: str) -> list[str]:
    """Move HEAD's branch from ``expected`` to ``target``, bringing the work tree and Git's index along.

    Only the paths that differ are written; a user's uncommitted or staged
    edit to one of them is refused before anything changes. Raises _Moved
    (from am.git.common) when the branch is no longer at ``expected``.
    Returns the paths that changed. The caller holds ``write_lock``.
    """
    ref = store.head_ref()
    if store.branch_tip(ref) != expected:
        raise _Moved()
    changes = store.tree_changes(expected, target)
    _check_clean(store, expected, changes)
    journal = store._am_dir / _JOURNAL
    _write_journal(journal, {"ref": ref, "from": expected, "to": target, "reflog": reflog})
    _apply(store, ref, expected, target, changes, reflog)
    journal.unlink(missing_ok=True)
    return [p for p, _ in changes]


def _check_clean(store: GitStore, expected: str | None, changes: list[tuple[str, str | None]]) -> None:
    """Refuse, changing nothing, if a path to be written holds a user's uncommitted or staged edit."""
    old_tree = None if expected is None else store.repo[expected].peel(pygit2.Tree)
    index = store._read_index()
    for path, new in changes:
        try:
            old: str | None = str(old_tree[path].id) if old_tree is not None else None
        except KeyError:
            old = None
        full = store.root / path
        try:
            on_disk: str | None = hash_blob(full.read_bytes())
        except (FileNotFoundError, NotADirectoryError):
            on_disk = None
        except IsADirectoryError:
            raise DirtyFileError(f"{path} is a folder in the work tree") from None
        if on_disk not in (old, new) and not (new is None and on_disk is None):
            raise DirtyFileError(f"{path} has uncommitted changes",
                                 hint="commit or discard them first (git add/commit or git checkout -- FILE), then sync")
        if index.staged(path) not in (old, new):
            raise DirtyFileError(f"{path} has staged changes",
                                 hint="commit them first (git commit), or unstage them (git restore --staged FILE)")


def _apply(store: GitStore, ref: str, expected: str | None, target: str,
           changes: list[tuple[str, str | None]], reflog: str) -> None:
    sync_each = common._syncfs is None
    for path, new in changes:
        rel = PurePosixPath(path)
        if new is None:
            store._safe_target(rel).unlink(missing_ok=True)
        else:
            store._write_file(rel, store.read_object(new), sync=sync_each)
    if not sync_each:
        store._sync_filesystems()  # one flush for every file written, before the branch points at them
    failpoint("sync-files")
    if store.branch_tip(ref) != target:
        store._move_ref(ref, expected, pygit2.Oid(hex=target), reflog)
    failpoint("sync-moved")
    entries = [(PurePosixPath(p), pygit2.Oid(hex=n)) for p, n in changes if n is not None]
    store._update_index(entries, removed=[PurePosixPath(p) for p, n in changes if n is None])


def _write_journal(path: Path, data: dict[str, object]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(data, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def resume_advance(store: GitStore) -> str | None:
    """Finish a branch move a killed sync left half done; return the commit it moved to, or None. Hold write_lock."""
    journal = store._am_dir / _JOURNAL
    try:
        data = json.loads(journal.read_text(encoding="utf-8"))
        ref, old, new, reflog = data["ref"], data["from"], data["to"], data["reflog"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError):
        journal.unlink(missing_ok=True)
        return None
    tip = store.branch_tip(ref)
    if ref != store.head_ref() or tip not in (old, new) or store.repo.get(new) is None:
        journal.unlink(missing_ok=True)  # the branch went elsewhere since: nothing of this move to finish
        return None
    changes = store.tree_changes(old, new)
    if tip == old:
        _check_clean(store, old, changes)  # the user may have edited a file since the kill
    _apply(store, ref, old, new, changes, reflog)
    journal.unlink(missing_ok=True)
    return str(new)
