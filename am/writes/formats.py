"""The vault's format: a write (or a merge of records) is refused to a vault whose format is newer than this am's.

``FORMAT_VERSION`` is what this am writes into a new vault's ``.am/vault.yml``; ``check_format`` refuses
settings of a newer format, ``check_formats_at`` either side of a merge.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

from typing import Any

from am.errors import UsageError
from am.records.ids import VAULT_FILE

__all__ = ["FORMAT_VERSION", "check_format", "check_formats_at"]

FORMAT_VERSION = 1


def check_format(settings: dict[str, Any]) -> None:
    """Refuse to write to a vault whose ``.am/vault.yml`` says a format newer than this am's (or not a number)."""
    fmt = settings.get("format", FORMAT_VERSION)
    if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt > FORMAT_VERSION:
        raise UsageError(f"{VAULT_FILE}: format {fmt!r} is not one this am writes (it writes {FORMAT_VERSION})",
                         hint="upgrade am to write to this vault; nothing was changed")



def check_formats_at(store: Any, *commits: str) -> None:
    """Refuse a merge when either side's vault is of a format newer than this am writes (a fast-forward
    writes nothing of am's): merging records of a format it does not know is a write like any other.

    ``store``: anything with ``read_blob(path, commit=...)`` (a GitStore, or the git CLI's CliStore in a driver).
    """
    from am.records.frontmatter import load_settings

    for commit in commits:
        data = store.read_blob(VAULT_FILE, commit=commit)
        if data is not None:
            check_format(load_settings(data.decode("utf-8", "replace"), path=f"{VAULT_FILE} at {commit[:10]}"))
