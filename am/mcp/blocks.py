"""Marked blocks in text files (CLAUDE.md, AGENTS.md, Codex's config.toml): added at the end, replaced, taken out.

A block sits between a begin line and an end line that name am and how to
remove it. Adding it again replaces the block in place (idempotent); taking it
out leaves the file exactly as it was before the block came, byte for byte:
a file that did not end in a newline gets one before the block, and the
begin line says so, so that removal takes that newline out too.

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MD_MARKERS", "TOML_MARKERS", "Markers", "drop_block", "find_block", "put_block"]


@dataclass(frozen=True)
class Markers:
    """The begin and end lines of a block, for one comment syntax."""

    begin: str
    end: str
    added_newline: str  # appended to the begin line when the block brought its own leading newline

    def first(self, joined: bool) -> str:
        return self.begin + (self.added_newline if joined else "")


MD_MARKERS = Markers("<!-- am:begin (written by `am setup`; remove with `am setup CLIENT --remove`) -->",
                     "<!-- am:end -->", "<!-- newline added -->")
TOML_MARKERS = Markers("# >>> am: written by `am setup codex`; remove with `am setup codex --remove`",
                       "# <<< am", " (newline added)")


def find_block(text: str, markers: Markers) -> tuple[int, int, bool] | None:
    """Return (start, end, joined) of the block in ``text`` (start includes an added newline), or None."""
    for joined in (True, False):
        head = markers.first(joined) + "\n"
        at = 0
        while True:
            at = text.find(head, at)
            if at < 0:
                break
            if at == 0 or text[at - 1] == "\n":
                tail = text.find("\n" + markers.end + "\n", at)
                if tail < 0 and text.endswith("\n" + markers.end):
                    tail = len(text) - len(markers.end) - 1
                if tail >= 0:
                    end = min(len(text), tail + 1 + len(markers.end) + 1)
                    start = at - 1 if joined else at
                    return start, end, joined
            at += 1
    return None


def put_block(text: str, body: str, markers: Markers) -> str:
    """Return ``text`` with the block holding ``body`` (replaced in place if present, else appended)."""
    body = body if body.endswith("\n") else body + "\n"
    found = find_block(text, markers)
    if found is not None:
        start, end, joined = found
        lead = "\n" if joined else ""
        return text[:start] + lead + markers.first(joined) + "\n" + body + markers.end + "\n" + text[end:]
    joined = bool(text) and not text.endswith("\n")
    return text + ("\n" if joined else "") + markers.first(joined) + "\n" + body + markers.end + "\n"


def drop_block(text: str, markers: Markers) -> str | None:
    """Return ``text`` without the block, as it was before ``put_block``; None when there is no block."""
    found = find_block(text, markers)
    if found is None:
        return None
    start, end, _ = found
    return text[:start] + text[end:]
