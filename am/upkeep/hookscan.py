"""What the vault hooks ask of a file Git hands them: is it a record's, and what credentials it holds.

Shared by the pre-commit check (``am.upkeep.precommit``), the hook runner (``am.upkeep.hooks``) and
``am recover`` (``am.upkeep.recover``); imports no other module of ``am.upkeep``.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from am.records.ids import RECORD_DIRS

__all__ = ["RECORD_TOPS", "is_record_file", "secret_findings"]

RECORD_TOPS = tuple(RECORD_DIRS.values())


def is_record_file(path: str) -> bool:
    """Return whether a repository path is a record file (a .md under topics/, facts/ or relations/, not hidden)."""
    return path.endswith(".md") and path.split("/", 1)[0] in RECORD_TOPS and "/." not in "/" + path


def secret_findings(path: str, data: bytes) -> list[str]:
    """Return descriptions of suspected credentials in a record file, like the am write path sees them."""
    from am.errors import InvalidRecordError
    from am.records.codec import decode_record_bytes, parse_record
    from am.records.secrets import scan_text
    from am.records.writes import scan_record

    try:
        text = decode_record_bytes(data, path=path)
    except InvalidRecordError:
        return []
    try:
        record = parse_record(text, path)
    except InvalidRecordError:
        findings = scan_text(text, field="file")
    else:
        findings = scan_record(record)
    return [f"{path}: {f.describe()}" for f in findings]
