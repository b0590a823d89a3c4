"""Names that look alike (Unicode TS #39): a new name may not pass for another record's. Pure, no I/O.

Links are typed, and a keyboard picks the letters: ``[[dеploy]]`` with a
Cyrillic е (U+0435) and ``[[deploy]]`` look the same and reach different
records. Two rules, after Unicode Technical Standard #39 (Unicode Security
Mechanisms), keep a new name from passing for another:

- **Looks** (§4, confusable detection). A name's looks are its skeletons, made
  the TS #39 way from the Unicode confusables data (which the
  ``confusable-homoglyphs`` package ships): the name is taken apart (NFKD, so a
  fullwidth ｄ is a d), every character outside ASCII that the data says looks
  like ASCII text is replaced by that text (Cyrillic е -> e, Greek ν -> v,
  ﬁ -> fi), and the result is case-folded; once as written and once in
  capitals (Cyrillic в looks like b only as В). Two different names
  (``name_key``) that share a look are look-alikes. ASCII characters stay as
  they are: TS #39's skeletons also equate ``rn`` and ``m``, ``cl`` and ``d``,
  ``1`` and ``l``, which would refuse a topic ``done`` next to ``clone``.
- **Mixed scripts** (§5.2, the "highly restrictive" level). A word (a run of
  letters, marks and digits) is one script, or Latin with Han and
  Hiragana/Katakana (Japanese), Bopomofo (Chinese) or Hangul (Korean); Common
  and Inherited characters (digits, punctuation, combining marks) go with any.
  ``dеploy`` mixes Latin and Cyrillic in one word; ``Redis кластер`` (two
  words), ``деплой`` and ``東京タワー`` do not.

Both are for new names only (am/writes/forms.py ``check_names_free``): a
record that already has such a name is read as ever, and ``am check`` warns
about look-alike pairs already in a vault (``lookalike_pairs``).

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable

__all__ = ["foreign_letters", "looks", "lookalike_pairs", "mixed_script_word", "spelled"]

_IGNORED = frozenset({"COMMON", "INHERITED", "Unknown"})
_ALLOWED = (frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}), frozenset({"LATIN", "HAN", "BOPOMOFO"}),
            frozenset({"LATIN", "HAN", "HANGUL"}))


def _strip(name: str) -> str:
    text = name.strip()
    return text[:-3] if text.lower().endswith(".md") else text


@functools.lru_cache(maxsize=4096)
def _ascii_of(char: str) -> str:
    """Return the ASCII text a character outside ASCII looks like, per the confusables data, or the character."""
    from confusable_homoglyphs import confusables  # type: ignore[import-untyped]

    found = confusables.is_confusable(char, greedy=True)
    for entry in found or ():
        for glyph in entry["homoglyphs"]:
            if glyph["c"].isascii() and glyph["c"].isprintable():
                return str(glyph["c"])
    return char


def _look(text: str) -> str:
    parts = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize("NFC", "".join(c if c.isascii() else _ascii_of(c) for c in parts)).casefold()


@functools.lru_cache(maxsize=8192)
def looks(name: str) -> frozenset[str]:
    """Return a name's looks (see the module's doc); an ASCII name's only look is its key."""
    text = _strip(name)
    if text.isascii():
        return frozenset({text.casefold()})
    return frozenset({_look(text), _look(text.upper())})


def _script(char: str) -> str:
    from confusable_homoglyphs import categories

    return str(categories.alias(char))


def mixed_script_word(name: str) -> tuple[str, tuple[str, ...]] | None:
    """Return the first word of ``name`` that mixes scripts TS #39 keeps apart, and its scripts; else None."""
    text = _strip(name)
    if text.isascii():
        return None
    word: list[str] = []
    for char in [*text, " "]:
        if unicodedata.category(char)[0] in "LMN":
            word.append(char)
            continue
        scripts = {_script(c) for c in word} - _IGNORED
        if len(scripts) > 1 and not any(scripts <= allowed for allowed in _ALLOWED):
            return "".join(word), tuple(sorted(scripts))
        word = []
    return None


def foreign_letters(word: str) -> str:
    """Return the letters of ``word`` outside its main script (the one most of its letters are in), named."""
    from collections import Counter

    scripts = Counter(_script(c) for c in word if _script(c) not in _IGNORED)
    main = max(sorted(scripts), key=lambda s: scripts[s], default="")
    named = dict.fromkeys(f"{c} U+{ord(c):04X} {unicodedata.name(c, '')}".rstrip() for c in word
                          if _script(c) not in _IGNORED and _script(c) != main)
    return ", ".join(named)


def spelled(name: str) -> str:
    """Return, for a message, the letters of ``name`` outside ASCII by code point: " (е U+0435 ...)", " (all ASCII)"."""
    odd = dict.fromkeys(f"{c} U+{ord(c):04X} {unicodedata.name(c, '')}".rstrip() for c in name if not c.isascii())
    return f" ({', '.join(odd)})" if odd else " (all ASCII)"


def lookalike_pairs(names: Iterable[tuple[str, str]]) -> list[tuple[str, str, str, str]]:
    """Return (name, owner, other name, other owner) for names of different owners that look alike.

    ``names``: (name, owner) pairs, an owner being a record's id or path. Each
    pair is given once, the later name (in the order given) first; names of
    one owner never pair with each other. Only names outside ASCII, and the
    ASCII names they look like, are looked at (an ASCII vault costs one pass).
    """
    from am.records.names import name_key

    given = [(name, owner, name_key(name)) for name, owner in names]
    foreign = [looks(name) for name, _, key in given if key and not key.isascii()]
    if not foreign:
        return []
    wanted = frozenset().union(*foreign)
    by_look: dict[str, list[tuple[str, str, str]]] = {}
    pairs: list[tuple[str, str, str, str]] = []
    seen: set[frozenset[tuple[str, str]]] = set()
    for name, owner, key in given:
        if not key or (key.isascii() and key not in wanted):
            continue
        for look in sorted(looks(name)):
            for other_key, other, other_owner in by_look.get(look, ()):
                pair = frozenset({(key, owner), (other_key, other_owner)})
                if other_owner != owner and other_key != key and pair not in seen:
                    seen.add(pair)
                    pairs.append((name, owner, other, other_owner))
            by_look.setdefault(look, []).append((key, name, owner))
    return pairs
