"""How a new fact's text compares with a holding one: the same claim, an update or contradiction, or unrelated (docs/decisions/writes.md#a-fact-like-a-holding-one-is-said-at-write-time-similar).

Pure text, no I/O, so bench/bench_similar.py can run it alone. ``classify(new, old)`` returns a
``Verdict``: ``same`` (a restatement: the same words up to case, punctuation, spacing, stop words and
plural endings, or near-equal wording with nothing of value changed), ``candidate`` (the same subject
with a differing value: a number, a date, a weekday, a time, a name, a negation, or one swapped word in
an otherwise equal sentence), or None (unrelated). English and Chinese: CJK characters are tokens,
weekdays and dates of both languages are one token each (周二 and Tuesday are the same day).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import NamedTuple

from am.cache.stems import stem

__all__ = ["STOP_WORDS", "Token", "Verdict", "classify", "content_words", "normalise", "quick_overlap", "rough", "rough_alike", "rough_score",
           "tokens"]

# Words whose presence or absence does not change a claim. Never a negation, a quantifier or a direction.
STOP_WORDS = frozenset(
    "a an the is are was were be been being am to of in on at by for and or that this these those it its "
    "we our us you your they their there here then so as with from into onto about also just really "
    "very please now currently do does did has have had will shall would should can could may might "
    "的 了 是 在 着 过 吧 呢 啊 呀 也 都 就 会 要 把 被 让 给 和 与 及 我们 我 你 他 她 它 们 这 那 个 一个 所以 现在 目前 请 "
    "必 须 可 以 能".split())  # 必须 / 可以 / 能: modals, as "must" and "can" are

# A word and its opposite: the opposite is read as the word negated ("private" says "not public").
ANTONYMS = {"private": "public", "forbidden": "allowed", "forbid": "allow", "disallowed": "allowed",
            "disabled": "enabled", "disable": "enable", "stateful": "stateless", "optional": "required",
            "manual": "automatic", "manually": "automatically", "off": "on", "closed": "open", "false": "true",
            "unsupported": "supported", "deprecated": "supported", "sync": "async", "synchronous": "asynchronous"}
_CJK_ANTONYMS = (("私有", "不公开"), ("禁止", "不允许"), ("有状态", "不无状态"), ("关闭", "不开启"), ("手动", "不自动"),
                 ("没有", "没"), ("不要", "不"), ("不会", "不"))

NEGATIONS = frozenset("not no never none nothing nobody neither nor without 不 没 没有 未 无 非 别 勿 不要 不能 不会 禁止".split())

_WEEKDAYS = {"monday": 1, "mon": 1, "tuesday": 2, "tue": 2, "tues": 2, "wednesday": 3, "wed": 3, "thursday": 4,
             "thu": 4, "thur": 4, "thurs": 4, "friday": 5, "fri": 5, "saturday": 6, "sat": 6, "sunday": 7, "sun": 7}
_CN_DAY = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 7, "天": 7}
_MONTHS = {m: i + 1 for i, m in enumerate("january february march april may june july august september october "
                                          "november december".split())}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})  # "may" is a month only beside a day's number
_CN_NUM = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNIT = {"十": 10, "百": 100, "千": 1000, "万": 10000}

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_MONTH_RE = "(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*"
_PARTS = re.compile(
    r"(?P<iso>\d{4}-\d{1,2}-\d{1,2})"
    rf"|(?P<cndate>(?:\d{{4}}年)?\d{{1,2}}月\d{{1,2}}[日号])"
    rf"|(?P<mdate>(?:{_MONTH_RE})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b)"
    rf"|(?P<dmdate>\d{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{_MONTH_RE})\b(?:,? \d{{4}})?)"
    r"|(?P<time>\d{1,2}:\d{2}(?:\s?[ap]\.?m\.?)?|\d{1,2}\s?[ap]\.?m\.?)"
    r"|(?P<cnday>(?:周|星期|礼拜)[一二三四五六日天])"
    r"|(?P<num>\d+(?:[.,]\d+)*%?)"
    rf"|(?P<cnnum>[零〇一二两三四五六七八九十百千万]+(?=[个次天日周年月小分秒条台位倍%％点号]|$|[^{_CJK}]))"
    rf"|(?P<cjk>[{_CJK}])"
    rf"|(?P<word>[^\W\d_{_CJK}][^\W{_CJK}]*(?:['.=-][^\W{_CJK}]+)*)")


# A name: a capitalised word (not a sentence's first), camelCase, snake_case, ALL CAPS; after any non-letter (CJK too).
_CAPITAL = re.compile(rf"(?<![A-Za-z0-9_])(?:[A-Z][^\W{_CJK}]*(?:[.-][^\W{_CJK}]+)*|[a-z]+[A-Z][^\W{_CJK}]*"
                      rf"|[^\W{_CJK}]+_[^\W{_CJK}]+)")
_ROUGH = re.compile(rf"[a-z]{{1,5}}[a-z]*|\d+|[{_CJK}]")


@lru_cache(maxsize=256)
def _rough_new(text: str) -> frozenset[str]:
    return frozenset(_rough(text))


def rough(text: str) -> set[str]:
    """Return a text's rough words: the first five letters of each Latin word, numbers, CJK characters; no stop words."""
    return _rough(text)


def _rough(text: str) -> set[str]:
    return {w[:5] for w in _ROUGH.findall(text.casefold())} - _ROUGH_STOPS


_ROUGH_STOPS = frozenset(w[:5] for w in STOP_WORDS if len(w) > 1 or not w.isascii()) | frozenset("的了是在")


def rough_score(new: str, old: str) -> float:
    """Return the share of their rough words two texts have in common (Jaccard), 0.0 when ``rough_alike`` says no."""
    a, b = _rough_new(new), _rough(old)
    both = len(a & b)
    return both / (len(a) + len(b) - both) if rough_alike(a, b, both) else 0.0


def quick_overlap(new: str, old: str) -> bool:
    """Return whether two texts share enough rough words (5-letter prefixes, CJK characters) to be classified
    (``rough_alike``).

    A few microseconds, so a write can ask it of every fact of a topic before ``classify``.
    """
    return rough_alike(_rough_new(new), _rough(old))


def rough_alike(a: frozenset[str] | set[str], b: frozenset[str] | set[str], shared: int | None = None) -> bool:
    """Return whether two rough word sets overlap enough to be classified: half of their union is shared."""
    if not a or not b:
        return False
    both = len(a & b) if shared is None else shared
    return both * 2 >= len(a) + len(b) - both


class Token(NamedTuple):
    """One unit of a text: ``key`` is what is compared, ``kind`` what sort of value it is, ``shown`` as written."""

    key: str
    kind: str  # word, stop, neg, name, num, date, time, weekday, cjk
    shown: str


@dataclass(frozen=True)
class Verdict:
    """What ``classify`` found: ``kind`` 'same' or 'candidate' (None: unrelated), ``why`` in a few words."""

    kind: str | None
    why: str
    score: float


@lru_cache(maxsize=4096)
def normalise(text: str) -> str:
    """Return text as compared: NFKC, case folded, contractions opened ("don't" -> "do not"), spaces single."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    for word, opposite in _CJK_ANTONYMS:
        text = text.replace(word, opposite)
    text = re.sub(r"\bcan't\b|\bcannot\b", "can not", text)
    text = re.sub(r"\bwon't\b", "will not", text)
    text = re.sub(r"n't\b", " not", text)
    return " ".join(text.split())


def _cn_number(run: str) -> str:
    if all(c in _CN_NUM for c in run):
        return "".join(str(_CN_NUM[c]) for c in run) if len(run) > 1 else str(_CN_NUM[run])
    total, current = 0, 0
    for c in run:
        if c in _CN_NUM:
            current = _CN_NUM[c]
        else:
            total += (current or 1) * _CN_UNIT[c]
            current = 0
    return str(total + current)


def _stem(word: str) -> str:
    return stem(word) if word.isascii() and word.isalpha() else word


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[Token, ...]:
    """Return the tokens of a fact's text (see ``Token``), in order; punctuation dropped."""
    original = unicodedata.normalize("NFKC", text)
    folded = normalise(text)
    # Names are judged on the original's case, so find the capitalised words first (not a sentence's first word).
    capital = {m.group().casefold().rstrip(".-") for m in _CAPITAL.finditer(original)
               if m.start() > 0 and original[:m.start()].rstrip()[-1:] not in (".", "!", "?", ":", "")}
    out: list[Token] = []
    for m in _PARTS.finditer(folded):
        kind, value = m.lastgroup or "word", m.group()
        if kind in ("iso", "cndate", "mdate", "dmdate"):
            out.append(Token(_date_key(value), "date", value))
        elif kind == "time":
            out.append(Token(value.replace(" ", "").replace(".", ""), "time", value))
        elif kind == "cnday":
            out.append(Token(f"day{_CN_DAY[value[-1]]}", "weekday", value))
        elif kind == "num":
            out.append(Token(value.replace(",", ""), "num", value))
        elif kind == "cnnum":
            out.append(Token(_cn_number(value), "num", value))
        elif kind == "cjk":
            out.append(Token(value, "neg" if value in NEGATIONS else "stop" if value in STOP_WORDS else "cjk", value))
        else:
            word = value.strip(".-'")
            day = _WEEKDAYS.get(word) or _WEEKDAYS.get(word[:-1] if word.endswith("s") else "")
            if day and (len(word) > 4 or word in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")):
                out.append(Token(f"day{day}", "weekday", value))
            elif word in NEGATIONS:
                out.append(Token("not", "neg", value))
            elif word in ANTONYMS:
                out.append(Token(_stem(ANTONYMS[word]), "word", value))
                out.append(Token("not", "neg", value))
            elif word in STOP_WORDS:
                out.append(Token(word, "stop", value))
            elif word in capital or not word.isalpha():
                out.append(Token(_stem(word), "name", value))  # keyed as a word: "GitHub" and "github" are one
            else:
                out.append(Token(_stem(word), "word", value))
    return tuple(_joined_negations(out))


def _joined_negations(out: list[Token]) -> list[Token]:
    # 没有 / 不要 / 不能 are one negation, not two; CJK stop characters glued to a negation stay stops.
    merged: list[Token] = []
    for t in out:
        if t.kind == "neg" and merged and merged[-1].kind == "neg" and t.shown in "有要能会" and t.key != "not":
            continue
        merged.append(t)
    return merged


def _date_key(value: str) -> str:
    digits = [int(d) for d in re.findall(r"\d+", value)]
    month = next((n for name, n in _MONTHS.items() if re.search(rf"\b{name}\b", value)), None)
    if "-" in value and len(digits) == 3:
        return f"{digits[1]:02d}-{digits[2]:02d}" if digits[0] == 0 else f"{digits[0]}-{digits[1]:02d}-{digits[2]:02d}"
    if month is None and len(digits) >= 2:  # 2025年5月3日 / 5月3日
        return "-".join(f"{d:02d}" for d in digits[-2:]) if len(digits) == 2 else f"{digits[0]}-{digits[1]:02d}-{digits[2]:02d}"
    day = digits[0] if digits else 0
    year = next((d for d in digits if d > 31), None)
    return f"{year}-{month:02d}-{day:02d}" if year else f"{month or 0:02d}-{day:02d}"


def content_words(text: str) -> list[str]:
    """Return the keys of the tokens that carry the claim (no stop words), in order: what a search is made of."""
    return [t.key for t in tokens(text) if t.kind != "stop"]


_VALUE_KINDS = {"num": "number", "date": "date", "time": "time", "weekday": "weekday", "name": "name"}


def classify(new: str, old: str) -> Verdict:
    """Return how ``new`` compares with ``old`` (both a fact's text); see the module's docstring."""
    if normalise(new) == normalise(old):
        return Verdict("same", "the same words up to case and spacing", 1.0)
    a = [t for t in tokens(new) if t.kind != "stop"]
    b = [t for t in tokens(old) if t.kind != "stop"]
    if not a or not b:
        return Verdict(None, "", 0.0)
    ka, kb = [t.key for t in a], [t.key for t in b]
    if ka == kb:
        return Verdict("same", "the same words up to case, punctuation, stop words and endings", 1.0)
    shared = set(ka) & set(kb)
    if len(shared) * 2 < min(len(set(ka)), len(set(kb))):  # a cheap no before the alignment
        return Verdict(None, "", 0.0)
    matcher = SequenceMatcher(None, ka, kb, autojunk=False)
    ratio = matcher.ratio()
    negated = sum(t.kind == "neg" for t in a) % 2 != sum(t.kind == "neg" for t in b) % 2
    values: list[str] = []
    plain_swaps, plain_extra = 0, 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        left, right = a[i1:i2], b[j1:j2]
        told = _value_change(left, right)
        if told:
            values.append(told)  # and the plain words changed beside it count as wording
            plain_swaps += max(sum(t.kind in ("word", "cjk") for t in left), sum(t.kind in ("word", "cjk") for t in right))
        elif op == "replace":
            plain_swaps += max(len([t for t in left if t.kind != "neg"]), len([t for t in right if t.kind != "neg"]))
        else:
            plain_extra += len([t for t in left + right if t.kind != "neg"])
    plain = plain_swaps + plain_extra
    allowed = max(1, max(len(a), len(b)) // 6)  # wording that may differ around a changed value
    # An update changes one thing (a value, with some wording around it) or two values and nothing else.
    changed = len(values) + (1 if negated else 0)
    if (negated or values) and (plain <= allowed if changed == 1 else plain == 0 and changed == 2) \
            and _frame_ratio(a, b) >= 0.75:
        if negated:
            says = "not" if any(t.kind == "neg" for t in a) else "it does"
            return Verdict("candidate", f"negation: the new one says {says}", ratio)
        return Verdict("candidate", "; ".join(dict.fromkeys(values)), ratio)
    if negated or values:
        return Verdict(None, "", ratio)
    if plain_swaps == 0 and plain_extra <= allowed and ratio >= 0.8:
        # A content word added or left out may change what it says ("the sync" / "the second sync"): the fact
        # is written and the pair named, never dropped as a restatement (only the same words are).
        return Verdict("candidate", "near-equal wording (a word added or left out)", ratio)
    if plain_swaps == 1 and plain_extra == 0 and len(shared) >= 3:
        return Verdict("candidate", f"a differing word: {_swapped(matcher, a, b)}", ratio)
    return Verdict(None, "", ratio)


def _is_cjk(text: str) -> bool:
    return any("\u3400" <= c <= "\u9fff" for c in text)


def _frame_ratio(a: Sequence[Token], b: Sequence[Token]) -> float:
    """How alike the two texts are once their values (numbers, dates, names, negations) are set aside."""
    fa = [t.key for t in a if t.kind in ("word", "cjk")]
    fb = [t.key for t in b if t.kind in ("word", "cjk")]
    if not fa or not fb:
        return 1.0 if not fa and not fb else 0.0
    return SequenceMatcher(None, fa, fb, autojunk=False).ratio()


def _value_change(left: Sequence[Token], right: Sequence[Token]) -> str:
    for kind, label in _VALUE_KINDS.items():
        lv = [t.shown for t in left if t.kind == kind]
        rv = [t.shown for t in right if t.kind == kind]
        if lv or rv:
            if kind == "name" and not (lv and rv):
                continue  # a name added or left out is wording, not a changed value
            return f"{label}: {' '.join(rv) or '-'} -> {' '.join(lv) or '-'}"
    return ""


def _swapped(matcher: SequenceMatcher[str], a: Sequence[Token], b: Sequence[Token]) -> str:
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "replace":
            return f"{''.join(t.shown for t in b[j1:j2]) if _is_cjk(b[j1].shown) else ' '.join(t.shown for t in b[j1:j2])}" \
                   f" -> {''.join(t.shown for t in a[i1:i2]) if _is_cjk(a[i1].shown) else ' '.join(t.shown for t in a[i1:i2])}"
    return "?"
