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
   place, on a copy where JSON's own quotes and escapes (``\\n``, a
   ``\\u`` and its four hex digits) are blanked at the same length and ``\\"`` reads as ``"``,
   so ``\\nAKIA...`` is seen as ``AKIA...``, ``"password": "..."`` as an
   assignment, and every offset still points into the raw line.

A secret is replaced by ``[redacted:<family>]``. A line that was JSON stays
JSON: if the in-place replacement would break it, that one line is parsed,
masked string by string and written again. Lines without secrets, and files
without any, are returned as the very same bytes.

Decisions: docs/decisions/sessions.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from am.records.secrets import _ASSIGNMENT, _FAMILIES, _judge
from am.sessions.streams import Rewrite, echoes, stream_rewrites

__all__ = ["Redacted", "mark", "redact_log", "redact_log_to", "redact_string"]

_PIECE = 4 << 20
_OVERLAP = 32
_BEFORE = 256
_AFTER = 1024
_AFTER_KEY = 16384  # a private key block runs for a few kilobytes
_TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.%")

# (literal as found in lower-cased text, exact case to require or None, the families it can start)
_LITERALS: tuple[tuple[bytes, bytes | None, str], ...] = (
    (b"akia", b"AKIA", "AWS access key id"), (b"asia", b"ASIA", "AWS access key id"),
    (b"abia", b"ABIA", "AWS access key id"), (b"acca", b"ACCA", "AWS access key id"),
    (b"aws_secret", None, "AWS secret access key"), (b"awssecret", None, "AWS secret access key"),
    (b"secret_access", None, "AWS secret access key"), (b"secretaccess", None, "AWS secret access key"),
    (b"aiza", b"AIza", "GCP API key"), (b"accountkey", None, "Azure storage account key"),
    (b"sig=", None, "Azure SAS token"), (b"ghp_", None, "GitHub token"), (b"gho_", None, "GitHub token"),
    (b"ghu_", None, "GitHub token"), (b"ghs_", None, "GitHub token"), (b"ghr_", None, "GitHub token"),
    (b"github_pat_", None, "GitHub token"), (b"glpat-", None, "GitLab token"), (b"glptt-", None, "GitLab token"),
    (b"gldt-", None, "GitLab token"), (b"glrt-", None, "GitLab token"), (b"glsoat-", None, "GitLab token"),
    (b"glft-", None, "GitLab token"), (b"glcbt-", None, "GitLab token"),
    (b"sk-ant-", None, "Anthropic API key"), (b"sk-", None, "OpenAI API key"),
    (b"sk_live_", None, "Stripe live key"), (b"rk_live_", None, "Stripe live key"),
    (b"xoxa-", None, "Slack token"), (b"xoxb-", None, "Slack token"), (b"xoxp-", None, "Slack token"),
    (b"xoxo-", None, "Slack token"), (b"xoxs-", None, "Slack token"), (b"xoxr-", None, "Slack token"),
    (b"xapp-", None, "Slack token"), (b"hooks.slack.com", None, "Slack webhook URL"),
    (b"discord", None, "Discord webhook URL"), (b"whsec_", None, "Stripe webhook secret"),
    (b"npm_", None, "npm token"), (b"pypi-", None, "PyPI token"), (b"hf_", None, "Hugging Face token"),
    (b"sg.", b"SG.", "SendGrid API key"), (b"gocspx-", b"GOCSPX-", "Google OAuth client secret"),
    (b"doo_v1_", None, "DigitalOcean token"), (b"dop_v1_", None, "DigitalOcean token"),
    (b"dor_v1_", None, "DigitalOcean token"), (b":aa", b":AA", "Telegram bot token"),
    (b"eyj", b"eyJ", "JSON Web Token"), (b"://", None, "password in URL"), (b"bearer", None, "HTTP bearer token"),
    (b"basic", None, "HTTP basic auth credentials"), (b"-----begin", None, "private key block"),
    *((command, None, "password on a command line") for command in (b"mysql", b"sshpass", b"docker", b"podman",
                                                                    b"nerdctl", b"curl")),
    *((word, None, "password in prose") for word in (b"password", b"passwd", b"passphrase", b"passcode")),
    *((lead, None, "password hash") for lead in (b"$apr1$", b"$1$", b"$5$", b"$6$", b"$2$", b"$2a$", b"$2b$",
                                                 b"$2x$", b"$2y$")),
    (b"{sha}", b"{SHA}", "password hash"),
)
_ASSIGN = "assignment"
# An assignment secrets.py judges: a name whose last word is one of these, a closing quote, spaces and a
# separator (each spelling is a literal of its own, so "tokens" or "keyboard" never stop the scan), ...
_NAME_WORDS = ("pass", "password", "passwd", "passphrase", "passcode", "pwd", "secret", "secrets", "token",
               "key", "credential", "credentials", "密码", "口令", "密钥", "秘钥", "令牌")
_CLOSERS = ("", *(a + b for a in ("", '"', "'", "*", "\\") for b in ('"', "'", "*", "\\")), '\\\\"', '\\\\\\"')
_NAMES: tuple[bytes, ...] = tuple(dict.fromkeys(
    f"{word}{closer}{space}{sep}".encode() for word in _NAME_WORDS for closer in _CLOSERS
    for space in ("", " ", "  ", "\t") for sep in (":", "=", "：", "是", "为")))
# ... then at least the 8 characters any value secrets.py judges a credential has (no quote, backslash or
# space among them: a value shorter than that, "= burst\\n", is never one), its quote escaped once or twice.
_VALUE = re.compile(rb"[ \t]{0,3}(?:\\{0,3}[\"'`])?[^\s\"'`\\]{8}")
_ESCAPES = ("\\n", "\\t", "\\r", "\\/", "\\b", "\\f", "\\u")
# The same escapes one level down: JSON inside a JSON string (Codex's shell output and arguments) writes a
# newline as backslash, backslash, n, and the key after it must still be seen as a key.
_DOUBLED = tuple("\\" + escape for escape in _ESCAPES[:-1])
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
        self.patterns = [lit for lit, _, _ in _LITERALS] + list(_NAMES)
        self.exact = [case for _, case, _ in _LITERALS] + [None] * len(_NAMES)
        self.detector = [kind for _, _, kind in _LITERALS] + [_ASSIGN] * len(_NAMES)
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


def _places(data: bytes) -> list[tuple[int, int, str]]:
    """Return (position, window after, detector) of every place worth running a detector at, in order."""
    global _FINDER
    finder = _FINDER = _FINDER or _Finder()
    found: list[tuple[int, int, str]] = []
    for base in range(0, len(data), _PIECE):
        piece = data[base:base + _PIECE + _OVERLAP].lower()
        for index, start, end in finder.find(piece):
            if start >= _PIECE:
                continue  # the next piece sees it
            at = base + start
            exact = finder.exact[index]
            if exact is not None and data[at:at + len(exact)] != exact:
                continue
            if index >= finder.names_from and not _VALUE.match(piece, end):
                continue  # "key: value": a name, but nothing a credential could be assigned to it
            found.append((at, _AFTER_KEY if finder.patterns[index] == b"-----begin" else _AFTER,
                          finder.detector[index]))
    found.sort()
    return found


def _windows(data: bytes, places: list[tuple[int, int, str]]) -> list[tuple[int, int, set[str]]]:
    """Merge the places into windows of their lines (with the detectors to run), widened so no token is cut."""
    out: list[tuple[int, int, set[str]]] = []
    for at, after, detector in places:
        if out and at < out[-1][1]:
            line_end = data.find(b"\n", at)
            line_end = len(data) if line_end == -1 else line_end
            out[-1][2].add(detector)
            out[-1] = (out[-1][0], max(out[-1][1], _widen_end(data, min(line_end, at + after), line_end)), out[-1][2])
            continue
        line_start = data.rfind(b"\n", 0, at) + 1
        line_end = data.find(b"\n", at)
        line_end = len(data) if line_end == -1 else line_end
        start = max(line_start, at - _BEFORE)
        while start > line_start and data[start - 1] in _TOKEN_BYTES:
            start -= 1
        end = _widen_end(data, min(line_end, at + after), line_end)
        out.append((start, end, {detector}))
    return out


def _widen_end(data: bytes, end: int, line_end: int) -> int:
    while end < line_end and data[end] in _TOKEN_BYTES:
        end += 1
    return end


def _blank_escapes(text: str) -> str:
    """Return text with JSON's own quotes and each escape blanked to spaces (offsets kept); ``\\"`` reads ``"``.

    A chain of ``str.replace`` (fast in C) in an order that keeps escapes
    apart: the escapes of JSON inside a JSON string (``\\\\n``) first, then an
    escaped backslash, then every quote (an escaped one is left as a
    backslash and a space, and becomes ``" ``: the quote first, so that
    ``\\"password\\": \\"...\\"`` reads ``" password" : " ..." ``, an
    assignment; one level down, ``\\\\\\"`` reads ``"   ``), then the letters.
    """
    if "\\\\" in text:  # JSON inside a JSON string: rare, so one scan decides
        for escape in _DOUBLED:
            if escape in text:
                text = text.replace(escape, "   ")
        text = text.replace('\\\\\\"', "\\   ")  # a quote one level down reads as one a level up
    text = text.replace("\\\\", "  ").replace('"', " ").replace("\\ ", '" ')
    for escape in _ESCAPES:
        if escape in text:
            text = text.replace(escape, "  ")
    return text


def _assignment_at(view: str, pos: int) -> tuple[str, int, int] | None:
    """Judge secrets.py's assignment pattern matched at ``pos`` (a name's first character) in ``view``."""
    match = _ASSIGNMENT.match(view, pos)
    if match is None:
        return None
    name = match.group("name").lstrip("-$")
    group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
    raw, start = match.group(group), match.start(group)
    if group == "bare":
        if raw.startswith(":"):
            return None  # reStructuredText roles (":type key: :class:`x`"), not values
        value = raw.rstrip(".:)]}>*")
    else:
        value = raw.strip()
        start += len(raw) - len(raw.lstrip())
    kind = _judge(name, value, quoted=group != "bare")
    return None if kind is None else (kind, start, start + len(value))


def _name_start(view: str, at: int) -> int:
    """Return where the name holding the keyword at ``at`` begins (secrets.py's name characters)."""
    start = at
    while start > 0 and at - start < 64 and (view[start - 1].isalnum() or view[start - 1] in "_.-$"):
        start -= 1
    return start


def _assignments(data: bytes, places: list[int]) -> Iterator[tuple[int, int, str]]:
    """Yield (byte start, byte end, kind) of credentials assigned to the names found at ``places``."""
    for at in places:
        line_start = data.rfind(b"\n", 0, at) + 1
        line_end = data.find(b"\n", at)
        line_end = len(data) if line_end == -1 else line_end
        start = max(line_start, at - 72)
        while start > line_start and data[start - 1] == 0x5C:  # never begin inside a JSON escape
            start -= 1
        end = _widen_end(data, min(line_end, at + 320), line_end)
        text = data[start:end].decode("utf-8", "surrogateescape")
        view = _blank_escapes(text)
        offset = len(data[start:at].decode("utf-8", "surrogateescape"))
        hit = _assignment_at(view, _name_start(view, offset))
        if hit is not None:
            kind, s, e = hit
            b0 = start + len(text[:s].encode("utf-8", "surrogateescape"))
            yield b0, b0 + len(text[s:e].encode("utf-8", "surrogateescape")), kind


def _text_assignments(view: str) -> Iterator[tuple[str, int, int]]:
    """Yield the assignment hits of a whole text (a line parsed again), one name at a time."""
    pos = 0
    while (match := _ASSIGNMENT.search(view, pos)) is not None:
        hit = _assignment_at(view, match.start())
        pos = match.start() + 1
        if hit is not None:
            yield hit
            pos = max(pos, hit[2])


def _family_hits(view: str, detectors: set[str] | None) -> Iterator[tuple[str, int, int]]:
    """Yield the hits of secrets.py's token families (only those named in ``detectors``, when given)."""
    for family in _FAMILIES:
        if detectors is not None and family.kind not in detectors and not (
                "private key" in family.kind and "private key block" in detectors):
            continue
        for match in family.pattern.finditer(view):
            if family.check is None or family.check(match, view):
                yield family.kind, match.start("secret"), match.end("secret")


def _hits(view: str, detectors: set[str] | None = None) -> list[tuple[str, int, int]]:
    """Return non-overlapping (family, start, end) in ``view``, the more specific family first."""
    taken: list[tuple[str, int, int]] = []
    assignments = _text_assignments(view) if detectors is None else iter(())
    for kind, start, end in (*_family_hits(view, detectors), *assignments):
        if "private key" in kind:
            found = _KEY_END.search(view, end)
            end = found.end() if found else end
        if not any(s < end and start < e for _, s, e in taken):
            taken.append((kind, start, end))
    return sorted(taken, key=lambda h: h[1])


def _spans(data: bytes) -> list[tuple[int, int, str]]:
    """Return (byte start, byte end, family) of every secret in the log, in order."""
    places = _places(data)
    found: list[tuple[int, int, str]] = []
    for start, end, detectors in _windows(data, [p for p in places if p[2] != _ASSIGN]):
        text = data[start:end].decode("utf-8", "surrogateescape")
        for kind, s, e in _hits(_blank_escapes(text), detectors):
            b0 = start + len(text[:s].encode("utf-8", "surrogateescape"))
            found.append((b0, b0 + len(text[s:e].encode("utf-8", "surrogateescape")), kind))
    families = len(found)
    found.extend(_assignments(data, [at for at, _, d in places if d == _ASSIGN]))
    # Sorted, without overlaps; where two claim the same bytes, a token family wins over an assignment.
    spans: list[tuple[int, int, str]] = []
    for i in sorted(range(len(found)), key=lambda i: (found[i][0], i >= families)):
        b0, b1, kind = found[i]
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
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python reads
        for _, _, kind in spans:
            counts[kind] += 1
        return masked  # not JSON before: the bytes masked in place are the best there is
    try:
        json.loads(masked)
    except (ValueError, RecursionError):
        try:
            value = _redact_value(json.loads(original), counts)
            return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogateescape")
        except RecursionError:  # too deep to walk: the bytes masked in place
            for _, _, kind in spans:
                counts[kind] += 1
            return masked
    for _, _, kind in spans:
        counts[kind] += 1
    return masked


def _plan(data: bytes) -> tuple[list[tuple[int, int, str]], dict[int, Rewrite], dict[bytes, str]]:
    """Return the spans to mask in place, the stream lines to write again, and every value masked (streams.py)."""
    spans = _spans(data)
    rewrites, values = stream_rewrites(data, _spans)
    if not spans and not rewrites:
        return spans, rewrites, values
    for s, e, kind in spans:
        values.setdefault(data[s:e], kind)
    spans = sorted(spans + echoes(data, values, spans, rewrites))
    if rewrites:  # a line written again is masked whole there, as JSON
        spans = [sp for sp in spans if data.rfind(b"\n", 0, sp[0]) + 1 not in rewrites]
    return spans, rewrites, values


def redact_log(data: bytes) -> Redacted:
    """Return the log with every suspected credential masked; ``data`` itself when there is none."""
    spans, rewrites, values = _plan(data)
    if not spans and not rewrites:
        return Redacted(data)
    counts: Counter[str] = Counter()
    with memoryview(data) as view:  # pieces are views of the log, not copies: the result is the one new copy
        out = b"".join(list(_pieces(data, view, spans, counts, rewrites, values)))
    return Redacted(out, counts)


def redact_log_to(data: bytes, out: BinaryIO) -> Counter[str] | None:
    """Write the masked log to ``out`` and return how many of each family were masked.

    None, with nothing written, when the log holds no secret (``data`` is then
    the log as it is kept). Written piece by piece, the masked copy never sits
    in memory beside the log: an ingest reads it back once the log is let go
    (the peak memory of ``am ingest``, bench/bench_sessions.py).
    """
    spans, rewrites, values = _plan(data)
    if not spans and not rewrites:
        return None
    counts: Counter[str] = Counter()
    with memoryview(data) as view:
        out.writelines(_pieces(data, view, spans, counts, rewrites, values))
    return counts


def _rewritten(rewrite: Rewrite, values: dict[bytes, str], counts: Counter[str]) -> bytes:
    """Return a stream line written again: its event masked (what crossed its lines, and all else) as JSON."""
    counts.update(rewrite.kinds)
    known = [(v.decode("utf-8", "surrogateescape"), mark(k), k) for v, k in values.items() if len(v) >= 8]

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            value = redact_string(value, counts)
            for secret, marker, kind in known:
                if secret in value:
                    counts[kind] += value.count(secret)
                    value = value.replace(secret, marker)
            return value
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    text = json.dumps(walk(rewrite.event), ensure_ascii=False, separators=(",", ":"))
    return rewrite.prefix + text.encode("utf-8", "surrogatepass")


def _pieces(data: bytes, view: memoryview, spans: list[tuple[int, int, str]], counts: Counter[str],
            rewrites: dict[int, Rewrite] | None = None,
            values: dict[bytes, str] | None = None) -> Iterator[bytes | memoryview]:
    """Yield the masked log in order: views of the lines without secrets, each line with secrets masked, and
    each stream line written again."""
    done = 0
    i = 0
    pending = sorted((rewrites or {}).values(), key=lambda r: r.start)
    r = 0
    while i < len(spans) or r < len(pending):
        if r < len(pending) and (i == len(spans) or pending[r].start <= spans[i][0]):
            rewrite = pending[r]
            r += 1
            yield view[done:rewrite.start]
            yield _rewritten(rewrite, values or {}, counts)
            done = rewrite.end
            continue
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
        yield view[done:line_start]
        yield _fix_line(data[line_start:line_end], b"".join(masked), in_line, counts)
        done = line_end
    yield view[done:]
