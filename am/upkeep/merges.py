"""The record merge inside Git's own merges: the merge driver's registration, and what a driver cannot do.

``am hooks install`` registers ``am merge-driver`` for the record files in
``.gitattributes`` (committed, so every clone carries it) and in the clone's
``merge.am.driver`` setting, so ``git merge``, ``git pull`` and obsidian-git
merge records with the same rules as ``am sync`` (``am.records.merge``).

A merge driver can only write the one file Git hands it. When a fact's text was
changed on both sides, the rules keep the other side's version as a new
contested fact with a ``conflicts-with`` relation: two new files. The
post-merge and post-commit hooks call ``complete_merge``, which recomputes the
merge of the commit's two parents and commits the files the driver could not
write (one ``Am-Op: sync.merge`` commit), so the vault ends as ``am sync``
would leave it; after ``git pull --rebase`` the post-rewrite hook calls
``complete_rebase``, which does the same for each commit the rebase picked.
``git merge --squash`` (and ``git pull --squash``) commits nothing and makes no
merge commit: its post-merge hook (flag ``1``) calls ``complete_squash``, which
stages those files, so the squash commit the user makes holds both versions.

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

from am.errors import AmError
from am.git import Change
from am.records.merge import is_record_path, merge_record, rival_files

__all__ = ["ATTRIBUTES", "DRIVER", "check_merge_formats", "complete_merge", "complete_rebase",
           "complete_squash", "driver_gone",
           "driver_missing", "register_merge_driver", "unregister_merge_driver"]

DRIVER = "am"
_ARGS = " merge-driver %O %A %B %P"  # what ends am's merge.am.driver line (and tells it from another tool's)
ATTRIBUTES = (
    "# am: record-aware merge of memory files (registered by am hooks install)",
    "topics/**/*.md merge=am",
    "facts/**/*.md merge=am",
    "relations/**/*.md merge=am",
)
_AM_MERGES = ("Am-Op: sync.merge", "Am-Op: merge.branch")


def register_merge_driver(vault: Any, *, command: list[str]) -> list[str]:
    """Set ``merge.am.driver`` in the clone's config and commit the attribute lines; return what changed."""
    done = []
    store = vault.store.opened()
    if store.config_value(f"merge.{DRIVER}.driver") != _driver_line(command):
        set_driver(Path(store.root), command)
        store.__dict__.pop("_config", None)
        done.append("merge.am.driver")
    path = PurePosixPath(".gitattributes")
    current = (Path(store.root) / path).read_bytes() if (Path(store.root) / path).is_file() else b""
    lines = current.decode("utf-8", "replace").splitlines()
    missing = [line for line in ATTRIBUTES if line not in lines]
    if missing:
        vault.writer.check_writable(())
        sep = "" if not current or current.endswith(b"\n") else "\n"
        data = current + (sep + "\n".join(missing) + "\n").encode("utf-8")
        message = vault.authorship.message("hooks", "install", [], subject="hooks: register the record merge driver")
        with store.write_lock(op="hooks.install"):
            store.commit([Change(path, data, base=store.blob_id(path))], message=message,
                         author=vault.authorship.author(), committer=vault.authorship.committer())
        done.append(".gitattributes")
    return done


def install_vault_hooks(vault: Any) -> list[Any]:
    """Install am's vault hooks and register the record merge driver; return what was done.

    What ``am hooks install`` does in a vault, and what ``am init`` and ``am demo``
    do by default, so hand commits (the git CLI, obsidian-git) are checked and
    ``git pull`` merges record by record from the first day.
    """
    from am.upkeep.hookfiles import VAULT_HOOKS, HookAction, am_command, install_hooks

    vault.writer.check_writable(())  # its hooks and driver would judge records of a format it does not know
    actions = install_hooks(vault.root, names=VAULT_HOOKS, args_for=lambda name: ["hook", name])
    for what in register_merge_driver(vault, command=am_command()):
        actions.append(HookAction("merge-driver", what, "registered"))
    return actions


def _driver_line(command: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in command) + _ARGS


def _configured_driver(root: Path) -> str:
    """The clone's ``merge.am.driver`` setting, or "" when there is none."""
    found = subprocess.run(["git", "-C", str(root), "config", "--get", f"merge.{DRIVER}.driver"], check=False,
                           capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else ""


def set_driver(root: Path, command: list[str]) -> None:
    """Set the clone's ``merge.am`` settings to run ``command``'s merge-driver (config only, no commit)."""
    for key, value in ((f"merge.{DRIVER}.name", "am record-aware merge"), (f"merge.{DRIVER}.driver",
                                                                           _driver_line(command))):
        subprocess.run(["git", "-C", str(root), "config", key, value], check=True, capture_output=True)


def driver_missing(root: Path) -> bool:
    """Whether the committed ``.gitattributes`` names ``merge=am`` but this clone has no ``merge.am.driver``.

    Config is per clone: a plain ``git clone`` of a vault carries the
    attributes, not the setting, so Git merges records as text there.
    """
    try:
        attributes = (root / ".gitattributes").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if not any(line.split()[1:] and f"merge={DRIVER}" in line.split()[1:] for line in attributes.splitlines()):
        return False
    return not _configured_driver(root)


def driver_gone(root: Path) -> str | None:
    """Return the program am's ``merge.am.driver`` runs when it is gone (an am removed or reinstalled elsewhere).

    Git cannot run such a driver and takes every record changed on both sides
    as a conflict, leaving our side's text in the file with no markers. None
    when the driver runs, names a program found on PATH, or is not am's.
    """
    import os
    import shutil

    line = _configured_driver(root)
    if not line.endswith(_ARGS):
        return None
    try:
        program = shlex.split(line)[0]
    except (ValueError, IndexError):
        return line
    if os.sep in program:
        return None if os.access(program, os.X_OK) else program
    return None if shutil.which(program) else program


def unregister_merge_driver(root: Path) -> list[str]:
    """Remove am's ``merge.am`` settings from the clone's config; return what changed.

    The ``.gitattributes`` lines stay: they are committed and shared by every
    clone, and where no ``merge.am.driver`` is set, Git merges those files as
    text. Without this, a clone whose am was removed would have every merge of
    a record run a program that is not there. A ``merge.am.driver`` that is
    not am's (no ``merge-driver %O %A %B %P``) is left alone.
    """
    if not _configured_driver(root).endswith(_ARGS):
        return []
    subprocess.run(["git", "-C", str(root), "config", "--remove-section", f"merge.{DRIVER}"], check=True,
                   capture_output=True)
    return [f"merge.{DRIVER}.driver"]


def check_merge_formats(cwd: Path) -> None:
    """Refuse (``UsageError``) when the vault on either side of Git's merge in progress is of a newer format.

    Run by the merge driver, which Git hands only one file's three versions:
    ours is HEAD (in ``git pull --rebase``, the upstream being rebased onto),
    theirs each commit ``git merge``/``git pull`` names in its environment
    (``GITHEAD_<commit>``). A cherry-pick names none: only HEAD is checked.
    """
    import os

    from am.errors import NotAVaultError
    from am.git.program.cligit import CliStore
    from am.writes.formats import check_formats_at

    theirs = [key.removeprefix("GITHEAD_") for key in os.environ if key.startswith("GITHEAD_")]
    try:
        store = CliStore.open(cwd)
    except NotAVaultError:
        return  # not run by Git in a work tree (a test, git merge-file): no sides to read
    with store:
        check_formats_at(store, "HEAD", *theirs)


def complete_merge(vault: Any, commit: str | None = None) -> str | None:
    """Commit what Git's merge (through the driver) could not write: contested copies and their relations.

    Looks at ``commit`` (HEAD): when it is a merge of two parents not made by
    am, the record merge of the parents is computed again, and for each fact
    the commit holds exactly as the driver wrote it, the new files of its split
    that the commit lacks are committed. A file someone merged by hand is left
    as they made it. Returns the new commit, or None. Refused (``UsageError``)
    when either parent's vault is of a format newer than this am writes.
    """
    store = vault.store.opened()
    commit = commit or store.head()
    if commit is None:
        return None
    info = store.commit_info(commit)
    if len(info.parents) != 2 or any(op in info.message for op in _AM_MERGES):
        return None
    from am.git.remote import merge_base

    ours, theirs = info.parents
    from am.writes.formats import check_formats_at

    check_formats_at(store, ours, theirs, commit)  # a newer am's vault: this am writes nothing into it
    extra: dict[str, bytes] = {}
    _left_to_write(store, _in_commit(store, commit), merge_base(store, ours, theirs), ours, theirs, extra)
    return _commit_extra(vault, store, commit, extra)


def complete_rebase(vault: Any, rewritten: list[tuple[str, str]]) -> str | None:
    """Commit what Git's rebase (``git pull --rebase``) could not write through the driver, as ``complete_merge``.

    ``rewritten``: (old, new) commits from the post-rewrite hook. Git picked each
    old commit onto new's parent, the driver merging with old's parent as the base.
    """
    store = vault.store.opened()
    head = store.head()
    if head is None:
        return None
    from am.writes.formats import check_formats_at

    check_formats_at(store, head, *(old for old, _ in rewritten))
    extra: dict[str, bytes] = {}
    for old, new in rewritten:
        was, now = store.commit_info(old), store.commit_info(new)
        if len(was.parents) == 1 and len(now.parents) == 1:
            _left_to_write(store, _in_commit(store, new), was.parents[0], now.parents[0], old, extra)
    return _commit_extra(vault, store, head, {p: d for p, d in extra.items() if store.read_blob(p, commit=head) != d})


def complete_squash(vault: Any, theirs: list[str]) -> list[str]:
    """Stage what Git's ``merge --squash`` (through the driver) could not write; return the paths staged.

    Run by the post-merge hook when Git says the merge was a squash: no commit
    was made, the index holds the merge, and ``git commit`` makes a commit of
    one parent that ``complete_merge`` cannot tell from any other. ``theirs``:
    the commits squashed in (``GITHEAD_<commit>`` in the hook's environment);
    when it is empty, the tips of the commits Git lists in ``.git/SQUASH_MSG``.
    Like ``complete_merge``, but the files go into the index and the work
    tree, so the squash commit holds both versions. A file the index does not
    hold as the driver wrote it, or a work-tree file that differs from the
    index, is left alone. Refused (``UsageError``) for a vault of a newer format.
    """
    store = vault.store.opened()
    ours = store.head()
    theirs = theirs or _squashed_tips(store)
    if ours is None or len(theirs) != 1:  # an octopus squash merges without the driver
        return []
    from am.git.remote import merge_base
    from am.writes.formats import check_formats_at

    check_formats_at(store, ours, theirs[0])
    staged = _IndexFiles(Path(store.root))
    extra: dict[str, bytes] = {}
    _left_to_write(store, staged.read, merge_base(store, ours, theirs[0]), ours, theirs[0], extra)
    return staged.stage(extra)


def _squashed_tips(store: Any) -> list[str]:
    """The tips of the commits ``git merge --squash`` lists in ``SQUASH_MSG``: none of the others descends from them."""
    import re

    try:
        text = (Path(store.gitdir) / "SQUASH_MSG").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    listed = list(dict.fromkeys(re.findall(r"(?m)^commit ([0-9a-f]{40}|[0-9a-f]{64})$", text)))
    try:
        parents = {p for c in listed for p in store.commit_info(c).parents}
    except (KeyError, ValueError, AmError):  # a commit Git named that is not here: nothing to go by
        return []
    return [c for c in listed if c not in parents]


class _IndexFiles:
    """Stage-0 files of the index Git left after a merge, read and added through the git CLI."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _git(self, *args: str, data: bytes | None = None) -> bytes:
        return subprocess.run(["git", "-C", str(self.root), "--literal-pathspecs", *args], input=data, check=True,
                              capture_output=True).stdout

    def read(self, path: str) -> bytes | None:
        listed = self._git("ls-files", "-s", "-z", "--", path).split(b"\0")
        found = [row.split(b"\t", 1) for row in listed if row.endswith(b"\t" + path.encode("utf-8"))]
        entries = [head.split() for head, _ in found]
        if len(entries) != 1 or entries[0][2] != b"0":  # absent, or in conflict
            return None
        return self._git("cat-file", "blob", entries[0][1].decode("ascii"))

    def stage(self, files: dict[str, bytes]) -> list[str]:
        done = []
        for path, data in sorted(files.items()):
            target = self.root / path
            if target.exists() and target.read_bytes() not in (data, self.read(path)):
                continue  # changed in the work tree since the merge: the user's to keep
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            done.append(path)
        if done:
            self._git("add", "--", *done)
        return done


def _in_commit(store: Any, commit: str) -> Any:
    return lambda path: store.read_blob(path, commit=commit)


def _left_to_write(store: Any, holds: Any, base: str | None, ours: str, theirs: str, extra: dict[str, bytes]) -> None:
    """Add to ``extra`` the files of the splits the driver made but could not write.

    ``holds(path)``: the bytes the merge's result holds at ``path`` (a commit, or the index of a squash), or None.
    """
    mine = dict(store.tree_changes(base, ours))
    other = dict(store.tree_changes(base, theirs))
    for path in sorted(p for p in other if p in mine and mine[p] != other[p] and is_record_path(p)):
        texts = [store.read_blob(path, commit=c) if c is not None else None for c in (base, ours, theirs)]
        if texts[1] is None or texts[2] is None:
            continue
        try:
            result = merge_record(path, None if texts[0] is None else texts[0].decode("utf-8"),
                                  texts[1].decode("utf-8"), texts[2].decode("utf-8"))
        except (AmError, UnicodeDecodeError):
            continue
        # Only where the commit holds what the driver wrote: a file someone merged by hand is theirs to keep.
        if not (result.extra or result.rivals) or holds(path) != result.text.encode("utf-8"):
            continue
        for extra_path, text in result.extra:
            if holds(extra_path) is None:
                extra[extra_path] = text.encode("utf-8")
        for loser, winner in result.rivals:
            for rival_path, data in (rival_files(loser, winner, PurePosixPath(path).stem, mine, other, {},
                                            store.read_object) or {}).items():
                if holds(rival_path) != data:
                    extra[rival_path] = data


def _facts(count: int) -> str:
    return f"{count} fact{'s' * (count != 1)}"


def _commit_extra(vault: Any, store: Any, commit: str, extra: dict[str, bytes]) -> str | None:
    if not extra:
        return None
    ids = [PurePosixPath(p).stem for p in sorted(extra)]
    message = vault.authorship.message("sync", "merge", ids,
                             subject=f"sync: keep both versions of {_facts(len(ids) // 2 or 1)} changed on both sides")
    changes = [Change(PurePosixPath(p), data, base=store.blob_id(p, commit=commit)) for p, data in sorted(extra.items())]
    # Run by post-merge, post-commit and post-rewrite: Git may clear its merge or rebase state only after them.
    with store.write_lock(op="sync.merge", in_git_hook=True):
        new = str(store.commit(changes, message=message, author=vault.authorship.author(), committer=vault.authorship.committer()))
    return new
