"""A sparse checkout that leaves a record folder out of the work tree.

am reads records from the work tree, so a folder Git did not check out looks
empty: no facts listed, `am check` ok, every hidden fact "missing" to doctor.
Git marks what a sparse checkout leaves out with the skip-worktree bit of its
index entries. Only a work tree with a sparse-checkout file can have them (one
stat otherwise: the normal path pays nothing more); there ``git ls-files -t``
says which entries carry the bit (``S``). Reads and writes refuse
(``refuse_hidden``); `am check` and `am doctor` report it. One that leaves
``.am/`` out is named where am would otherwise say "not a vault"
(``refuse_hidden_vault``). Nothing here imports pygit2.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from am.errors import GitError, NotAVaultError

__all__ = ["SPARSE_FIX", "hidden_message", "hidden_record_folders", "refuse_hidden", "refuse_hidden_vault"]

_TOPS = ("facts", "relations", "topics")  # am/records/ids.py RECORD_DIRS
SPARSE_FIX = "git sparse-checkout add {folders} (or turn it off: git sparse-checkout disable)"


def _own_gitdir(gitdir: Path) -> Path:
    if os.path.isfile(gitdir):  # a linked worktree's .git file names its own Git folder
        with open(gitdir, encoding="utf-8", errors="replace") as handle:
            named = handle.read().strip().removeprefix("gitdir:").strip()
        return Path(os.path.join(os.path.dirname(gitdir), named))
    return gitdir


def hidden_record_folders(root: Path, gitdir: Path) -> list[str]:
    """Return the record folders (facts, relations, topics) a sparse checkout leaves out of the work tree.

    A folder counts when Git's index marks one of its files skip-worktree and
    the file is not there (a file marked by hand but still present is read as usual).
    """
    if not os.path.isfile(_own_gitdir(gitdir) / "info" / "sparse-checkout"):
        return []  # never sparse here (git sparse-checkout disable keeps the file, and clears the bits)
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-t", "-z", "--", *_TOPS],
                                capture_output=True, check=False, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return []  # no git to ask: the writes' own checks say what is wrong
    hidden: list[str] = []
    for entry in listed.split(b"\0"):
        if not entry.startswith(b"S "):
            continue
        path = os.fsdecode(entry[2:])
        top = path.split("/", 1)[0]
        if top in _TOPS and top not in hidden and not os.path.lexists(root / path):
            hidden.append(top)
    return sorted(hidden)


def hidden_message(hidden: list[str]) -> tuple[str, str]:
    """Return the message and the fix for record folders a sparse checkout leaves out."""
    folders = " ".join(hidden)
    listed = ", ".join(f"{h}/" for h in hidden)
    message = f"the sparse checkout of this work tree leaves {listed} out, so am would see the vault without those records"
    return message, SPARSE_FIX.format(folders=folders)


def refuse_hidden_vault(start: Path) -> None:
    """Raise NotAVaultError when a sparse checkout leaves a vault's .am/ out of the work tree at or above ``start``.

    Asked only once no vault was found (an error path): Git's index has ``.am/vault.yml`` marked
    skip-worktree and the file is not on disk, so the folder looked like no vault at all ("create one with:
    am init", which then refused: the file is Git's, only not checked out).
    """
    for folder in (start, *start.parents):
        dotgit = folder / ".git"
        if not os.path.lexists(dotgit):
            continue
        if (folder / ".am" / "vault.yml").exists() or not os.path.isfile(_own_gitdir(dotgit) / "info" / "sparse-checkout"):
            return
        try:
            listed = subprocess.run(["git", "-C", str(folder), "ls-files", "-t", "-z", "--", ".am/vault.yml"],
                                    capture_output=True, check=False, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return
        if listed.startswith(b"S "):
            raise NotAVaultError(f"the sparse checkout of the work tree at {folder} leaves .am/ out, so am cannot see "
                                 "the vault there", hint=f"include it: {SPARSE_FIX.format(folders='.am')}; nothing was changed")
        return


def refuse_hidden(root: Path, gitdir: Path) -> None:
    """Raise GitError when a sparse checkout leaves a record folder out of the work tree (one stat when none)."""
    hidden = hidden_record_folders(root, gitdir)
    if hidden:
        message, fix = hidden_message(hidden)
        raise GitError(message, hint=f"include {'it' if len(hidden) == 1 else 'them'}: {fix}; nothing was changed")
