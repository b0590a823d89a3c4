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

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
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
    """Return the vault's pairs of look-alike holding facts not kept by a review, newer fact's id first.

    Each group's pairs (world and topic) are kept in ``<gitdir>/am/similar-memo`` by a hash of its facts'
    ids, times and texts: a check after one fact changed classifies that fact's groups only.
    """
    index = vault.cache()
    if index is None:
        return []
    rows = index.holding_texts(("active",))  # a contested pair has its own review item
    kept = kept_pairs(vault.root)
    groups: dict[tuple[str, str, str], list[int]] = {}
    for n, (_p, _i, repo, version, topics, _b, _c) in enumerate(rows):
        for topic in json.loads(topics):
            groups.setdefault((repo, version, topic), []).append(n)
    memo_file = Path(vault.store.gitdir) / "am" / _MEMO
    old = _read_memo(memo_file)
    new: dict[str, list[list[str]]] = {}
    by_id = {row[1]: row for row in rows}
    seen: set[tuple[str, str]] = set()
    found: list[SimilarPair] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        key = _group_key([rows[n] for n in members])
        pairs = old.get(key)
        if pairs is None:
            pairs = _group_pairs([rows[n] for n in members])
        new[key] = pairs
        for newer, older, kind, why in pairs:
            if (newer, older) in seen or frozenset((newer, older)) in kept:
                continue
            seen.add((newer, older))
            a, b = by_id[newer], by_id[older]
            found.append(SimilarPair(_one(a), _one(b), kind, why, ordered=a[6] != b[6] or not a[6]))
    if new.keys() != old.keys():
        _write_memo(memo_file, new)
    found.sort(key=lambda p: (p.newer[0], p.older[0]))
    return found


_MEMO = "similar-memo"  # under <gitdir>/am/: derived, deleting it changes no output
_MEMO_VERSION = "1"  # raised when the classifier's verdicts change


def _group_key(rows: list[tuple[str, str, str, str, str, str, str]]) -> str:
    digest = hashlib.blake2b(_MEMO_VERSION.encode(), digest_size=16)
    for row in rows:
        digest.update(f"{row[1]}\x00{row[6]}\x00{row[5]}\x01".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _group_pairs(rows: list[tuple[str, str, str, str, str, str, str]]) -> list[list[str]]:
    """Return [newer id, older id, kind, why] of a group's look-alike pairs (rows oldest first)."""
    from am.writes.similar import classify, rough, rough_alike

    words_of = [rough(row[5]) for row in rows]
    posting: dict[str, list[int]] = {}
    out: list[list[str]] = []
    for n, words in enumerate(words_of):  # each fact meets the older ones before it
        shared: dict[int, int] = {}
        for w in words:
            for m in posting.get(w, ()):
                shared[m] = shared.get(m, 0) + 1
        for m, count in shared.items():
            if rough_alike(words, words_of[m], count) and rows[m][1] != rows[n][1]:
                verdict = classify(rows[n][5], rows[m][5])
                if verdict.kind is not None:
                    out.append([rows[n][1], rows[m][1], verdict.kind, verdict.why])
        for w in words:
            bucket = posting.setdefault(w, [])
            if len(bucket) <= _COMMON:
                bucket.append(n)
    return out


def _read_memo(file: Path) -> dict[str, list[list[str]]]:
    try:
        data = json.loads(file.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()) else {}


def _write_memo(file: Path, memo: dict[str, list[list[str]]]) -> None:
    temp = file.with_name(f"{file.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        temp.write_bytes(json.dumps(memo, ensure_ascii=True, separators=(",", ":")).encode("ascii"))
        os.replace(temp, file)
    except OSError:  # derived data: the next check computes it again
        with contextlib.suppress(OSError):
            temp.unlink()


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
