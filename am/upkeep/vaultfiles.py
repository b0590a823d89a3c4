"""The vault's files other than records, as `am check` and the pre-commit hook see them.

Attachments (an image, a PDF, a canvas: what ``![[Pasted image.png]]`` names)
and Markdown notes outside the record folders (link targets by file name).

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from am.records.ids import RECORD_DIRS

__all__ = ["attachments", "vault_notes"]


def attachments(root: Any) -> Callable[[str], bool]:
    """Return whether a link names a file of the work tree other than Markdown (an image, a PDF, a canvas).

    Obsidian resolves ``![[Pasted image 20261201.png]]`` by file name or by path
    from the vault's top; so does this. The work tree is walked (dot folders
    left out) the first time a link needs it, not before.
    """
    known: set[str] = set()
    walked: list[bool] = []

    def named(target: str) -> bool:
        name = target.rsplit("/", 1)[-1]
        if "." not in name.strip(".") or name.lower().endswith(".md"):
            return False
        if not walked:
            walked.append(True)
            for dirpath, dirnames, filenames in os.walk(root):
                rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                for file in filenames:
                    if not file.lower().endswith(".md") and not file.startswith("."):
                        known.update((file.casefold(), (file if rel == "." else f"{rel}/{file}").casefold()))
        return target.lstrip("/").casefold() in known

    return named


def vault_notes(root: Any) -> Iterable[str]:
    """Yield the Markdown files outside the record folders (notes: link targets by file name)."""
    tops = set(RECORD_DIRS.values())
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (rel == "." and d in tops))
        for name in sorted(filenames):
            if name.endswith(".md") and not name.startswith("."):
                yield name if rel == "." else f"{rel}/{name}".replace(os.sep, "/")
