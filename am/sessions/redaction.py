"""Mask credentials in a session log, keeping every other byte as it was.

Git history is forever, so a key pasted into a session must not reach a
commit. The detectors are am/records/secrets.py's; what differs is scale. A
session log can be tens of megabytes of JSON, and running some thirty regular
expressions over all of it costs a minute. So the log is read twice, cheaply:

1. one Aho-Corasick pass (``ahocorasick_rs``, over lower-cased 4 MiB pieces)
   finds the literals every detector needs (``akia``, ``ghp_``, ``sk-``,
   ``-----begin``, ``://``, ``bearer``, the names of an assignment such as
   ``password`` or ``api_key`` followed by ``=`` or ``:`` ...);
2. the full detectors run only on a window of the line around each such
   place, on a copy where JSON's own quotes and escapes (``\\n``,
   ``\\uXXXX``) are blanked at the same length and ``\\"`` reads as ``"``,
   so ``\\nAKIA...`` is seen as ``AKIA...``, ``"password": "..."`` as an
   assignment, and every offset still points into the raw line.

A secret is replaced by ``[redacted:<family>]``. A line that was JSON stays
JSON: if the in-place replacement would break it, that one line is parsed,
masked string by string and written again. Lines without secrets, and files
without any, are returned as the very same bytes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from am.records.secrets import _ASSIGNMENT, _family_hits, _judge

__all__ = ["Redacted", "mark", "redact_log", "redact_string"]

_PIECE = 4 << 20
_OVERLAP = 32
_BEFORE = 256
_AFTER = 1024
_AFTER_KEY = 16384  # a private key block runs for a few kilobytes
_TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.%")

# (literal as found in lower-cased text, exact case to require or None, window after it)
_LITERALS: tuple[tuple[bytes, bytes | None], ...] = (
    (b"akia", b"AKIA"), (b"asia", b"ASIA"), (b"abia", b"ABIA"), (b"acca", b"ACCA"),
    (b"aiza", b"AIza"), (b"accountkey", None), (b"sig=", None), (b"ghp_", None), (b"gho_", None),
    (b"ghu_", None), (b"ghs_", None), (b"ghr_", None), (b"github_pat_", None), (b"glpat-", None),
    (b"glptt-", None), (b"gldt-", None), (b"glrt-", None), (b"glsoat-", None), (b"glft-", None),
    (b"glcbt-", None), (b"sk-", None), (b"sk_live_", None), (b"rk_live_", None), (b"xoxa-", None),
    (b"xoxb-", None), (b"xoxp-", None), (b"xoxo-", None), (b"xoxs-", None), (b"xoxr-", None),
    (b"xapp-", None), (b"hooks.slack.com", None), (b"discord", None), (b"whsec_", None),
    (b"npm_", None), (b"pypi-", None), (b"hf_", None), (b"sg.", b"SG."), (b"gocspx-", b"GOCSPX-"),
    (b"doo_v1_", None), (b"dop_v1_", None), (b"dor_v1_", None), (b":aa", b":AA"), (b"eyj", b"eyJ"),
    (b"://", None), (b"bearer", None), (b"basic", None), (b"-----begin", None),
)
# Names an assignment detector judges: the last word of the name is one of these.
_NAMES: tuple[bytes, ...] = (b"pass", b"pwd", b"secret", b"token", b"key", b"credential",
                             "密码".encode(), "口令".encode(), "密钥".encode(), "秘钥".encode(), "令牌".encode())
_NAME_TAIL = re.compile(rb"[a-z]{0,6}[\"'*\\]{0,4}[ \t]{0,3}(?::|=|\xef\xbc\x9a|\xe6\x98\xaf|\xe4\xb8\xba)")
_ESCAPE = re.compile(r'\\(?:u[0-9a-fA-F]{4}|.)|"', re.DOTALL)
_KEY_END = re.compile(r"-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----")


def mark(kind: str) -> str:
    """Return the marker that replaces a secret of this family."""
    return f"[redacted:{kind}]"


@dataclass
class Redacted:
    """A log with its secrets masked, and how many of each family were."""

    data: bytes
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class _Finder:
    """Every place one of the literals occurs, in one pass (Aho-Corasick when available)."""

    def __init__(self) -> None:
        self.patterns = [lit for lit, _ in _LITERALS] + list(_NAMES)
        self.exact = [case for _, case in _LITERALS] + [None] * len(_NAMES)
        self.names_from = len(_LITERALS)
        try:
            import ahocorasick_rs

            self._ac: Any = ahocorasick_rs.BytesAhoCorasick(self.patterns)
        except ImportError:  # the pure-Python fallback: one find loop a literal (slower, same answer)
            self._ac = None

    def find(self, piece: bytes) -> Iterator[tuple[int, int, int]]:
        if self._ac is not None:
            yield from self._ac.find_matches_as_indexes(piece, overlapping=True)
            return
        for index, literal in enumerate(self.patterns):
            at = piece.find(literal)
            while at != -1:
                yield index, at, at + len(literal)
                at = piece.find(literal, at + 1)


_FINDER: _Finder | None = None


def _places(data: bytes) -> list[tuple[int, int]]:
    """Return (position, window after) of every place worth running the detectors at, in order."""
    global _FINDER
    finder = _FINDER = _FINDER or _Finder()
    found: list[tuple[int, int]] = []
    for base in range(0, len(data), _PIECE):
        piece = data[base:base + _PIECE + _OVERLAP].lower()
        for index, start, end in finder.find(piece):
            if start >= _PIECE:
                continue  # the next piece sees it
            at = base + start
            exact = finder.exact[index]
            if exact is not None and data[at:at + len(exact)] != exact:
                continue
            if index >= finder.names_from and not _NAME_TAIL.match(piece, end):
                continue  # "token bucket", "keyboard": a name, but nothing assigned to it
            found.append((at, _AFTER_KEY if finder.patterns[index] == b"-----begin" else _AFTER))
    found.sort()
    return found


def _windows(data: bytes, places: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge the places into windows of their lines, widened so no token is cut at an edge."""
    out: list[tuple[int, int]] = []
    for at, after in places:
        if out and at < out[-1][1]:
            line_end = data.find(b"\n", at)
            line_end = len(data) if line_end == -1 else line_end
            out[-1] = (out[-1][0], max(out[-1][1], _widen_end(data, min(line_end, at + after), line_end)))
            continue
        line_start = data.rfind(b"\n", 0, at) + 1
        line_end = data.find(b"\n", at)
        line_end = len(data) if line_end == -1 else line_end
        start = max(line_start, at - _BEFORE)
        while start > line_start and data[start - 1] in _TOKEN_BYTES:
            start -= 1
        end = _widen_end(data, min(line_end, at + after), line_end)
        out.append((start, end))
    return out


def _widen_end(data: bytes, end: int, line_end: int) -> int:
    while end < line_end and data[end] in _TOKEN_BYTES:
        end += 1
    return end


def _blank_escapes(text: str) -> str:
    """Return text with JSON's own quotes and each escape blanked to spaces (offsets kept); ``\\"`` reads ``"``."""
    return _ESCAPE.sub(lambda m: ' "' if m.group(0) == '\\"' else " " * len(m.group(0)), text)


def _assignments(view: str) -> Iterator[tuple[str, int, int]]:
    """Yield secrets.py's assignment hits, also where one value is the next name (``"k": "password = ..."``)."""
    pos = 0
    while (match := _ASSIGNMENT.search(view, pos)) is not None:
        name = match.group("name").lstrip("-$")
        group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
        raw, start = match.group(group), match.start(group)
        pos = start if start > match.start() else match.end()
        if group == "bare":
            if raw.startswith(":"):
                continue
            value = raw.rstrip(".:)]}>*")
        else:
            value = raw.strip()
            start += len(raw) - len(raw.lstrip())
        kind = _judge(name, value, quoted=group != "bare")
        if kind is not None:
            yield kind, start, start + len(value)
            pos = max(pos, start + len(value))


def _hits(view: str) -> list[tuple[str, int, int]]:
    """Return non-overlapping (family, start, end) in ``view``, the more specific family first."""
    taken: list[tuple[str, int, int]] = []
    for kind, start, end in (*_family_hits(view), *_assignments(view)):
        if "private key" in kind:
            found = _KEY_END.search(view, end)
            end = found.end() if found else end
        if not any(s < end and start < e for _, s, e in taken):
            taken.append((kind, start, end))
    return sorted(taken, key=lambda h: h[1])


def _spans(data: bytes) -> list[tuple[int, int, str]]:
    """Return (byte start, byte end, family) of every secret in the log, in order."""
    spans: list[tuple[int, int, str]] = []
    for start, end in _windows(data, _places(data)):
        text = data[start:end].decode("utf-8", "surrogateescape")
        for kind, s, e in _hits(_blank_escapes(text)):
            b0 = start + len(text[:s].encode("utf-8", "surrogateescape"))
            b1 = b0 + len(text[s:e].encode("utf-8", "surrogateescape"))
            if not spans or b0 >= spans[-1][1]:
                spans.append((b0, b1, kind))
    return spans


def redact_string(text: str, counts: Counter[str]) -> str:
    """Return a string with its secrets replaced by markers, counting them."""
    hits = _hits(text)
    for kind, start, end in reversed(hits):
        text = text[:start] + mark(kind) + text[end:]
        counts[kind] += 1
    return text


def _redact_value(value: Any, counts: Counter[str]) -> Any:
    if isinstance(value, str):
        return redact_string(value, counts)
    if isinstance(value, list):
        return [_redact_value(v, counts) for v in value]
    if isinstance(value, dict):
        return {k: _redact_value(v, counts) for k, v in value.items()}
    return value


def _fix_line(original: bytes, masked: bytes, spans: list[tuple[int, int, str]], counts: Counter[str]) -> bytes:
    """Return the masked line, or (when masking in place broke its JSON) the line parsed, masked and written again."""
    try:
        json.loads(original)
    except ValueError:
        for _, _, kind in spans:
            counts[kind] += 1
        return masked  # not JSON before: the bytes masked in place are the best there is
    try:
        json.loads(masked)
    except ValueError:
        value = _redact_value(json.loads(original), counts)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogateescape")
    for _, _, kind in spans:
        counts[kind] += 1
    return masked


def redact_log(data: bytes) -> Redacted:
    """Return the log with every suspected credential masked; ``data`` itself when there is none."""
    spans = _spans(data)
    if not spans:
        return Redacted(data)
    counts: Counter[str] = Counter()
    pieces: list[bytes] = []
    done = 0
    i = 0
    while i < len(spans):
        line_start = data.rfind(b"\n", 0, spans[i][0]) + 1
        line_end = data.find(b"\n", spans[i][0])
        line_end = len(data) if line_end == -1 else line_end
        in_line = []
        while i < len(spans) and spans[i][0] < line_end:
            in_line.append(spans[i])
            i += 1
        masked, at = [], line_start
        for s, e, kind in in_line:
            e = min(e, line_end)
            masked.append(data[at:s])
            masked.append(mark(kind).encode())
            at = e
        masked.append(data[at:line_end])
        pieces.append(data[done:line_start])
        pieces.append(_fix_line(data[line_start:line_end], b"".join(masked), in_line, counts))
        done = line_end
    pieces.append(data[done:])
    return Redacted(b"".join(pieces), counts)
