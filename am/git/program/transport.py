"""Talking to a vault's remote through the git program: fetch, push, the upstream — with no pygit2 import.

Why the git program and not libgit2 (docs/decisions/sync.md#fetch-and-push-run-the-git-program-and-a-push-names-the-commit): libgit2's local push
ignores ``receive.denyNonFastForwards`` and reports success when a remote hook
refuses (RELIABILITY.md), while ``git push --porcelain`` reports each ref's
outcome; and credentials stay Git's own (credential helpers, the ssh agent,
``http.*``). The subprocess runs with hooks and fsmonitor off, so nothing a
vault's configuration points at runs, and without a terminal it never prompts.
This module imports no pygit2 (nor dataclasses, typing, or subprocess until a
git process is run through it), so a sync with nothing to do stays cheap: a
Python start-up and one ``git ls-remote`` (``settled``).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from am.errors import GitError, UsageError
from am.git.program.prewrite import SAFE_GIT, git_env
from am.git.refs import UNKNOWN, failpoint, read_ref, reset_last

TYPE_CHECKING = False  # not typing's: see above
if TYPE_CHECKING:
    import subprocess

__all__ = ["JOURNAL", "PushResult", "fetch", "fetch_tracked", "git", "git_env", "merge_text", "push", "settled",
           "tracked", "up_to_date"]

# The journal of a branch move under way, in .git/am/ (am/git/remote.py).
JOURNAL = "sync-move.json"

# Settings that keep a git subprocess from running code the vault's configuration could point at (the merge's
# helper process runs git with them too: they live in its module, which needs nothing of am).
_SAFE = SAFE_GIT
def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the git program in ``root`` with am's safe settings; raise GitError on failure when ``check``."""
    import subprocess

    try:
        proc = subprocess.run(["git", *_SAFE, "-C", str(root), *args], check=False, capture_output=True, text=True,
                              env=git_env(), stdin=subprocess.DEVNULL if not sys.stdin.isatty() else None)
    except FileNotFoundError:
        raise GitError("the git program was not found", hint="install Git; am syncs through it") from None
    if check and proc.returncode != 0:
        raise GitError(f"git {args[0]} failed: {_last_line(proc.stderr)}")
    return proc


def _spawn(root: Path, *args: str) -> tuple[int, str]:
    """Run the git program as ``git`` does, its output and errors read through one pipe: (exit code, text).

    For the leanest process (a no-op sync): ``os.posix_spawnp`` and one pipe,
    so the ``subprocess`` module (with threading, selectors, signal, locale)
    is not imported; one pipe for both streams cannot fill while the other is
    read. Callers read only lines they recognise and treat a failure as
    "take the full path".
    """
    quiet = not sys.stdin.isatty()
    read, write = os.pipe()  # both ends close-on-exec; the child's 1 and 2 are dup2'ed copies
    devnull = os.open(os.devnull, os.O_RDONLY) if quiet else -1
    actions = [(os.POSIX_SPAWN_DUP2, write, 1), (os.POSIX_SPAWN_DUP2, write, 2)]
    if quiet:
        actions.append((os.POSIX_SPAWN_DUP2, devnull, 0))
    try:
        pid = os.posix_spawnp("git", ["git", *_SAFE, "-C", str(root), *args], git_env(), file_actions=actions)
    except FileNotFoundError:
        os.close(read)
        raise GitError("the git program was not found", hint="install Git; am syncs through it") from None
    finally:
        os.close(write)
        if quiet:
            os.close(devnull)
    with open(read, "rb") as out:
        data = out.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), data.decode("utf-8", errors="replace")


# What git adds after the reason a remote could not be read (ssh refused, no such repository).
_BOILERPLATE = ("Could not read from remote repository.", "Please make sure you have the correct access rights",
                "and the repository exists.")


def _last_line(text: str) -> str:
    lines = [line.strip().removeprefix("fatal: ") for line in text.strip().splitlines() if line.strip()]
    said = [line for line in lines if line not in _BOILERPLATE]
    return (said or lines or ["no message"])[-1]


def _check_names(remote: str, branch: str) -> None:
    if remote.startswith("-") or branch.startswith("-") or ".." in branch or any(c in branch for c in " ~^:?*[\\"):
        raise UsageError(f"refusing remote {remote!r} / branch {branch!r}", hint="name a configured remote and branch")


class PushResult:
    """How a push of one ref went: ok, up-to-date, rejected (the remote moved: fetch and merge again), raced
    (the server failed to update its branch, which another push may have moved meanwhile) or refused."""

    __slots__ = ("lock", "message", "status")

    def __init__(self, status: str, message: str = "", *, lock: str | None = None) -> None:
        self.status = status
        self.message = message
        self.lock = lock  # a refused push: the remote's lock file that stopped it, as the remote named it

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PushResult) and (self.status, self.message) == (other.status, other.message)

    def __hash__(self) -> int:
        return hash((self.status, self.message))

    def __repr__(self) -> str:
        return f"PushResult(status={self.status!r}, message={self.message!r})"


_SECTION = re.compile(r'\s*\[\s*branch\s+"([^"\\]*)"\s*\]\s*(?:[#;].*)?')
_OTHER_SECTION = re.compile(r"\s*\[")
_KEY = re.compile(r"\s*(remote|merge)\s*=\s*([A-Za-z0-9._/-]+)\s*(?:[#;].*)?", re.IGNORECASE)


def _tracked_from_config(gitdir: Path, branch: str) -> tuple[str, str] | None:
    """Read branch.<branch>.remote and .merge from .git/config when it is plainly written; None: ask git."""
    try:
        text = (gitdir / "config").read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return None
    if "[include" in text.lower() or "\\\n" in text:
        return None  # includes and continued lines are git's to read
    found: dict[str, str] = {}
    inside = False
    for line in text.splitlines():
        section = _SECTION.fullmatch(line)
        if section:
            inside = section.group(1) == branch
        elif _OTHER_SECTION.match(line):
            inside = False
        elif inside:
            key = _KEY.fullmatch(line)
            if key:
                found[key.group(1).lower()] = key.group(2)
            elif line.strip() and not line.strip().startswith(("#", ";")):
                return None  # a value written some other way: let git read it
    remote, merge = found.get("remote"), found.get("merge", "")
    if not remote or remote == "." or not merge.startswith("refs/heads/"):
        return None
    return remote, merge.removeprefix("refs/heads/")


def tracked(root: Path, branch: str) -> tuple[str, str] | None:
    """Return (remote, remote branch) that a local branch tracks: from .git/config, else asking git (no pygit2)."""
    quick = _tracked_from_config(root / ".git", branch) if (root / ".git").is_dir() else None
    if quick is not None:
        return quick
    proc = git(root, "for-each-ref", "--format=%(upstream:remotename)%00%(upstream:remoteref)",
               f"refs/heads/{branch}", check=False)
    remote, _, merge = proc.stdout.strip().partition("\x00")
    if proc.returncode != 0 or not remote or not merge.startswith("refs/heads/") or remote == ".":
        return None
    return remote, merge.removeprefix("refs/heads/")


def fetch(root: Path, gitdir: Path, remote: str, branch: str, *, named: bool) -> str | None:
    """Fetch a remote's branch; return its commit, None when the remote lacks it, or UNKNOWN (ask pygit2)."""
    _check_names(remote, branch)
    tracking = f"refs/remotes/{remote}/{branch}"
    before = _ref(root, gitdir, tracking) if named else None
    spec = f"+refs/heads/{branch}:{tracking}" if named else f"refs/heads/{branch}"
    # Protocol v0: the server speaks first, so a fetch with nothing new is one exchange; v2 (git's default)
    # asks for the refs in a second one (ls-refs), a round trip more (~40 ms over git:// on loopback).
    # v2's gain, the server filtering thousands of refs, does not apply to a vault's few branches.
    proc = git(root, "-c", "protocol.version=0", "fetch", "--no-tags", "--quiet", remote, spec, check=False)
    if proc.returncode != 0:
        if "couldn't find remote ref" in proc.stderr or "could not find remote ref" in proc.stderr:
            return None
        raise GitError(f"could not fetch from {remote}: {_last_line(proc.stderr)}",
                       hint="check the remote (git remote -v) and your network or credentials; nothing was changed")
    if named:
        after = read_ref(gitdir, tracking)
        now = after if after != UNKNOWN else _ref(root, gitdir, tracking)
        if before is not None and now is not None and now != before and not _descends(root, before, now):
            # Merging and pushing would publish again what someone took back: stop, and keep the old
            # remote-tracking ref, so every sync stops here until a person decides.
            git(root, "update-ref", tracking, before, check=False)
            purged = _purged_from(root, now, before)
            if purged is not None:
                raise GitError(
                    f"{remote}/{branch}'s history was purged (am purge: its .am/purges.jsonl names {purged[:10]}, the "
                    "first commit that held the text), and this clone's history still holds that text; am sync does "
                    "not merge it back",
                    hint=f"keep what only this clone has (git log {now[:10]}..{before[:10]} lists it), then take the "
                         f"purged history: git fetch {remote} && git reset --keep {remote}/{branch}; add back what "
                         "you kept; then am purge --prune here; nothing was changed")
            raise GitError(f"{remote}/{branch} was rewritten (force-pushed): it no longer holds {before[:10]}, "
                           "which it held at the last fetch; am merges and pushes nothing over a rewrite",
                           hint=f"see what was taken out: git log {now[:10]}..{before[:10]}; to take the "
                                f"rewrite: git fetch {remote} && git reset --keep {remote}/{branch} (am recover "
                                f"lists the am writes that drops); to publish your history again: git fetch "
                                f"{remote}, then am sync; nothing was changed")
        return after
    head = (gitdir / "FETCH_HEAD").read_text(encoding="utf-8", errors="replace").split("\t", 1)[0].strip()
    return head or None


def _purged_from(root: Path, tip: str, ours: str) -> str | None:
    """The commit a purge log at ``tip`` (.am/purges.jsonl, am purge) names that ``ours`` still holds, else None."""
    import json

    proc = git(root, "show", f"{tip}:.am/purges.jsonl", check=False)
    if proc.returncode != 0:
        return None
    for line in proc.stdout.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        for commit in entry.get("first_holding", []) if isinstance(entry, dict) else []:
            if isinstance(commit, str) and git(root, "merge-base", "--is-ancestor", commit, ours,
                                               check=False).returncode == 0:
                return commit
    return None


def _ref(root: Path, gitdir: Path, name: str) -> str | None:
    """The commit a ref names (read from the files, else asking git), or None when there is none."""
    found = read_ref(gitdir, name)
    if found != UNKNOWN:
        return found or None
    proc = git(root, "rev-parse", "-q", "--verify", f"{name}^{{commit}}", check=False)
    return proc.stdout.strip() or None


def _descends(root: Path, old: str, new: str) -> bool:
    """Whether ``new`` holds ``old`` in its history (a missing object counts as yes: nothing to say)."""
    return git(root, "merge-base", "--is-ancestor", old, new, check=False).returncode != 1


def _upstream(root: Path, gitdir: Path, remote: str | None) -> tuple[str, str, str] | None:
    """(HEAD's branch, the remote it tracks, the remote's branch), or None: HEAD not on a branch, no
    upstream or another ``remote`` than asked, a branch move under way."""
    try:
        head = (gitdir / "HEAD").read_text(encoding="ascii").strip()
    except (OSError, UnicodeError):
        return None
    if not head.startswith("ref: refs/heads/") or (gitdir / "am" / JOURNAL).exists():
        return None
    branch = head.removeprefix("ref: refs/heads/")
    found = tracked(root, branch)
    if found is None or (remote is not None and found[0] != remote):
        return None
    return branch, found[0], found[1]


def fetch_tracked(root: Path, remote: str | None = None) -> tuple[str, str, str | None, str] | None:
    """Fetch the branch HEAD's branch tracks; return (remote, remote branch, its commit, ours), or None.

    None when this needs more than the files and the git program (HEAD not on
    a branch, no upstream or another ``remote`` than asked, a branch move under
    way); the commits are ids, the remote's may be None (it lacks the branch)
    or UNKNOWN, ours may be UNKNOWN (read_ref).
    """
    gitdir = root / ".git"
    upstream = _upstream(root, gitdir, remote)
    if upstream is None:
        return None
    branch, name, remote_branch = upstream
    theirs = fetch(root, gitdir, name, remote_branch, named=True)
    failpoint("sync-fetched")
    return name, remote_branch, theirs, read_ref(gitdir, f"refs/heads/{branch}")


def settled(root: Path, remote: str | None = None) -> tuple[str, str, str] | None:
    """Ask the tracked remote for its branch tip without fetching; (remote, remote branch, tip) when nothing is to do.

    Nothing is to do when the remote's tip, our remote-tracking ref and our
    branch are one commit: a fetch would bring nothing and write nothing, and
    there is nothing to push. ``git ls-remote`` learns that in the same one
    exchange as a fetch with nothing new, in one git process where a fetch runs
    three (fetch, its connectivity check, its auto-maintenance) and writes its
    ref and FETCH_HEAD. None: anything else (work to do, no upstream, a move
    under way, an error) — the caller takes the full path, which fetches and
    reports errors in its own words.
    """
    gitdir = root / ".git"
    upstream = _upstream(root, gitdir, remote)
    if upstream is None:
        return None
    branch, name, remote_branch = upstream
    ours = read_ref(gitdir, f"refs/heads/{branch}")
    if ours == UNKNOWN or read_ref(gitdir, f"refs/remotes/{name}/{remote_branch}") != ours:
        return None
    if reset_last(gitdir, branch):
        return None  # the full sync says what a reset left off the branch
    try:
        _check_names(name, remote_branch)
    except UsageError:
        return None
    # Protocol v0 for the reason fetch gives; the ref name is matched exactly below (v0 matches the tail).
    code, out = _spawn(root, "-c", "protocol.version=0", "ls-remote", name, f"refs/heads/{remote_branch}")
    if code != 0:
        return None
    wanted = f"refs/heads/{remote_branch}"
    tips = [oid for oid, _, ref in (line.partition("\t") for line in out.splitlines()) if ref == wanted]
    return (name, remote_branch, ours) if tips == [ours] else None


def up_to_date(fetched: tuple[str, str, str | None, str]) -> bool:
    """Whether a fetch_tracked answer means nothing to merge and nothing to push."""
    theirs, ours = fetched[2], fetched[3]
    return theirs is not None and theirs != UNKNOWN and ours == theirs


def push(root: Path, remote: str, commit: str, branch: str) -> PushResult:
    """Push ``commit`` to the remote's ``branch`` as a fast-forward only (no ``+``, no force); report that ref's outcome."""
    _check_names(remote, branch)
    failpoint("sync-pushing")
    proc = git(root, "push", "--porcelain", remote, f"{commit}:refs/heads/{branch}", check=False)
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
        lock = _held_lock(proc.stderr, target)
        if flag == "!" and lock is None and _LOST_RACE.search(summary):
            return PushResult("raced", summary)
        return PushResult("refused", summary, lock=lock)
    return PushResult("refused", _last_line(proc.stderr), lock=_held_lock(proc.stderr, target))


# How a server says its branch was not where the push expected it when it came to update it (another push landed
# between the two): git receive-pack's "failed to update ref" (its error: "cannot lock ref ...: is at X but expected
# Y"), and the wording of hosts that put the cause in the summary.
_LOST_RACE = re.compile(r"failed to update ref|failed to lock|cannot lock ref|incorrect old value")
_HELD_LOCK = re.compile(r"Unable to create '([^'\n]+\.lock)': File exists")


def _held_lock(stderr: str, target: str) -> str | None:
    """Return the lock file of ref ``target`` (or packed-refs) a remote named as held ("Unable to create '...lock':
    File exists"), or None.

    Only those stop the ref's update. The same output may name another: after a push, even a failed one, the
    server's `git receive-pack` runs `git gc --auto` and passes on what it says, such as its ``gc.pid.lock``
    held by another gc.
    """
    for found in _HELD_LOCK.finditer(stderr):
        path = os.path.normpath(found[1])
        if path.endswith(f"/{target}.lock") or path.endswith("/packed-refs.lock"):
            return path
    return None





def merge_text(base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
    """Merge a file that is not a record line by line, as Git would; None when the lines conflict."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="am-merge-") as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base or b""), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_bytes(data)
            paths.append(str(path))
        proc = subprocess.run(["git", "merge-file", "-p", "-q", *paths], check=False, capture_output=True,
                              env=git_env(), stdin=subprocess.DEVNULL)
    return proc.stdout if proc.returncode == 0 else None
