"""A fact add compared with the holding facts it looks like: a restatement answered, a change named (docs/decisions/writes.md#a-fact-like-a-holding-one-is-said-at-write-time-similar).

After the exact-duplicate check (am/writes/duplicates.py) and under the same lock, ``look`` reads
through the cache the facts that hold in the draft's world (repo and branch, as a duplicate's) and
share one of its topics (``StatementQueries.facts_near``), and classifies each against the draft
(am/writes/similar.py). The policy is the draft's ``if_similar``, else the vault's ``similar:``
(``.am/vault.yml``), else ``warn``:

- ``allow``: nothing is looked at (today's exact-duplicate rule only);
- ``warn``: a restatement writes nothing and answers the holding fact (``created`` False); a
  candidate update or contradiction is written and answered with ``similar``;
- ``refuse``: a restatement as under warn; a candidate is refused (CollisionError), nothing written.

Without a usable cache nothing is compared (the exact-duplicate check still reads every file).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from am.errors import CollisionError, UsageError
from am.records.writes import SIMILAR_POLICIES, FactDraft, Similar

if TYPE_CHECKING:
    from am.cache.recordfiles import RecordFiles

__all__ = ["look", "policy", "refusal", "similar_to"]

_SHOWN = 3  # the closest facts named in an answer
_CLASSIFIED = 5  # the facts classified at most, the closest by rough words first


def policy(files: RecordFiles, draft: FactDraft) -> str:
    """Return the similar-fact policy of a write: the draft's, else the vault's, else warn."""
    chosen = draft.if_similar
    if chosen is not None:
        if chosen not in SIMILAR_POLICIES:
            raise UsageError(f"--if-similar {chosen!r} is not a policy", hint=f"use one of: {', '.join(SIMILAR_POLICIES)}")
        return chosen
    value = files.settings.get("similar", "warn")
    if value not in SIMILAR_POLICIES:
        raise UsageError(f".am/vault.yml: similar: {value!r} is not a policy",
                         hint=f"set similar: to one of {', '.join(SIMILAR_POLICIES)} (default warn); nothing was written")
    return str(value)


def similar_to(files: RecordFiles, text: str, topics: Sequence[str], repo: str | None, branch: str | None, *,
               besides: Sequence[str] = ()) -> list[Similar]:
    """Return the holding facts of this world sharing a topic that ``text`` restates or changes, closest first.

    Restatements first, then candidates; each with the command and tool call that supersede it by
    a fact saying ``text`` (the write already made it: supersede links the two, no twin).
    """
    from am.writes.duplicates import HOLDING
    from am.writes.similar import classify, rough_score

    cache = files.cache()
    if cache is None or not text.strip():
        return []
    near = [(score, fid, body) for fid, body in cache.facts_near(text, tuple(topics), repo, branch, HOLDING)
            if fid not in besides and (score := rough_score(text, body)) > 0]
    near.sort(key=lambda n: (-n[0], n[1]))
    found: list[tuple[int, float, str, str, str, str]] = []
    for _score, fid, body in near[:_CLASSIFIED]:  # the closest by rough words: a bound on the write's cost
        verdict = classify(text, body)
        if verdict.kind is not None:
            found.append((0 if verdict.kind == "same" else 1, -verdict.score, fid, body.strip(), verdict.why,
                          verdict.kind))
    found.sort()
    return [_entry(fid, body, why, kind, text, topics) for _, _, fid, body, why, kind in found[:_SHOWN]]


def _entry(fid: str, body: str, why: str, kind: str, text: str, topics: Sequence[str]) -> Similar:
    if kind == "same":
        return Similar(fid, body, why, kind, command=f"nothing to do; to change it: am fact supersede {fid} TEXT "
                                                     "--reason ...",
                       tool=f"nothing to do; to change it: fact_supersede with old_id {fid!r}, the new text and a "
                            "reason")
    flags = "".join(f" --topic {shlex.quote(t)}" for t in topics)
    return Similar(fid, body, why, "candidate",
                   command=f"if it replaces {fid}: am fact supersede {fid} {shlex.quote(' '.join(text.split()))}"
                           f"{flags} --reason '...' (one commit, no second copy); if both hold, nothing to do",
                   tool=f"if it replaces {fid}: fact_supersede with old_id {fid!r}, this same text, topics "
                        f"{list(topics)!r} and a reason (one commit, no second copy); if both hold, nothing to do")


def look(files: RecordFiles, draft: FactDraft) -> list[Similar]:
    """Return what the draft's policy makes of the facts it looks like (``similar_to``); refuse a candidate under
    ``refuse``. Under ``allow`` nothing is looked at."""
    chosen = policy(files, draft)
    if chosen == "allow":
        return []
    found = similar_to(files, draft.text, draft.topics, draft.repo, draft.branch)
    if chosen == "refuse" and found and found[0].kind == "candidate":
        raise refusal(found)
    return found


def refusal(found: Sequence[Similar]) -> CollisionError:
    """The error of a write refused for a candidate update or contradiction (policy ``refuse``)."""
    first = found[0]
    return CollisionError(f"fact {first.id} holds and says {first.text!r} ({first.why}); the vault's similar-fact "
                          "policy is refuse, so nothing was written",
                          hint=f"{first.command.split(' (one commit')[0]}; or write it beside it with --if-similar allow")
