"""The post-commit hook's short way: print what pre-commit already found, when the commit is the one it checked.

A ``git commit`` runs pre-commit, then post-commit, each a new process. Both
used to lint the same files: pre-commit against the staged tree, post-commit
again against the refreshed cache (importing pygit2, the facade and the cache
for it). Now pre-commit, once it accepts, remembers in ``.git/am/checked.json``
where HEAD was, the record files it checked (path and staged blob) and the
warnings it found. Post-commit asks Git what the new commit changed against
that HEAD; when that is exactly what was checked and the commit is not a
merge, it prints those warnings (and puts them in ``am-health.md``) without
opening the vault. Anything else (a ``--no-verify`` commit, a chained hook that
staged more, a merge to complete, no note) takes the long way in
``am.upkeep.hooks``. The cache is not refreshed here: like after any write, it
catches up from the tree diff on its next read.

Floor: upkeep. May import ``am.git.program.cligit`` (the git CLI, no pygit2), ``am.upkeep.health``.
Must not import the facade, the cache, pygit2 or click.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["NOTE_FILE", "forget_checked", "post_commit_short", "remember_checked"]

NOTE_FILE = "checked.json"
_VERSION = 1


def _note(gitdir: Path) -> Path:
    return gitdir / "am" / NOTE_FILE


def forget_checked(gitdir: Path) -> None:
    """Drop what an earlier pre-commit remembered (a new check begins, or the note was used)."""
    try:
        os.unlink(_note(gitdir))
    except FileNotFoundError:
        pass
    except OSError:
        pass  # unreadable leftovers are ignored by post_commit_short's checks anyway


def remember_checked(gitdir: Path, head: str | None, changes: Sequence[tuple[str, str | None]],
                     lines: Sequence[str]) -> None:
    """Keep what pre-commit accepted: HEAD then, (path, staged blob or None) of each record file, its warnings."""
    note = _note(gitdir)
    try:
        note.parent.mkdir(parents=True, exist_ok=True)
        tmp = note.with_name(f".{NOTE_FILE}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": _VERSION, "head": head, "changes": sorted(changes),
                                   "lines": list(lines)}), encoding="utf-8")
        os.replace(tmp, note)
    except OSError:
        pass  # post-commit then lints the long way


def _recall(gitdir: Path) -> dict[str, Any] | None:
    note = _note(gitdir)
    try:
        found = json.loads(note.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        forget_checked(gitdir)
    if not isinstance(found, dict) or found.get("version") != _VERSION:
        return None
    return found


def post_commit_short(store: Any, *, tops: tuple[str, ...], is_record_path: Any, out: TextIO) -> bool:
    """Print the remembered warnings when HEAD's commit is exactly what pre-commit checked; return whether it was.

    ``store`` is an ``am.git.program.cligit.CliStore``.
    """
    found = _recall(store.gitdir)
    head = store.head()
    if found is None or head is None:
        return False
    if len(store.parents(head)) > 1:
        return False  # a merge: the long way completes it (am/upkeep/merges.py)
    changes = sorted((p, b) for p, b in store.changes_between(found.get("head"), head, tops) if is_record_path(p))
    if changes != [(p, b) for p, b in found.get("changes", [])]:
        return False
    lines = [str(line) for line in found.get("lines", [])]
    out.writelines(f"am: {line}\n" for line in lines)
    if lines:
        from am.upkeep.health import note_warnings

        note_warnings(store.root, store.gitdir, f"post-commit {head[:10]}", lines)
    return True
