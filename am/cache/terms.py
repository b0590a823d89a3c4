"""The words of a query as forgiving search looks for them: English stems without stop words, CJK units.

The full-text column (am/cache/rows.py ``segment``) stores every English word as
its Snowball English stem ("hooks", "hooked" -> ``hook``), so a query finds a
word in any of its forms. A query is analysed into **units**, each of which a
record either matches or not ("matched 2 of 3 terms"):

- an English word that is not a stop word ("how", "do", "the" ...) is one unit,
  its stem; when every word is a stop word (English, Chinese or Japanese: "the",
  "怎么", "について") they are all kept;
- a run of Chinese or Japanese text is cut at stop words (的, 怎么, 什么 ...) and,
  for Japanese, at hiragana (particles and endings: で, が, について); each
  remaining piece is read as words of two characters ("限流策略" -> 限流, 策略; a
  piece of three, or the last three of an odd piece, is one word) and each word
  is one unit, found as the phrase of its bigrams. A piece of one character is
  dropped when other units remain.

Three FTS5 expressions come out of one analysis: ``phrase`` (all units in
order, adjacent), ``every`` (all units, anywhere: the old AND search) and
``any`` (any unit, or any bigram of a CJK piece: ranked by BM25, so a record
with more and rarer terms ranks higher). am/cache/query.py ranks phrase
matches first, then all-terms matches, then the rest by how many units they
match.

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from am.cache.stems import STEMMER, stem
from am.cache.textseg import _is_cjk, _runs

__all__ = ["STEMMER", "Unit", "QueryTerms", "analyse", "stem", "is_stop_word"]


# The Snowball project's English stop words, with question words agents type ("can", "tell").
_EN_STOP = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
herself it its itself they them their theirs themselves what which who whom this that these those am is are
was were be been being have has had having do does did doing would should could ought im youre hes shes its
were theyre ive youve weve theyve id youd hed shed wed theyd ill youll hell shell well theyll isnt arent
wasnt werent hasnt havent hadnt doesnt dont didnt wont wouldnt shant shouldnt cant cannot couldnt mustnt
lets thats whos whats heres theres whens wheres whys hows a an the and but if or because as until while of
at by for with about against between into through during before after above below to from up down in out
on off over under again further then once here there when where why how all any both each few more most
other some such no nor not only own same so than too very can will just tell please know s t d ll m o re
ve y
""".split())

# Chinese and Japanese words that carry no subject: question words, pronouns, particles. Cut out of a
# query's CJK runs (longest first), never out of the index.
_CJK_STOP = sorted("""
为什么 怎么样 有没有 是不是 能不能 可不可以 什么 怎么 怎样 如何 为何 是否 哪些 哪个 哪里 哪儿 可以 我们 你们
他们 一下 一些 这个 那个 这些 那些 关于 请问 告诉 知道 应该 需要 多少 时候 的 了 吗 呢 吧 啊 呀 嘛 么 是
我 你 请 和 与 及 或 在 有 没 把 被 给 对 从 向 都 也 就 还 又 这 那 哪 谁 几 个 吗
何 どう どの どこ いつ なぜ なに 何故 について
""".split(), key=len, reverse=True)
_CJK_STOP_RE: list[re.Pattern[str]] = []


@dataclass(frozen=True)
class Unit:
    """One term of a query: what a person typed, and how the index is asked for it."""

    text: str          # as typed (a word, or a CJK word)
    match: str         # FTS5 expression: a quoted stem, or a phrase of bigrams
    bigrams: tuple[str, ...] = ()  # for CJK: its bigrams (each may match alone in the 'any' level)


@dataclass(frozen=True)
class QueryTerms:
    """A query's units and the three FTS5 expressions built from them."""

    units: tuple[Unit, ...]
    dropped: tuple[str, ...]  # stop words left out
    phrase: str | None        # every unit in order, adjacent (None with fewer than two units)
    every: str | None         # every unit, anywhere
    any: str | None           # any unit or bigram

    @property
    def size(self) -> int:
        """Return the number of units (M in "matched N of M terms")."""
        return len(self.units)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _is_hiragana(char: str) -> bool:
    return "\u3040" <= char <= "\u309f"


def _cjk_pieces(run: str) -> tuple[list[str], list[str]]:
    """Cut a CJK run at stop words and at hiragana; return the pieces and what was cut out."""
    if not _CJK_STOP_RE:
        _CJK_STOP_RE.append(re.compile("|".join(map(re.escape, _CJK_STOP))))
    dropped: list[str] = []

    def cut(m: re.Match[str]) -> str:
        dropped.append(m.group(0))
        return " "

    text = _CJK_STOP_RE[0].sub(cut, run)
    # Hiragana among kanji or katakana is grammar (particles, endings); a run of only hiragana stays.
    if any(not _is_hiragana(c) for c in text if c != " "):
        kept = []
        for char in text:
            if _is_hiragana(char):
                dropped.append(char)
                kept.append(" ")
            else:
                kept.append(char)
        text = "".join(kept)
    return text.split(), dropped


_KATAKANA = re.compile("([\u30a0-\u30ff\u31f0-\u31ff]+)")


def _words_of(piece: str) -> list[str]:
    """Read a CJK piece as words: a katakana run is one word, other text two characters a word
    (the last of an odd stretch takes three)."""
    words: list[str] = []
    for part in _KATAKANA.split(piece):
        if not part:
            continue
        if len(part) <= 3 or _KATAKANA.fullmatch(part):
            words.append(part)
            continue
        pairs = [part[i:i + 2] for i in range(0, len(part) - 1, 2)]
        if len(part) % 2:
            pairs[-1] += part[-1]
        words += pairs
    return words


def _bigrams(text: str) -> tuple[str, ...]:
    return tuple(text[i:i + 2] for i in range(len(text) - 1))


def _cjk_unit(word: str) -> Unit:
    if len(word) == 1:
        return Unit(word, _quote(word) + "*")
    grams = _bigrams(word)
    return Unit(word, _quote(" ".join(grams)), grams)


@lru_cache(maxsize=256)
def analyse(query: str) -> QueryTerms:
    """Split a query into units (stems, CJK words) and build the phrase, all-terms and any-term expressions.

    Pure, and its answer is immutable: remembered for the last queries (one search analyses its text
    three times: the hits, the ranking levels, the notes).
    """
    units: list[Unit] = []
    stops: list[Unit] = []
    dropped: list[str] = []
    pieces: list[str] = []
    for is_cjk, run in _runs(query):
        if is_cjk:
            found, cut = _cjk_pieces(run)
            dropped += cut
            stops += [_cjk_unit(w) for w in cut]  # searched after all when the query has nothing else
            pieces += found
            for piece in found:
                units += [_cjk_unit(w) for w in _words_of(piece)]
            continue
        word = run.lower()
        unit = Unit(run, _quote(stem(word)))
        if word in _EN_STOP or (word.isdigit() and len(word) == 1):
            stops.append(unit)
            dropped.append(run)
        else:
            units.append(unit)
    if not units:
        units, dropped = stops, []
    if any(len(u.text) > 1 or not _is_cjk(u.text) for u in units):
        lone = [u for u in units if len(u.text) == 1 and _is_cjk(u.text)]
        dropped += [u.text for u in lone]
        units = [u for u in units if u not in lone]
    units = list(dict.fromkeys(units))
    if not units:
        return QueryTerms((), tuple(dropped), None, None, None)
    tokens: list[str] = []
    for u in units:
        tokens += list(u.bigrams) if u.bigrams else [u.match.strip('"*')] if not u.match.endswith("*") else []
    phrase = _quote(" ".join(tokens)) if len(units) > 1 and all(not u.match.endswith("*") for u in units) else None
    every = " AND ".join(u.match for u in units)
    alternatives: list[str] = []
    for u in units:
        alternatives.append(u.match)
        if not u.bigrams and u.match.endswith('"') and len(u.match) >= 6 and u.text.isascii():
            alternatives.append(u.match + "*")  # "config" finds "configuration" (stem "configur")
        alternatives += [_quote(g) for g in u.bigrams if len(u.bigrams) > 1]
    for piece in pieces:  # bigrams across the words of a piece ("限流策略": 流策) still count as evidence
        alternatives += [_quote(g) for g in _bigrams(piece)]
    any_ = " OR ".join(dict.fromkeys(alternatives))
    return QueryTerms(tuple(units), tuple(dropped), phrase, every, any_)


def is_stop_word(word: str) -> bool:
    """Return whether an English word is left out of queries (when other words remain)."""
    return word.lower() in _EN_STOP
