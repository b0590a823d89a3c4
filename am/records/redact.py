"""Redact suspected credentials from text instead of refusing it (``am import --redact-secrets``); pure.

The detectors are am/records/secrets.py's: what ``scan_text`` would report is
exactly what is masked, so a redacted record passes the write path's scan.

Decisions: docs/decisions/portability.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from am.records.secrets import _all_hits, _judge, scan_fields

__all__ = ["MASK", "redact_text", "redact_value"]

MASK = "[redacted]"


def redact_text(text: str, *, mask: str = MASK) -> str:
    """Return ``text`` with every suspected credential replaced by ``mask``."""
    spans: list[tuple[int, int]] = []
    for _, start, end in _all_hits(text):
        if not any(s < end and start < e for s, e in spans):
            spans.append((start, end))
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + mask + text[end:]
    return text


def redact_value(field: str, value: Any, *, mask: str = MASK) -> Any:
    """Return a field's value (text, list or mapping) with suspected credentials masked."""
    if isinstance(value, str):
        cleaned = redact_text(value, mask=mask)
        if scan_fields({field: cleaned}):
            # Found by the field's own name ("api_token: 8f2K..."): the whole value is the credential.
            leaf = field.rsplit(".", 1)[-1]
            return mask if _judge(leaf, cleaned.strip(), quoted=False) else cleaned
        return cleaned
    if isinstance(value, (list, tuple)):
        return [redact_value(field, v, mask=mask) for v in value]
    if isinstance(value, Mapping):
        return {k: redact_value(f"{field}.{k}", v, mask=mask) for k, v in value.items()}
    return value
