"""What a credential's value looks like, as against a stand-in, a sample or prose; pure.

The judgements the secret scanner (am/records/secrets.py) makes of a value it
has found: a placeholder (``changeme``, ``<token>``, ``${API_KEY}``), how random
a token's characters are. Apart so that the scanner's families fit one module.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["char_classes", "entropy", "is_placeholder", "looks_random"]

_PLACEHOLDER_WORDS = (
    "xxx",
    "***",
    "...",
    "…",
    "changeme",
    "change_me",
    "change-me",
    "example",
    "placeholder",
    "your",
    "dummy",
    "sample",
    "redacted",
    "replace",
    "insert",
    "todo",
    "fixme",
    "foobar",
    "lorem",
)
_PLACEHOLDER_VALUES = frozenset(
    {
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "empty",
        "string",
        "str",
        "bytes",
        "required",
        "optional",
        "secret",
        "password",
        "passwd",
        "token",
        "hidden",
        "masked",
        "unset",
        "not-set",
        "notset",
        "n/a",
        "test",
        "testing",
        "admin",
        "root",
        "guest",
        "postgres",
        "mysql",
        "default",
    }
)
_TEMPLATE = re.compile(
    r"""
      <[^<>]*>                    # <token>, <your key>
    | \{\{.*\}\}                  # {{ vault_token }}
    | \$\{[^}]*\}                 # ${API_KEY}
    | \$\(?[A-Za-z_][A-Za-z0-9_]*\)?  # $API_KEY, $(TOKEN)
    | %[A-Za-z_][A-Za-z0-9_]*%    # %API_KEY%
    | \{[A-Za-z_][A-Za-z0-9_]*\}  # {api_key}
    | \[[A-Za-z_ -]*\]            # [token]
    """,
    re.VERBOSE,
)
_SEQUENCES = "0123456789abcdefghijklmnopqrstuvwxyz"


def is_placeholder(value: str) -> bool:
    """Tell whether a value is a stand-in for a secret rather than a secret."""
    lowered = value.lower()
    if not lowered or lowered in _PLACEHOLDER_VALUES:
        return True
    if _TEMPLATE.fullmatch(value):
        return True
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return True
    if len(set(lowered)) <= 3:  # aaaaaaaa, 00000000, abababab
        return True
    return lowered in _SEQUENCES or lowered in _SEQUENCES[::-1]


def entropy(value: str) -> float:
    """Return the Shannon entropy of a string in bits per character."""
    length = len(value)
    return -sum(n / length * math.log2(n / length) for n in Counter(value).values())


def char_classes(value: str) -> int:
    """Count how many of lower case, upper case and digits a value uses."""
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
    )


def looks_random(body: str, *, min_entropy: float = 3.0) -> bool:
    """Tell whether the variable part of a token looks generated, not typed."""
    return (
        not is_placeholder(body)
        and char_classes(body) >= 2
        and entropy(body) >= min_entropy
    )
