"""A fact's writes, from the draft a door built to the commit: add, supersede, a change of status.

The facade calls in once with the draft and the vault's ``RecordWriter`` (am/writes/writer.py); the write
walks down from here: the draft's world is checked (am/writes/worldwrites.py), its topics found (or created,
under the name rule of am/writes/forms.py), a fact already recorded is answered instead of written again
(am/writes/duplicates.py), and the records go to Git as one commit (``RecordWriter.write``).

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from am.clock import now as _now
from am.errors import InvalidRecordError, NotFoundError, UsageError
from am.records.ids import check_id, format_timestamp, new_fact_id, record_path
from am.records.model import CONFIDENCES, STATUSES, TOPIC_KINDS, Fact, Record, Topic, replace
from am.records.writes import FactDraft, Similar, WriteResult, one_line, with_fresh_ids
from am.writes.duplicates import adding, holds_everywhere, superseded_already, superseding
from am.writes.forms import check_names_free, topic_names
from am.writes.judge import look
from am.writes.lookup import topic_hint
from am.writes.worldwrites import checked_draft

if TYPE_CHECKING:
    from am.writes.writer import RecordWriter

__all__ = ["add_fact", "body_of", "check_topics", "restated", "set_fact_status", "supersede_fact"]


def add_fact(writer: RecordWriter, draft: FactDraft, *, create_topics: bool = False, allow_secrets: bool = False,
             unverified: bool = False) -> WriteResult:
    """Add a fact about one or more topics, in one commit (with any topics it creates).

    Its world is checked first (DESIGN §5.7); ``unverified`` records the world as given. A fact
    already recorded writes nothing (am/writes/duplicates.py).
    """
    draft = checked_draft(draft, None, unverified=unverified)
    new_topics = check_topics(writer, draft.topics, create=create_topics)
    with adding(writer, draft) as known:  # the same statement's adds one at a time: a twin finds the first
        if known is not None:
            return known
        similar = look(writer.files, draft)  # a restatement answered, a change named (am/writes/judge.py)
        if similar and similar[0].kind == "same":
            return restated(writer, draft, similar[0])
        if draft.id:
            writer.ensure_new(check_id(draft.id))

        def attempt() -> WriteResult:
            fact = _new_fact(writer, draft)
            path = record_path("fact", fact.id, fact.created)
            items: list[tuple[PurePosixPath, Record, str | None]] = [(path, fact, None)]
            items += [(p, t, None) for p, t in new_topics]
            return writer.write(items, noun="fact", verb="add", ids=[fact.id] + [t.id for _, t in new_topics],
                                summary=draft.text, allow_secrets=allow_secrets)

        result = with_fresh_ids(attempt, generated=not draft.id)
        return replace(result, similar=tuple(similar)) if similar else result


def restated(writer: RecordWriter, draft: FactDraft, same: Similar) -> WriteResult:
    """Return a fact add's answer when a holding fact already says the draft in other words: nothing written."""
    from am.writes.duplicates import recorded_hint

    path = writer.files.locate(same.id)
    fact = writer.files.read_path(path) if path is not None else None
    if path is None or not isinstance(fact, Fact):
        raise NotFoundError(f"fact {same.id} (which says this) could not be read", hint="run am check")
    return WriteResult("", (fact,), (path,), created=False, similar=(same,),
                       note=f"{fact.id} already says this ({same.why}); {recorded_hint(fact, draft)}")


def supersede_fact(writer: RecordWriter, old_id: str, draft: FactDraft, *, reason: str, create_topics: bool = False,
                   allow_secrets: bool = False, unverified: bool = False) -> WriteResult:
    """Replace a fact with a new one, in one commit touching both files (see ``Vault.supersede_fact``)."""
    if not reason.strip():
        raise UsageError("a supersede needs a reason", hint="pass --reason 'what changed'")
    # A supersede that lost a race to another update of the old fact is run again on its new version.
    return writer.retrying(lambda: _supersede_once(writer, old_id, draft, reason=reason, create_topics=create_topics,
                                                   allow_secrets=allow_secrets, unverified=unverified))


def _supersede_once(writer: RecordWriter, old_id: str, draft: FactDraft, *, reason: str, create_topics: bool,
                    allow_secrets: bool, unverified: bool = False) -> WriteResult:
    old_path, old, base = writer.existing_for_update(old_id, Fact, "fact")
    if old.superseded_by and (done := superseded_already(writer, old, draft, unverified=unverified)):
        return done  # a retry: OLD is superseded by a fact that says this already; nothing written
    if old.status in ("superseded", "expired"):
        raise UsageError(f"{old_id} is already {old.status}", hint="supersede the fact that replaced it instead")
    if old.superseded_by:  # superseded on its branch only: one superseded_by, never overwritten
        raise UsageError(f"{old_id} is already superseded by {old.superseded_by} (where that fact holds)",
                         hint=f"supersede {old.superseded_by} instead, or expire {old_id} "
                              f"(am fact expire {old_id} --reason ...) and add the new fact")
    from am.writes.forms import with_ids

    # Topics written as "[[Name]]" are inherited as ids.
    draft = checked_draft(draft, old.repo, unverified=unverified).inheriting(with_ids(writer.files, old))
    new_topics = check_topics(writer, draft.topics, create=create_topics)
    if draft.id:
        writer.ensure_new(check_id(draft.id))

    def attempt() -> WriteResult:
        fact = replace(_new_fact(writer, draft, supersedes=[old.id]), reason=one_line(reason))
        updated = replace(old, superseded_by=fact.id, reason=one_line(reason),
                          status="superseded" if holds_everywhere(fact, old) else old.status)
        path = record_path("fact", fact.id, fact.created)
        items: list[tuple[PurePosixPath, Record, str | None]] = [(path, fact, None), (old_path, updated, base)]
        items += [(p, t, None) for p, t in new_topics]
        return writer.write(items, noun="fact", verb="supersede", ids=[fact.id, old.id], reason=reason,
                            subject=f"fact: supersede {old.id} -> {fact.id}", allow_secrets=allow_secrets)

    # A statement another holding fact already says: the old one is superseded by that fact, no twin.
    with superseding(writer, (old_path, old, base), draft, reason=reason, allow_secrets=allow_secrets) as done:
        return done if done is not None else with_fresh_ids(attempt, generated=not draft.id)


def set_fact_status(writer: RecordWriter, fact_id: str, status: str, *, reason: str | None = None,
                    verb: str = "status") -> WriteResult:
    """Change a fact's status (active, contested, pending-review, expired, superseded)."""
    if status not in STATUSES:
        raise InvalidRecordError(f"{status!r} is not a status; use one of: {', '.join(STATUSES)}", field="status")
    # Not run again when another update wins the race: its status would be overwritten (ConflictError).
    path, fact, base = writer.existing_for_update(fact_id, Fact, "fact")
    if fact.status == status:
        raise UsageError(f"{fact_id} is already {status}")
    updated = replace(fact, status=status, reason=one_line(reason) if reason else fact.reason)
    return writer.write([(path, updated, base)], noun="fact", verb=verb, ids=[fact_id], reason=reason,
                        subject=f"fact: {verb} {fact_id}" + (f" ({status})" if verb == "status" else ""))


def check_topics(writer: RecordWriter, topics: Sequence[str], *, create: bool) -> list[tuple[PurePosixPath, Topic]]:
    """Check that a fact's topics exist; return the topics to create with it (``create``), else raise NotFoundError."""
    if not topics:
        raise UsageError("a fact needs at least one topic", hint="pass --topic ID")
    files = writer.files
    missing, created = [], []
    for t in topics:
        check_id(t, field="topic")
        # A topic is usually at its own path: one read, and no cache to bring
        # up to date (which other writers keep making stale).
        guess = record_path("topic", t, None)
        try:
            st = os.lstat(files.root / guess)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        if st is not None and stat.S_ISREG(st.st_mode):
            seen = writer.topics_seen
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            if seen.get(t) == stamp:
                continue  # the same file this vault object already read as that topic
            found = files.read_path(guess)
            if found.id == t:
                if not isinstance(found, Topic):
                    raise InvalidRecordError(f"{t!r} is not a topic", field="topics")
                seen[t] = stamp
                continue
        path = files.locate(t)
        if path is None:
            missing.append(t)
        elif not isinstance(files.read_path(path), Topic):
            raise InvalidRecordError(f"{t!r} is not a topic", field="topics")
    for t in missing:
        if not create:
            raise NotFoundError(
                f"unknown topic {t!r}",
                hint=topic_hint(files, t) + f"create it first (am topic add {t} --title ...) or pass --create-topic",
            )
        kind = t.split("-", 1)[0]
        kind = kind if kind in TOPIC_KINDS else "concept"
        title = t.split("-", 1)[1] if "-" in t and t.split("-", 1)[0] in TOPIC_KINDS else t
        topic = Topic(id=t, kind=kind, title=title.replace("-", " "), created=format_timestamp(_now()))
        check_names_free(files, t, topic_names(topic, path := record_path("topic", t, None)))
        created.append((path, topic))
    return created


def _new_fact(writer: RecordWriter, draft: FactDraft, *, supersedes: Sequence[str] = ()) -> Fact:
    if not draft.text.strip():
        raise UsageError("the fact's text is empty", hint="say it in one to three sentences")
    setting = writer.files.settings.get("confidence")
    if draft.confidence is None and setting is not None and setting not in (*CONFIDENCES, "auto"):
        raise InvalidRecordError(f".am/vault.yml: confidence: {setting!r} is not a confidence", field="confidence",
                                 hint=f"write one of: {', '.join(CONFIDENCES)}, auto (read from the words)")
    confidence = draft.confidence or setting or "medium"
    if confidence == "auto":  # read from the words (am/records/autoconfidence.py), when the vault or writer asks
        from am.records.autoconfidence import guess_confidence

        confidence = guess_confidence(draft.text)[0]
    if confidence not in CONFIDENCES:
        raise InvalidRecordError(f"must be one of: {', '.join(CONFIDENCES)}", field="confidence")
    now = _now()
    fid = check_id(draft.id) if draft.id else new_fact_id(now)
    axis = draft.axis
    if axis is None:
        axis = ("subject" if (draft.repo or draft.commit)
                else ("time" if (draft.valid_from or draft.valid_until) else None))
    return Fact(
        id=fid, topics=tuple(dict.fromkeys(draft.topics)), body=body_of(draft.text), confidence=confidence,
        provenance=draft.provenance or writer.authorship.provenance(),
        repo=draft.repo, version=draft.branch, commit=draft.commit, axis=axis, created=format_timestamp(now),
        valid_from=draft.valid_from, valid_until=draft.valid_until, supersedes=tuple(supersedes),
        paths=draft.paths, tags=draft.tags, pinned=draft.pin, dirty=draft.dirty,
    )


def body_of(text: str) -> str:
    """Return a record's body as written: the text without leading or trailing blank lines, ending in one newline."""
    text = text.strip("\n")
    return text + "\n" if text else ""
