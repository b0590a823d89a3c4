"""Make Chinese, Japanese and Korean text searchable with SQLite FTS5.

FTS5's ``unicode61`` tokenizer keeps a whole run of CJK characters as one token,
so "限流" is not found inside "没有限流。"; the ``trigram`` tokenizer cannot find
two-character words at all. Instead the index keeps an extra column of segmented
text and queries are rewritten to match it:

- ``segment_for_index(text)`` writes each maximal run of CJK characters as its
  overlapping bigrams followed by the run's last character alone
  ("没有限流" -> "没有 有限 限流 流"), and every other word lower-cased and, if
  it is a word of English letters, as its stem (am/cache/stems.py: "hooks" ->
  "hook"), so ``unicode61`` sees each bigram, character and word as one token.
- ``build_match(query)`` writes a CJK run as a phrase of its bigrams
  ("限流策略" -> ``"限流 流策 策略"``): a phrase matches only consecutive tokens,
  so it finds the contiguous text and nothing assembled from elsewhere. A
  single CJK character becomes a prefix query (``"限"*``) on the tokens that
  start with it.

The trailing single character of each run does two jobs: it separates two runs
that punctuation divides ("分支，支主" must not match "分支主", which it would if
the bigrams 分支 and 支主 were adjacent tokens), and it lets a one-character
query find the last character of a run.

The column's table must use ``tokenize = "unicode61 remove_diacritics 2"``, e.g.::

    CREATE VIRTUAL TABLE search USING fts5(
        id UNINDEXED, body, tokenize = "unicode61 remove_diacritics 2");
    INSERT INTO search(id, body) VALUES (?, segment_for_index(title + "\n" + text));
    SELECT id FROM search WHERE search MATCH build_match(query) ORDER BY rank;

Japanese mixes kanji, hiragana and katakana in one run ("先週のデプロイで障害"),
so all of them form one run: bigrams then span the script changes and a query
for "デプロイ" or "障害" is a phrase of bigrams found inside that run. Both sides
are NFKC-normalised first, so full-width Latin and half-width katakana match
their ordinary forms.

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

__all__ = ["segment_for_index", "build_match", "id_prefix_terms"]

# Han (with 々 〆 〇 and the Hangzhou numerals), kana and Hangul. Only letters
# and numbers among them count (isalnum below), so 。「」・ stay separators.
_CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3038, 0x303C),
    (0x3040, 0x30FF),  # Hiragana, Katakana (with ー)
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width katakana (NFKC folds them, kept for safety)
    (0x1B000, 0x1B16F),  # kana supplement and extended
    (0x20000, 0x323AF),  # CJK extensions B..H and compatibility supplement
)


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return char.isalnum() and any(low <= code <= high for low, high in _CJK_RANGES)


def _runs(text: str) -> Iterator[tuple[bool, str]]:
    """Yield (is_cjk, run) for each maximal run of CJK or of other word characters."""
    normal = unicodedata.normalize("NFKC", text)
    start = 0
    kind: bool | None = None  # None: in a separator
    for index, char in enumerate(normal):
        # Python's isalnum (letters and numbers) matches what unicode61 keeps
        # as token characters, so a word here is a word for FTS5 too.
        now = _is_cjk(char) if char.isalnum() else None
        if now != kind:
            if kind is not None:
                yield kind, normal[start:index]
            start, kind = index, now
    if kind is not None:
        yield kind, normal[start:]


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def segment_for_index(text: str) -> str:
    """Rewrite text for the FTS5 column: words lower-cased, CJK runs as bigrams plus last char."""
    tokens: list[str] = []
    for is_cjk, run in _runs(text):
        if is_cjk:
            tokens += _bigrams(run) + [run[-1]]
        else:
            from am.cache.stems import stem

            tokens.append(stem(run.lower()))
    return " ".join(tokens)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def build_match(query: str) -> str | None:
    """Turn a user's query into an FTS5 MATCH expression for the segmented column, or None."""
    terms: list[str] = []
    for is_cjk, run in _runs(query):
        if not is_cjk:
            from am.cache.stems import stem

            term = _quote(stem(run.lower()))
        elif len(run) == 1:
            term = _quote(run) + "*"
        else:
            term = _quote(" ".join(_bigrams(run)))
        if term not in terms:
            terms.append(term)
    return " AND ".join(terms) if terms else None


# Ids are lower-case ASCII letters, digits and '-' (DESIGN §3); a term that
# holds a '-' between such characters is worth a LIKE 'prefix%' on the id.
_ID_PREFIX = re.compile(r"(?<![0-9A-Za-z_-])[0-9A-Za-z]+-[0-9A-Za-z-]*(?![0-9A-Za-z_])")


def id_prefix_terms(query: str) -> list[str]:
    """Return the query's terms that look like record ids or id prefixes, lower-cased."""
    terms: list[str] = []
    for match in _ID_PREFIX.finditer(query):
        term = match.group(0).lower()
        if term not in terms:
            terms.append(term)
    return terms
