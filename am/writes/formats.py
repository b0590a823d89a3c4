"""The vault's format: a write (or a merge of records) is refused to a vault whose format is newer than this am's.

``FORMAT_VERSION`` is what this am writes into a new vault's ``.am/vault.yml``; ``check_format`` refuses
settings of a newer format, ``check_formats_at`` either side of a merge.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

from typing import Any

from am.errors import UsageError
from am.records.ids import VAULT_FILE

__all__ = ["FORMAT_VERSION", "check_format", "check_formats_at", "settings_at"]

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
    for commit in commits:
        check_format(settings_at(store, commit))


def settings_at(store: Any, commit: str) -> dict[str, Any]:
    """Return the settings ``.am/vault.yml`` holds at a commit, refusing one am cannot read with the commit that made it.

    `am sync` asks this of the other side's tip before a fast-forward too: a file no command
    could read afterwards, taken in, stopped every command of this clone, `am sync` included,
    so the fix the other side pushed could not come in by am (issue 36.14).
    """
    from am.errors import InvalidRecordError
    from am.records.frontmatter import load_settings

    data = store.read_blob(VAULT_FILE, commit=commit)
    if data is None:
        return {}
    where = f"{VAULT_FILE} at {commit[:10]}"
    try:
        return load_settings(data.decode("utf-8"), path=where)
    except UnicodeDecodeError:
        raise InvalidRecordError("not UTF-8", path=where, hint=_made_by(store, commit)) from None
    except InvalidRecordError as err:
        raise InvalidRecordError(err.detail, path=where, field=err.field, line=err.line,
                                 hint=_made_by(store, commit)) from None


def _made_by(store: Any, commit: str) -> str:
    """Name the commit that last changed ``.am/vault.yml`` in ``commit``'s history, and the way out."""
    made = None
    last_change = getattr(store, "last_change", None)  # the driver's CliStore has no history walk
    if last_change is not None:
        try:
            made = last_change(str(VAULT_FILE), start=commit)
        except Exception:  # noqa: BLE001 - only a hint: the error it belongs to is what the user must see
            made = None
    who = f"commit {made[:10]} changed it last" if made else f"see: git log -1 {commit[:10]} -- {VAULT_FILE}"
    return (f"{who}; nothing was changed here. Fix the file where it was made (edit, commit, push), or undo "
            f"that commit there with git revert, then run am sync again")
