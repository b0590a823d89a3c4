"""A log's streamed text read across its lines, and the masked values hunted through the rest of the log.

A model's output saved as a stream is one JSON event a line, each with a few
characters of text: Anthropic's ``content_block_delta`` (``delta.text``,
``delta.partial_json``, ``delta.thinking``), OpenAI's chat ``choices[].delta``
(``content``, a tool call's ``arguments``) and its Responses API's
``response.*.delta`` (a string ``delta``), raw or as server-sent ``data:``
lines. A key arrives in pieces there, and no one line holds it whole, so
redaction.py's per-line scan cannot see it. Here the text of each run of
consecutive delta events (blank, ``event:`` and ``ping`` lines between them
do not end a run; a change of ``index`` does) is joined and scanned as one
text, and a secret that crosses a line is masked piece by piece: its marker
where it starts, its other pieces taken out, each line written again as JSON.

Only lines holding ``"delta"`` are parsed, and only when the log holds it at
all: a transcript that is not a stream pays one search of its bytes.

A value masked once is masked wherever it comes back in the same log
(``echoes``): an error message that repeats a password, a tool's output
printing the key the user pasted. Values under 8 characters are not hunted.

Nothing here imports redaction.py: it hands in its scan (``spans_of``).

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Rewrite", "echoes", "stream_rewrites"]

Spans = list[tuple[int, int, str]]
_DELTA_KEY = re.compile(rb'"delta"\s*:')
_TEXT_KEYS = ("text", "content", "partial_json", "thinking", "arguments")
_MIN_ECHO = 8


@dataclass
class Rewrite:
    """One line of a stream written again: its event with the delta text masked, and what that masked."""

    start: int
    end: int
    prefix: bytes  # "data: " of a server-sent event, kept
    event: Any
    kinds: list[str] = field(default_factory=list)


@dataclass
class _Piece:
    start: int
    end: int
    prefix: bytes
    event: Any
    holder: Any  # the dict or list holding the text, and its key or index
    key: Any
    data: bytes  # the text, UTF-8 (surrogates kept)
    group: object


def _lines(data: bytes) -> Iterator[tuple[int, int]]:
    """Yield (start, end) of each line holding a "delta" key, in order."""
    last = -1
    for match in _DELTA_KEY.finditer(data):
        start = data.rfind(b"\n", 0, match.start()) + 1
        if start == last:
            continue
        last = start
        end = data.find(b"\n", match.start())
        yield start, len(data) if end == -1 else end


def _text_of(event: Any) -> tuple[Any, Any, object] | None:
    """Return (holder, key, group) of a delta event's text, or None if the line is no delta event."""
    if not isinstance(event, dict):
        return None
    group: object = event.get("index")
    delta = event.get("delta")
    if delta is None and isinstance(event.get("choices"), list) and event["choices"]:
        choice = event["choices"][0]
        if isinstance(choice, dict):
            delta, group = choice.get("delta"), ("choice", choice.get("index"))
    if isinstance(delta, str):
        return event, "delta", (group, event.get("item_id"), event.get("type"))
    if not isinstance(delta, dict):
        return None
    for key in _TEXT_KEYS:
        if isinstance(delta.get(key), str):
            return delta, key, (group, key)
    calls = delta.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        function = calls[0].get("function")
        if isinstance(function, dict) and isinstance(function.get("arguments"), str):
            return function, "arguments", (group, "tool", calls[0].get("index"))
    return None


def _pieces(data: bytes) -> list[_Piece]:
    out = []
    for start, end in _lines(data):
        raw = data[start:end]
        prefix = b"data: " if raw.startswith(b"data: ") else b""
        try:
            event = json.loads(raw[len(prefix):])
        except (ValueError, RecursionError):
            continue
        found = _text_of(event)
        if found is None:
            continue
        holder, key, group = found
        out.append(_Piece(start, end, prefix, event, holder, key,
                          holder[key].encode("utf-8", "surrogatepass"), group))
    return out


def _between_is_quiet(data: bytes, end: int, start: int) -> bool:
    """Whether only blank, ``event:`` or ping lines lie between two delta events."""
    for line in data[end:start].split(b"\n"):
        line = line.strip()
        if line and not line.startswith((b"event:", b":")) and b'"ping"' not in line:
            return False
    return True


def _runs(data: bytes, pieces: list[_Piece]) -> Iterator[list[_Piece]]:
    run: list[_Piece] = []
    for piece in pieces:
        if run and (piece.group != run[-1].group or not _between_is_quiet(data, run[-1].end, piece.start)):
            yield run
            run = []
        run.append(piece)
    if run:
        yield run


def stream_rewrites(data: bytes, spans_of: Callable[[bytes], Spans]) -> tuple[dict[int, Rewrite], dict[bytes, str]]:
    """Mask the secrets that cross a line of a streamed log; return the lines written again and the values masked.

    ``spans_of``: redaction.py's scan of a text (byte start, end, family).
    The lines are keyed by their start; a secret within one line is left to
    the per-line scan.
    """
    if b'"delta"' not in data:
        return {}, {}
    rewrites: dict[int, Rewrite] = {}
    values: dict[bytes, str] = {}
    for run in _runs(data, _pieces(data)):
        if len(run) < 2:
            continue
        joined = b"".join(p.data for p in run)
        bounds, at = [], 0
        for p in run:
            bounds.append((at, at + len(p.data)))
            at += len(p.data)
        cuts: dict[int, list[tuple[int, int, str, bool]]] = {}
        for s, e, kind in spans_of(joined):
            touched = [i for i, (b0, b1) in enumerate(bounds) if b0 < e and s < b1]
            if len(touched) < 2:
                continue  # inside one line: the per-line scan masks it
            values[joined[s:e]] = kind
            for n, i in enumerate(touched):
                b0, b1 = bounds[i]
                cuts.setdefault(i, []).append((max(s, b0) - b0, min(e, b1) - b0, kind, n == 0))
        for i, its in cuts.items():
            piece = run[i]
            text, kinds = piece.data, []
            for s, e, kind, first in sorted(its, reverse=True):
                text = text[:s] + (f"[redacted:{kind}]".encode() if first else b"") + text[e:]
                if first:
                    kinds.append(kind)
            piece.holder[piece.key] = text.decode("utf-8", "surrogatepass")
            rewrites[piece.start] = Rewrite(piece.start, piece.end, piece.prefix, piece.event, kinds)
    return rewrites, values


def echoes(data: bytes, values: dict[bytes, str], spans: Spans, skip: dict[int, Rewrite]) -> Spans:
    """Return the spans where a value masked elsewhere in the log comes back, outside ``spans`` and ``skip``'s lines.

    ``values``: each masked value and its family (values under 8 bytes are not hunted).
    """
    wanted = {v: k for v, k in values.items() if len(v) >= _MIN_ECHO and b"\n" not in v}
    if not wanted:
        return []
    taken = sorted((s, e) for s, e, _ in spans)
    found: Spans = []
    for at, end, kind in _occurrences(data, wanted):
        if not _overlaps(taken, at, end) and not _in_rewrite(data, skip, at):
            found.append((at, end, kind))
    found.sort()
    out: Spans = []
    for s, e, kind in found:  # two values may overlap (one inside the other): the first, longest, wins
        if not out or s >= out[-1][1]:
            out.append((s, e, kind))
    return out


def _occurrences(data: bytes, wanted: dict[bytes, str]) -> Iterator[tuple[int, int, str]]:
    """Yield (start, end, family) of every occurrence of the wanted values: one Aho-Corasick pass over the log."""
    values = list(wanted)
    try:
        import ahocorasick_rs
    except ImportError:  # one search a value: the same answer, slower for many values
        for value in values:
            at = data.find(value)
            while at != -1:
                yield at, at + len(value), wanted[value]
                at = data.find(value, at + len(value))
        return
    finder = ahocorasick_rs.BytesAhoCorasick(values, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)
    for index, start, end in finder.find_matches_as_indexes(data):
        yield start, end, wanted[values[index]]


def _overlaps(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    import bisect

    i = bisect.bisect_left(taken, (start, start))
    return any(s < end and start < e for s, e in taken[max(0, i - 1):i + 1])


def _in_rewrite(data: bytes, skip: dict[int, Rewrite], at: int) -> bool:
    return bool(skip) and (data.rfind(b"\n", 0, at) + 1) in skip
