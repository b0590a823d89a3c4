"""The vault's files that are not records, in am's export: session logs and the vault's settings.

A move between vaults must lose nothing (DESIGN §12): besides its records, a
vault holds the session logs ``am ingest`` keeps (``sessions/**/*.jsonl``, the
files session topics name and ``am search --session`` reads), its settings
(``.am/vault.yml``) and the audit lines of ``am purge`` (``.am/purges.jsonl``).
``am export`` (jsonl, json) writes each as a line of its own kind after the
records, ``{"kind": "session-log" | "vault-settings" | "purge-log", "path":
..., "text": ...}`` (``"base64"`` instead of ``"text"`` for bytes that are not
UTF-8), read from the exported commit; ``am import jsonl`` restores them in one
commit of their own after the records, and a file already there with the same
bytes is not written again.

What a restore never overwrites: a session log or purge log the vault holds
with other bytes, and settings of the vault's own (anything beyond the
``name`` and ``format`` of a new vault) are left aside, with the reason. A new
vault takes the export's settings with its own ``name`` line (the name is the
vault's, in the registry).

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from am.io.source import Aside, FileItem

if TYPE_CHECKING:
    from am.vault import Vault

__all__ = ["FILE_KINDS", "export_files", "file_item", "file_line", "restore_files"]

SETTINGS = PurePosixPath(".am/vault.yml")
PURGES = PurePosixPath(".am/purges.jsonl")
SESSIONS = "sessions"
FILE_KINDS = ("vault-settings", "purge-log", "session-log")
_NAME_LINE = re.compile(r"^name:.*$", re.MULTILINE)
_NEW_VAULT_KEYS = frozenset({"name", "format"})


def _kind_of(path: PurePosixPath) -> str | None:
    if path == SETTINGS:
        return "vault-settings"
    if path == PURGES:
        return "purge-log"
    if path.parts[0] == SESSIONS and path.suffix == ".jsonl" and len(path.parts) > 1:
        return "session-log"
    return None


def export_files(vault: Vault, commit: str | None = None) -> Iterator[FileItem]:
    """Yield the vault's settings, purge log and session logs as committed (HEAD, or ``commit``), in path order."""
    store = vault.store
    commit = commit or store.head()
    if commit is None:
        return
    found = [(PurePosixPath(p), blob) for p, blob in store.tree_files([".am", SESSIONS], commit=commit)]
    for path, blob in sorted(found, key=lambda f: (FILE_KINDS.index(k) if (k := _kind_of(f[0])) else 9, str(f[0]))):
        kind = _kind_of(path)
        if kind is not None:
            yield FileItem(kind, path, store.read_object(blob), str(path))


def file_line(item: FileItem) -> dict[str, Any]:
    """Return one file as am's export writes it."""
    line: dict[str, Any] = {"kind": item.kind, "path": str(item.path)}
    try:
        line["text"] = item.data.decode("utf-8")
    except UnicodeDecodeError:
        line["base64"] = base64.b64encode(item.data).decode("ascii")
    return line


def file_item(value: dict[str, Any], origin: str) -> FileItem | Aside:
    """Read one file line of am's export, or say why it cannot be restored."""
    kind, where = value.get("kind"), value.get("path")
    if not isinstance(where, str) or not where:
        return Aside(origin, f"a {kind} line without a path")
    path = PurePosixPath(where)
    if path.is_absolute() or ".." in path.parts or _kind_of(path) != kind:
        return Aside(origin, f"{where} is not where a {kind} is kept (.am/vault.yml, .am/purges.jsonl, "
                             "sessions/**/*.jsonl)")
    text, packed = value.get("text"), value.get("base64")
    if isinstance(text, str):
        try:
            return FileItem(str(kind), path, text.encode("utf-8"), origin)
        except UnicodeEncodeError:
            return Aside(origin, f"{where}: its text holds a lone surrogate, which is not text")
    if isinstance(packed, str):
        try:
            return FileItem(str(kind), path, base64.b64decode(packed, validate=True), origin)
        except (binascii.Error, ValueError):
            return Aside(origin, f"{where}: base64 that does not decode")
    return Aside(origin, f"{where}: a {kind} line needs its text (or base64)")


def _settings_keys(data: bytes) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^([A-Za-z_][\w-]*)\s*:", data.decode("utf-8", "replace"), re.MULTILINE)}


def _settings_for(ours: bytes | None, theirs: bytes) -> bytes | None:
    """Return the settings to write (None: keep the vault's), the vault's own name kept."""
    if ours is None:
        return theirs
    if not _settings_keys(ours) <= _NEW_VAULT_KEYS:
        return None
    name = _NAME_LINE.search(ours.decode("utf-8", "replace"))
    text = theirs.decode("utf-8", "replace")
    if name is not None and _NAME_LINE.search(text):
        text = _NAME_LINE.sub(lambda _: name.group(0), text, count=1)
    return text.encode("utf-8")


def _credential(item: FileItem) -> str | None:
    """Say what looks like a credential in a file (the first), else None."""
    from am.records.secrets import scan_text

    found = scan_text(item.data.decode("utf-8", "replace"), field=str(item.path))
    return found[0].describe() if found else None


def restore_files(vault: Vault, files: list[FileItem], *, source: str, dry_run: bool,
                  secrets: str = "refuse") -> tuple[int, list[Aside], str | None]:
    """Write the export's files the vault lacks, in one commit: (how many, left aside, commit or None).

    ``secrets`` (the import's policy): unless ``allow``, a file that looks like it holds a credential is
    left aside (an am export carries the masked copies ``am ingest`` keeps; a log is not re-masked here).
    """
    aside: list[Aside] = []
    writes: list[tuple[PurePosixPath, bytes, str | None]] = []
    store = vault.store
    for item in files:
        base = store.blob_id(item.path)
        ours = store.read_object(base) if base is not None else None
        data: bytes | None = item.data
        if item.kind == "vault-settings":
            data = _settings_for(ours, item.data)
            if data is None:
                if ours != item.data:
                    aside.append(Aside(item.origin, f"{item.path}: the vault has settings of its own (kept; compare "
                                                    "them with the export's and edit by hand)"))
                continue
        elif ours is not None and ours != item.data:
            aside.append(Aside(item.origin, f"{item.path}: the vault holds another {item.kind} there (kept)"))
            continue
        if data is None or ours == data:
            continue  # already there, byte for byte
        if secrets != "allow" and (why := _credential(item)) is not None:
            aside.append(Aside(item.origin, f"{why} (an am export carries masked logs; pass --allow-secret to "
                                            "restore it as it is, or mask it in the source)"))
            continue
        writes.append((item.path, data, base))
    if dry_run or not writes:
        return len(writes), aside, None
    kinds = sorted({_kind_of(path) or "" for path, _, _ in writes})
    commit = vault.write_files(writes, subject=f"import: {len(writes)} files from {source} ({', '.join(kinds)})")
    return len(writes), aside, commit
