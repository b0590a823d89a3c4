"""The vault's backlog of look-alike facts: pairs of holding facts that restate or contradict each other (DESIGN §13).

``similar_pairs`` reads every active fact's text through the cache
(``StatementQueries.holding_texts``), groups them by world (repo and branch, as a duplicate's) and
topic, and classifies the pairs that share enough words (am/writes/similar.py ``quick_overlap``, then
``classify``), the newer fact (by its created time) against the older. ``am check`` warns of each
pair (``similar-facts``); ``am review`` lists each as an item of kind ``similar``, decided by:

* ``supersede NEWER`` - the older fact is superseded by the newer, in one commit;
* ``keep-both NEWER`` - both hold: the pair is written to ``.am/kept-similar.txt`` in one commit,
  so no machine asks again (a line ``OLDER NEWER`` with the reviewer and the reason after ``#``).

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from am.errors import UsageError
from am.records.writes import WriteResult, one_line
from am.upkeep.issues import Issue

__all__ = ["KEPT_FILE", "SimilarPair", "keep_both", "kept_pairs", "pair_issues", "pair_of", "similar_pairs",
           "supersede_older"]

KEPT_FILE = PurePosixPath(".am/kept-similar.txt")
_COMMON = 60  # a rough word held by more facts of one group than this does not pair them (too common to tell)


@dataclass(frozen=True)
class SimilarPair:
    """Two holding facts of one world sharing a topic: ``newer`` restates (``same``) or changes (``candidate``)
    ``older``; ``why`` in a few words. Each fact as (id, path, text)."""

    newer: tuple[str, str, str]
    older: tuple[str, str, str]
    kind: str
    why: str
    ordered: bool = True  # False: both were created in the same second, so which is newer is not known

    def describe(self) -> str:
        word = "restates" if self.kind == "same" else "may update or contradict"
        return (f"{self.newer[0]} {word} {self.older[0]} ({self.why}): {self.newer[2]!r} / {self.older[2]!r}; "
                f"decide: am review supersede {self.newer[0]} (the older ends) or am review keep-both {self.newer[0]}")


def kept_pairs(root: Any) -> set[frozenset[str]]:
    """Return the pairs a review decided to keep both of (``.am/kept-similar.txt``)."""
    try:
        text = (root / KEPT_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        return set()
    kept = set()
    for line in text.splitlines():
        ids = line.split("#", 1)[0].split()
        if len(ids) == 2:
            kept.add(frozenset(ids))
    return kept


def similar_pairs(vault: Any) -> list[SimilarPair]:
    """Return the vault's pairs of look-alike holding facts not kept by a review, newer fact's id first."""
    from am.writes.similar import classify, rough, rough_alike

    index = vault.cache()
    if index is None:
        return []
    rows = index.holding_texts(("active",))  # a contested pair has its own review item
    kept = kept_pairs(vault.root)
    groups: dict[tuple[str, str, str], list[int]] = {}
    for n, (_p, _i, repo, version, topics, _b, _c) in enumerate(rows):
        for topic in json.loads(topics):
            groups.setdefault((repo, version, topic), []).append(n)
    roughs: dict[int, set[str]] = {}
    seen: set[tuple[int, int]] = set()
    found: list[SimilarPair] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        posting: dict[str, list[int]] = {}
        for n in members:  # ascending id: each fact meets the older ones before it
            words = roughs.get(n)
            if words is None:
                words = roughs[n] = rough(rows[n][5])
            shared: dict[int, int] = {}
            for w in words:
                for m in posting.get(w, ()):
                    shared[m] = shared.get(m, 0) + 1
            for m, count in shared.items():
                if rough_alike(words, roughs[m], count) and (m, n) not in seen:
                    seen.add((m, n))
                    if frozenset((rows[m][1], rows[n][1])) in kept or rows[m][1] == rows[n][1]:
                        continue
                    verdict = classify(rows[n][5], rows[m][5])
                    if verdict.kind is not None:
                        found.append(SimilarPair(_one(rows[n]), _one(rows[m]), verdict.kind, verdict.why,
                                                 ordered=rows[n][6] != rows[m][6] or not rows[n][6]))
            for w in words:
                bucket = posting.setdefault(w, [])
                if len(bucket) <= _COMMON:
                    bucket.append(n)
    found.sort(key=lambda p: (p.newer[0], p.older[0]))
    return found


def pair_issues(vault: Any) -> list[Issue]:
    """Return ``am check``'s warnings: one a look-alike pair, on the newer fact's file."""
    return [Issue("warning", "similar-facts", pair.newer[1], pair.describe()) for pair in similar_pairs(vault)]


def _one(row: tuple[str, str, str, str, str, str, str]) -> tuple[str, str, str]:
    return row[1], row[0], " ".join(row[5].split())


def pair_of(vault: Any, newer_id: str) -> SimilarPair | None:
    """Return the first look-alike pair whose newer fact is ``newer_id``, or None."""
    return next((p for p in similar_pairs(vault) if p.newer[0] == newer_id), None)


def supersede_older(vault: Any, pair: SimilarPair, *, reason: str | None) -> WriteResult:
    """Supersede the pair's older fact by its newer one: one commit touching the two files (no new fact)."""
    if not pair.ordered:
        raise UsageError(f"{pair.newer[0]} and {pair.older[0]} were created in the same second, so am cannot tell "
                         "which is newer", hint=f"say which ends: am fact supersede {pair.older[0]} TEXT --reason ... "
                         f"(or the other way round); nothing was written")
    newer = vault.get_fact(pair.newer[0])
    result: WriteResult = vault.supersede_fact(pair.older[0], newer.body, topics=list(newer.topics),
                                               reason=reason or f"superseded in review by {newer.id} ({pair.why})")
    return replace(result, created=True, note=None)  # the newer fact was there: it now supersedes the older


def keep_both(vault: Any, pair: SimilarPair, *, reason: str | None) -> str:
    """Record that both facts of a pair hold, in ``.am/kept-similar.txt``, in one commit; return the commit."""
    from am.git import Change

    writer, store = vault.writer, vault.store
    older, newer = pair.older[0], pair.newer[0]
    if frozenset((older, newer)) in kept_pairs(vault.root):
        raise UsageError(f"{older} and {newer} are already kept both", hint="nothing to do")
    writer.check_writable(())
    path = vault.root / KEPT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ("# Pairs of similar facts a review kept both of (am review keep-both): am check and am review do "
                "not ask again.\n")
    line = f"{older} {newer}  # {one_line(reason or 'both hold')} (by {vault.actor})\n"
    new = (text if text.endswith("\n") else text + "\n") + line
    message = writer.authorship.message("review", "keep-both", [older, newer], reason=reason,
                                        subject=f"review: keep both {older} and {newer} (by {vault.actor})")
    with store.write_lock(op="review.keep-both"):
        commit: str = store.commit([Change(KEPT_FILE, new.encode("utf-8"), base=store.blob_id(KEPT_FILE))],
                                   message=message, author=writer.authorship.author())
    return commit
