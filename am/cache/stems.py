"""English stems as the full-text column stores them: Snowball's English stemmer, loaded alone, and a memo.

The full-text column (am/cache/rows.py) and a query's words (am/cache/terms.py,
am/cache/textseg.py) are stemmed by the same ``stem``, so "hooks" finds "hooked".

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import unicodedata

__all__ = ["STEMMER", "stem"]


_STEMS: dict[str, str] = {}
_STEMMER: list[object] = []


def _engine() -> object:
    if not _STEMMER:
        _STEMMER.append(_load_english()())
    return _STEMMER[0]


def _load_english() -> type:
    """Return snowballstemmer's pure-Python English stemmer class, without importing its other 30 languages.

    ``import snowballstemmer`` runs a package ``__init__`` that imports every language (~0.1-0.3 s,
    which every write would pay when the cache segments its text). The English module needs only
    two siblings, so it is loaded under a private package name pointing at the same folder; the
    real ``snowballstemmer`` module is left alone. Not ``snowballstemmer.stemmer()`` either, which
    swaps in PyStemmer when installed: the cache stores stems, so they must not depend on that.
    """
    import importlib
    import importlib.util
    import sys
    import types

    name = "_am_snowballstemmer"
    if name not in sys.modules:
        spec = importlib.util.find_spec("snowballstemmer")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("snowballstemmer is not installed (pip install 'snowballstemmer>=2.2')")
        package = types.ModuleType(name)
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules[name] = package
    module = importlib.import_module(f"{name}.english_stemmer")
    return module.EnglishStemmer  # type: ignore[no-any-return]


def stem(word: str) -> str:
    """Return the English stem of a lower-case word of Latin letters (accents folded); any other word unchanged."""
    found = _STEMS.get(word)
    if found is None:
        base = word
        if not word.isascii():
            # As FTS5's remove_diacritics folds them: "résumé" is stemmed as "resume".
            folded = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
            base = folded if folded.isascii() else word
        if base.isascii() and base.isalpha() and len(base) > 2:
            found = _engine().stemWord(base)  # type: ignore[attr-defined]
        else:
            found = word
        if len(_STEMS) < 500_000:
            _STEMS[word] = found
    return found


STEMMER = "snowball-english"
