"""A first confidence read from a fact's words, when the writer gives none (an optional default).

SuperMemory weighs a memory by what it says; am keeps "medium" as its default and offers
the same idea as a vault setting (``confidence: auto`` in ``.am/vault.yml``) or a flag
(``--confidence auto``). The rules, in order, on the text as written:

1. **low**: the writer hedges: "maybe", "might", "probably", "I think", "not sure",
   "seems", "possibly", "unconfirmed", "TBD", "?" ending the statement; 可能, 也许, 好像,
   似乎, 大概, 不确定, 待确认, 据说; たぶん, かもしれ.
2. **high**: the writer states it as a rule or a checked fact: "must", "always",
   "never", "is required", "verified", "confirmed", "measured"; 必须, 一定, 总是, 从不,
   禁止, 已确认, 已验证, 实测; or it names something exact: a number with a unit, a
   version, a path or an identifier in backticks.
3. **medium** otherwise.

Hedges win over certainty ("it must be 50, I think" is low). The rule that decided is
returned with the level, so a write can say why.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

import re

__all__ = ["guess_confidence"]

_HEDGE = re.compile(
    r"\b(maybe|might|probably|perhaps|possibly|i think|i believe|not sure|unsure|seems?|apparently|unconfirmed|"
    r"tbd|guess)\b|可能|也许|好像|似乎|大概|不确定|待确认|据说|估计|たぶん|かもしれ|らしい",
    re.IGNORECASE)
_SURE = re.compile(
    r"\b(must|always|never|is required|are required|verified|confirmed|measured|guaranteed)\b|"
    r"必须|一定|总是|从不|禁止|已确认|已验证|实测|確認済み|必ず",
    re.IGNORECASE)
_EXACT = re.compile(
    r"`[^`\n]+`|\b\d+(\.\d+)?\s?(ms|s|seconds?|minutes?|hours?|days?|%|mb|gb|kb|rps|qps|req/s)\b|"
    r"\bv?\d+\.\d+(\.\d+)?\b|(\w+/)+\w+\.\w+|\d+\s?(次|秒|分钟|小时|天|毫秒)",
    re.IGNORECASE)


def guess_confidence(text: str) -> tuple[str, str]:
    """Return (high|medium|low, the rule that decided) for a statement's words."""
    flat = " ".join(text.split())
    if (m := _HEDGE.search(flat)) or flat.rstrip().endswith(("?", "？")):
        return "low", f"hedged ({m.group(0) if m else 'a question'})"
    if m := _SURE.search(flat):
        return "high", f"stated as certain ({m.group(0)})"
    if m := _EXACT.search(flat):
        return "high", f"names something exact ({m.group(0)})"
    return "medium", "no hedge and nothing exact"
