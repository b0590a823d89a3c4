"""The files a merge will bring, written ahead by a second process while this one starts up and plans.

Creating a file is most of what a merge of many records costs the file system:
on the machines am is measured on, a new file costs 0.1-0.5 ms of the
kernel's time and renaming one into a folder ~15 us (docs/decisions/sync.md#a-merges-files-are-written-ahead-by-a-helper-process).
``git merge`` creates its files from its first millisecond; ``am merge`` first
starts Python, imports pygit2 and plans the merge, ~150-250 ms in which the
machine's second core has nothing to do.

So a merge first starts one helper process: this file, run as a script by the
same interpreter with ``-I -S`` (the standard library only, ~10 ms to start).
It asks git which regular files the other side added or changed since the
merge base (``git merge-base HEAD THEIRS``, ``git diff-tree``), reads their
blobs with one ``git cat-file --batch`` and writes each, named by its blob id,
into ``.git/am/prewrite/<pid>-<random>/`` (first the list of them, then each
blob in that order, under a temporary name renamed when whole). When the merge
writes the work tree (``am.git.movefiles.write_files``: after its journal, under
the write lock, where it used to create each file by a temporary name and
rename it into place), it first writes the files the helper will not (the
records the merge decided), then takes the helper's as they appear: each is
checked to hash to its blob and renamed into place instead of created.

The helper is only a guess and nothing depends on it: a blob it did not write,
a guess the plan did not need, a helper that failed, was killed or found no
git, a folder on another file system than the work tree (EXDEV), a system
without ``posix_spawn`` or ``syncfs``: the merge writes those files itself.
It never takes the write lock and never touches the work tree, Git's index or
a ref. A merge removes its helper's folder when it ends; folders left by a
merge that was killed are removed by the next one (their process is gone).
"""

from __future__ import annotations

import errno
import os
import sys

__all__ = ["FOLDER", "SAFE_GIT", "Prewrite", "git_env", "start"]

# Under .git/am/.
FOLDER = "prewrite"
# Blobs above this size are not listed, left to the merge: the guess is for the many small files of records.
_MAX_BLOB = 1 << 20
# A helper is waited for at most this long in all, and this long for any one file (it writes a file in well
# under a millisecond; a helper the machine starves is stopped, and the merge writes the rest itself).
_WAIT = 10.0
_STALL = 1.0
# What creating one file costs here, roughly, and the longest wait for the helper's list (see ``listed``).
_CREATE = 0.0002
_LIST_WAIT = 0.1
# The helper's list of the blobs it means to write, in its folder (ids are hex: no blob has this name).
_LIST = ".list"
# Settings that keep a git subprocess from running code the vault's configuration could point at. Defined
# here, where the helper (run without am on its path) can see them; am.git.program.transport takes them from here.
SAFE_GIT = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
_SAFE = SAFE_GIT
# The environment of am's git subprocesses lives here too (os and sys only), so that this module and
# am.git.program.transport, which takes it from here, do not import each other.
# Git variables that describe the user's setup (credentials, ssh, proxies), not a repository.
_KEEP_GIT_VARS = frozenset({"GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_ASKPASS", "GIT_TERMINAL_PROMPT",
                            "GIT_HTTP_PROXY_AUTHMETHOD", "GIT_SSL_NO_VERIFY", "GIT_SSL_CAINFO", "GIT_CONFIG_GLOBAL",
                            "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                            "GIT_COMMITTER_EMAIL", "GIT_TRACE", "GIT_CURL_VERBOSE", "GIT_PROTOCOL"})


def git_env() -> dict[str, str]:
    """The environment a git subprocess of am runs in: the user's, without what points git at another repository."""
    # GIT_DIR, GIT_INDEX_FILE and friends (set when am runs inside a hook) would point git elsewhere.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP_GIT_VARS}
    if not sys.stdin.isatty():
        env["GIT_TERMINAL_PROMPT"] = "0"  # no one to answer a password prompt: fail at once
    return env


class Prewrite:
    """A helper process writing a merge's files ahead, and the folder it writes them to."""

    def __init__(self, pid: int, folder: str) -> None:
        self.pid = pid
        self.folder = folder
        self.taken = 0
        self._dir_fd: int | None = None
        self._listed: frozenset[str] | None = None
        self._used: set[str] = set()
        self._off = False
        self._done = False
        self._deadline: float | None = None

    def listed(self, files: int = 0) -> frozenset[str]:
        """The blobs the helper means to write (its list comes before any of them).

        ``files``: how many the caller would otherwise create itself. The list
        is waited for at most as long as creating them would take (~0.2 ms
        each, at most 0.1 s); a helper that has not listed them by then is
        behind, and is stopped (empty).
        """
        if self._listed is None:
            import time

            data = None
            if self._open_folder():
                until = time.monotonic() + min(files * _CREATE, _LIST_WAIT)
                pause = 0.0002
                while (data := self._read(_LIST)) is None and not self._ended() and time.monotonic() < until:
                    time.sleep(pause)
                    pause = min(pause * 2, 0.002)
                data = data if data is not None else self._read(_LIST)
            if data is None:
                self._stop()
            names = data.decode("ascii", "replace").split() if data is not None else []
            self._listed = frozenset(n for n in names if _is_id(n))
        return self._listed

    def take(self, blob: str, dir_fd: int, name: str) -> bool:
        """Rename the helper's file of ``blob`` to ``name`` in the folder ``dir_fd``; False: write it yourself.

        Waits for the helper to write it, if it means to. The file is used only
        if its bytes hash to ``blob``. Its last step is the one of writing a file
        by a temporary name: a rename, which replaces what is at ``name`` (the
        caller has checked that path).
        """
        if self._off or blob in self._used or blob not in self.listed():
            return False
        self._used.add(blob)  # one blob, one file: a second path with the same bytes is written by the caller
        if not self._when_there(blob):
            return False
        # This process has am on its path; the helper (run with -I -S) never gets here.
        from am.git.values import hash_fd

        try:
            fd = os.open(blob, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self._dir_fd)
        except OSError:
            return False
        try:
            whole = hash_fd(fd) == blob  # its bytes are checked, as cheaply as a read: it is only a guess
        finally:
            os.close(fd)
        try:
            if not whole:
                os.unlink(blob, dir_fd=self._dir_fd)
                return False
            os.rename(blob, name, src_dir_fd=self._dir_fd, dst_dir_fd=dir_fd)
        except OSError as err:
            if err.errno == errno.EXDEV:
                self._off = True  # the folder is on another file system than the work tree
            return False
        self.taken += 1
        return True

    def _open_folder(self) -> bool:
        if self._dir_fd is None and not self._off:
            try:
                self._dir_fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            except OSError:
                self._off = True
        return self._dir_fd is not None

    def _read(self, name: str) -> bytes | None:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self._dir_fd)
        except OSError:
            return None
        try:
            return os.read(fd, 1 << 24)
        finally:
            os.close(fd)

    def _when_there(self, name: str) -> bool:
        """Wait until the helper's folder has ``name``; False once it has ended without it or stalls (then stopped)."""
        import time

        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + _WAIT
        stall = min(now + _STALL, self._deadline)
        pause = 0.0002
        while True:
            ended = self._ended()  # asked before looking: whatever it wrote before ending is seen below
            try:
                os.stat(name, dir_fd=self._dir_fd, follow_symlinks=False)
                return True
            except FileNotFoundError:
                pass
            except OSError:
                return False
            if ended:
                return False
            if time.monotonic() >= stall:
                self._stop()  # no file for this long: the machine starves it; the merge writes the rest
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.002)

    def _stop(self) -> None:
        """Kill the helper now (it is behind or stuck) and use none of its files from here on."""
        import signal

        self._off = True
        if not self._ended():
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self._done = True

    def _ended(self) -> bool:
        if not self._done:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid = self.pid
            self._done = pid == self.pid
        return self._done

    def close(self) -> None:
        """Stop the helper if it still runs, and remove its folder."""
        import shutil

        self._stop()
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None
        shutil.rmtree(self.folder, ignore_errors=True)


def start(root: str, theirs: str) -> Prewrite | None:
    """Start a helper writing ahead the blobs ``theirs`` changed since its merge base with HEAD; None if it cannot.

    ``root``: the vault's work tree, with a plain ``.git`` folder (else None:
    a linked worktree's or a submodule's is left alone); ``theirs``: a commit
    id or a full ref name.
    """
    gitdir = os.path.join(root, ".git")
    if (not hasattr(os, "posix_spawn") or not sys.executable or theirs.startswith("-")
            or not os.path.isdir(os.path.join(gitdir, "objects"))):
        return None
    parent = os.path.join(gitdir, "am", FOLDER)
    sweep(parent)
    folder = os.path.join(parent, f"{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.makedirs(folder)
    except OSError:
        return None
    env = git_env()
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        pid = os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", os.path.abspath(__file__), root, folder,
                                              theirs], env,
                             file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)])
    except OSError:
        os.rmdir(folder)
        return None
    finally:
        os.close(devnull)
    return Prewrite(pid, folder)


def sweep(parent: str) -> None:
    """Remove the folders of helpers whose merge is gone (a merge killed before it could remove its own)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        owner = name.partition("-")[0]
        if not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
            continue  # that merge still runs (or another user's process has the number: leave it)
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue
        import shutil

        shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


# The helper process ---------------------------------------------------------------------------------------


def _git(root: str, *args: str) -> bytes | None:
    import subprocess

    proc = subprocess.run(["git", *_SAFE, "-C", root, *args], stdin=subprocess.DEVNULL, capture_output=True,
                          check=False)
    return proc.stdout if proc.returncode == 0 else None


def _is_id(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def changed_blobs(root: str, theirs: str) -> list[str]:
    """The blobs of the plain (100644) files ``theirs`` added or changed since its merge base with HEAD, in path order.

    An executable is left to the merge, which writes it with its execute bits.
    """
    found = _git(root, "merge-base", "HEAD", theirs)
    base = found.decode("ascii", "replace").strip() if found else ""
    if not _is_id(base):
        return []
    raw = _git(root, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", base, theirs, "--")
    if raw is None:
        return []
    fields = raw.split(b"\x00")
    blobs: dict[str, None] = {}
    for at in range(0, len(fields) - 1, 2):  # ":<old mode> <new mode> <old id> <new id> <status>", then the path
        meta = fields[at].decode("ascii", "replace").split()
        if len(meta) == 5 and meta[4] in ("A", "M") and meta[1] == "100644" and _is_id(meta[3]):
            blobs[meta[3]] = None
    return list(blobs)


def _write(dir_fd: int, blob: str, data: bytes) -> None:
    # am.git.common.write_all, written again: this process runs without am on its path.
    tmp = f"{blob}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    os.rename(tmp, blob, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # whole, or not there: the merge takes it as it appears


def _small(root: str, blobs: list[str]) -> list[str]:
    """The blobs of at most ``_MAX_BLOB`` bytes (``git cat-file --batch-check``), in order: the ones worth writing."""
    import subprocess

    proc = subprocess.run(["git", *_SAFE, "-C", root, "cat-file", "--batch-check"], capture_output=True, check=False,
                          input="".join(f"{b}\n" for b in blobs).encode("ascii"))
    if proc.returncode != 0:
        return []
    sizes = {}
    for line in proc.stdout.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit():
            sizes[parts[0]] = int(parts[2])
    return [b for b in blobs if sizes.get(b, _MAX_BLOB + 1) <= _MAX_BLOB]


def helper(root: str, folder: str, theirs: str) -> int:
    """Write the list of ``changed_blobs`` worth writing into ``folder``, then each, in order; return how many."""
    blobs = changed_blobs(root, theirs)
    blobs = _small(root, blobs) if blobs else blobs
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        _write(dir_fd, _LIST, "".join(f"{b}\n" for b in blobs).encode("ascii"))
        if blobs:
            return _write_blobs(root, dir_fd, blobs)
        return 0
    finally:
        os.close(dir_fd)


def _write_blobs(root: str, dir_fd: int, blobs: list[str]) -> int:
    import subprocess
    import threading

    proc = subprocess.Popen(["git", *_SAFE, "-C", root, "cat-file", "--batch"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    stdin, out = proc.stdin, proc.stdout
    assert stdin is not None and out is not None

    def ask() -> None:  # in a thread: git answers as it reads, and both pipes could fill
        try:
            stdin.write("".join(f"{b}\n" for b in blobs).encode("ascii"))
            stdin.close()
        except OSError:
            pass

    threading.Thread(target=ask, daemon=True).start()
    written = 0
    try:
        for blob in blobs:
            header = out.readline().split()
            if len(header) == 2 and header[1] == b"missing":
                continue
            if len(header) != 3 or header[0] != blob.encode("ascii") or header[1] != b"blob":
                break  # not what was asked: stop guessing
            size = int(header[2])
            if size > _MAX_BLOB:
                break  # listed as small: something else answers; stop guessing
            data = out.read(size + 1)
            if len(data) != size + 1:
                break
            _write(dir_fd, blob, data[:size])
            written += 1
    finally:
        proc.kill()
        proc.wait()
    return written


if __name__ == "__main__":
    if len(sys.argv) == 4:
        try:
            helper(sys.argv[1], sys.argv[2], sys.argv[3])
        except (OSError, ValueError):
            sys.exit(1)
