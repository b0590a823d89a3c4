"""The Vault facade: one method per use case, shared by the CLI, hooks and agents.

A vault is a Git repository with ``.am/vault.yml``. Reads come from the work
tree (so a person's uncommitted edit in Obsidian counts); every write is one
commit made through ``GitStore.commit``.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from am.cache.usage import CountsUses
from am.clock import now as _now
from am.errors import CollisionError, InvalidRecordError, NotAVaultError, NotFoundError, UsageError
from am.git import Change, LazyStore
from am.records.codec import decode_record_bytes, parse_record
from am.records.ids import (
    RECORD_DIRS,
    check_id,
    format_timestamp,
    is_valid_id,
    new_fact_id,
    record_path,
    relation_id,
    topic_id,
)
from am.records.model import (
    CONFIDENCES,
    STATUSES,
    TOPIC_KINDS,
    Fact,
    Record,
    Relation,
    Topic,
    replace,
)
from am.records.schemas import check_record
from am.records.writes import FactDraft, WriteResult, batch_bounds, check_one_line, one_line, with_fresh_ids
from am.registry import Registry, find_vault_root
from am.writes.authorship import Authorship
from am.writes.duplicates import adding, holds_everywhere, superseded_already, superseding
from am.writes.forms import check_names_free, is_note_file, relation_body, render_for_write, topic_names, topic_path
from am.writes.updating import FORMAT_VERSION, VAULT_FILE, Updating
from am.writes.worldwrites import WorldWrites

if TYPE_CHECKING:
    from am.cache.index import Index

__all__ = ["Vault", "FactDraft", "WriteResult", "VAULT_FILE", "FORMAT_VERSION"]

log = logging.getLogger("am")


class Vault(Updating, Authorship, WorldWrites, CountsUses):
    """One vault: its files, its Git repository and its cache."""

    def __init__(self, root: Path, store: LazyStore, *, actor: str | None = None) -> None:
        self.root = root
        self.store = store
        self.settings = self._read_settings()
        self.name = str(self.settings.get("name") or root.name)
        if actor:  # else $AM_ACTOR or Git's user.name (which needs pygit2), read when a write asks
            self.actor = self._check_actor(actor)

    # ------------------------------------------------------------ open / init

    @classmethod
    def open(cls, where: str | Path | None = None, *, actor: str | None = None, branch: str | None = None) -> Vault:
        """Open a vault by registered name, path, $AM_VAULT, or the enclosing folder (``branch``: a vault branch of it)."""
        where = where or os.environ.get("AM_VAULT") or None
        if where is None:
            root = find_vault_root(Path.cwd().resolve())
            if root is None:
                # Inside a registered code repo's clone or worktree: the vault that repo belongs to (DESIGN §2).
                from am.worlds.here import vault_here

                found = vault_here()
                root = found.resolve() if found is not None and (found / ".am" / "vault.yml").is_file() else None
            if root is None:
                from am.git.sparse import refuse_hidden_vault

                refuse_hidden_vault(Path.cwd().resolve())  # .am/ left out by a sparse checkout: not "no vault"
                raise NotAVaultError("not inside a vault",
                                     hint="cd into one, pass --vault NAME|PATH, set AM_VAULT, or create one with: am init")
        else:
            text = str(where)
            candidate = Path(text).expanduser()
            registered = is_valid_id(text) and not candidate.exists()
            root = (Registry.load().vault_path(text) if registered else candidate).resolve()
            if not (root / ".am" / "vault.yml").is_file():
                from am.git.sparse import refuse_hidden_vault

                refuse_hidden_vault(root)  # its vault.yml is in Git, only not checked out: not moved, not a new vault
                if registered:  # moved or removed: am init would make a new one
                    raise NotAVaultError(f"vault {text!r} is registered at {root}, no am vault now (moved or removed?)",
                                         hint=f"am vault add {text} NEW-PATH --replace, or am vault remove {text}")
                raise NotAVaultError(f"{root} is not an am vault", hint=f"create or adopt it with: am init {text}")
        if branch:
            from am.git.branches import branch_worktree

            root = branch_worktree(root, branch)
        return cls(root, LazyStore.open(root), actor=actor)

    @classmethod
    def init(cls, path: Path, *, name: str | None = None, actor: str | None = None,
             register: bool = True, replace: bool = False) -> Vault:
        """Create a vault at ``path`` (or adopt the Git repository there) and register it."""
        root = path.expanduser().resolve()
        if root.exists() and not root.is_dir():
            raise UsageError(f"{root} is a file, not a folder")
        vault_name = name or re.sub(r"[^a-z0-9]+", "-", root.name.lower()).strip("-") or "vault"
        check_id(vault_name, field="vault name")
        if register and not replace and not (root / ".am" / "vault.yml").is_file():
            Registry.load().check_vault_name(vault_name, root)  # before anything is created
        store = LazyStore.init(root)
        vault = cls(root, store, actor=actor)
        if not (root / ".am" / "vault.yml").is_file():
            text = f"name: {vault_name}\nformat: {FORMAT_VERSION}\n"
            changes = [Change(VAULT_FILE, text.encode())]
            gitignore = root / ".gitignore"
            current = gitignore.read_bytes() if gitignore.exists() else b""
            if b".am/cache/" not in current.split(b"\n") and b".am/cache" not in current.split(b"\n"):
                sep = b"" if not current or current.endswith(b"\n") else b"\n"
                changes.append(Change(PurePosixPath(".gitignore"), current + sep + b".am/cache/\n",
                                      base=store.blob_id(".gitignore")))
            with store.write_lock(op="init"):
                store.commit(changes, message=vault._message("vault", "init", [], subject=f"vault: init {vault_name}"),
                             author=vault._author())
            vault = cls(root, store, actor=actor)
        if register:  # an adopted vault (a clone) keeps its own name in vault.yml; --name is this machine's for it
            Registry.load().add_vault(name or vault.name, root, replace=replace)
        return vault

    def close(self) -> None:
        """Release what the vault holds open."""
        for name in ("_cache", "_usage"):
            if (held := self.__dict__.pop(name, None)) is not None:
                held.close()

    def cache(self) -> Index | None:
        """Return the vault's cache (am/cache/index.py), brought up to date; None when it cannot be used."""
        from am.cache.index import open_cache

        return open_cache(self)

    def _record_pairs(self, rtype: str, topic: str | None = None, status: str | None = None,
                      rel: str | None = None) -> Iterable[tuple[PurePosixPath, Record]]:
        cache = self.cache()  # it narrows by topic, status, rel in SQL (not 20k facts decoded for 200); callers recheck
        if cache is None:
            return self.iter_records()
        return cache.relations_of(rel, status) if rel else cache.records(type=rtype, topic=topic, status=status)

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_settings(self) -> dict[str, Any]:
        from am.git.workfiles import read_capped
        from am.records.frontmatter import MAX_FRONTMATTER_BYTES, load_settings

        data = read_capped(str(self.root), str(VAULT_FILE), cap=MAX_FRONTMATTER_BYTES, hint="make it a small file")
        if data is None:
            return {}
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRecordError("not UTF-8", path=str(VAULT_FILE), hint="save it as UTF-8") from None
        return load_settings(text, path=str(VAULT_FILE))

    # ------------------------------------------------------------ reading

    def iter_record_paths(self) -> Iterator[PurePosixPath]:
        """Yield the vault-relative path of every .md file under topics/, facts/, relations/."""
        yield from map(PurePosixPath, self.record_file_names())

    def record_file_names(self) -> Iterator[str]:
        """Yield ``iter_record_paths`` as strings (no path object per file: a check of 20k files lists them all)."""
        from am.git.workfiles import markdown_files

        return markdown_files(str(self.root), RECORD_DIRS.values())

    def read_path(self, path: PurePosixPath) -> Record:
        """Parse the record file at a vault-relative path: a regular file, no link followed, size capped."""
        from am.git.workfiles import read_capped
        from am.records.codec import MAX_RECORD_BYTES

        data = read_capped(str(self.root), str(path), cap=MAX_RECORD_BYTES, hint="a record is a small regular file")
        if data is None:
            raise NotFoundError(f"{path} does not exist")
        return parse_record(decode_record_bytes(data, path=str(path)), str(path))

    def iter_records(self, *, strict: bool = False) -> Iterator[tuple[PurePosixPath, Record]]:
        """Yield every record in the work tree; unreadable files are logged (or raised if strict)."""
        for path in self.iter_record_paths():
            try:
                yield path, self.read_path(path)
            except InvalidRecordError as err:
                if strict:
                    raise
                if not is_note_file(self.root, path):  # a note (Obsidian's Untitled.md) is no record, nor broken
                    log.warning("skipping %s", err)

    def locate(self, record_id: str) -> PurePosixPath | None:
        """Return the path of the record with this id, or None."""
        check_id(record_id)
        # A file named after the id that does not parse is raised, not skipped:
        # "unknown topic" would send the user to create a twin of a broken file.
        cache = self.cache()
        if cache is not None:
            found = cache.lookup(record_id)
            if found is not None and not (self.root / found).is_file():
                cache.refresh()  # moved since its last refresh (a second ago at most): a hand git mv, Obsidian
                found = cache.lookup(record_id)
            for broken in cache.invalid_paths(record_id) if found is None else ():
                self.read_path(broken)
            return found
        for guess in self._guess_paths(record_id):
            if (self.root / guess).is_file() and self.read_path(guess).id == record_id:
                return guess
        for path in self.iter_record_paths():
            if path.stem == record_id and self.read_path(path).id == record_id:
                return path
        for path, record in self.iter_records():
            if record.id == record_id:
                return path
        return None

    @staticmethod
    def _guess_paths(record_id: str) -> list[PurePosixPath]:
        guesses = [PurePosixPath("topics", f"{record_id}.md")]
        match = re.match(r"^f-(\d{4})(\d{2})(\d{2})-", record_id)
        if match:
            guesses.insert(0, PurePosixPath("facts", *match.groups(), f"{record_id}.md"))
        return guesses

    def get(self, record_id: str) -> tuple[PurePosixPath, Record]:
        """Return (path, record) for an id, or raise NotFoundError."""
        path = self.locate(record_id)
        if path is None:
            raise NotFoundError(f"no record with id {record_id!r}",
                                hint=self.id_hint(record_id) + "list them with: am fact list / am topic list")
        return path, self.read_path(path)

    def get_typed(self, record_id: str, kind: type[Record], noun: str) -> tuple[PurePosixPath, Any]:
        """Return (path, record) for an id that must name a record of the given type."""
        path, record = self.get(record_id)
        if not isinstance(record, kind):
            raise NotFoundError(f"{record_id!r} is a {record.type}, not a {noun}")
        return path, record

    def get_topic(self, topic_id_: str) -> Topic:
        """Return a topic by id."""
        return self.get_typed(topic_id_, Topic, "topic")[1]  # type: ignore[no-any-return]

    def get_fact(self, fact_id: str) -> Fact:
        """Return a fact by id."""
        return self.get_typed(fact_id, Fact, "fact")[1]  # type: ignore[no-any-return]

    def get_relation(self, rel_id: str) -> Relation:
        """Return a relation by id."""
        return self.get_typed(rel_id, Relation, "relation")[1]  # type: ignore[no-any-return]

    def list_topics(self, *, kind: str | None = None) -> list[Topic]:
        """Return topics, sorted by id."""
        out = [r for _, r in self._record_pairs("topic") if isinstance(r, Topic) and (kind is None or r.kind == kind)]
        return sorted(out, key=lambda t: t.id)

    def list_facts(self, *, topic: str | None = None, status: str | None = None,
                   repo: str | None = None) -> list[Fact]:
        """Return facts, oldest first."""
        out = [r for _, r in self._record_pairs("fact", topic, status) if isinstance(r, Fact)
               and (topic is None or topic in r.topics)
               and (status is None or r.status == status) and (repo is None or r.repo == repo)]
        return sorted(out, key=lambda f: (f.created or "", f.id))

    def list_relations(self, *, topic: str | None = None, status: str | None = None,
                       rel: str | None = None) -> list[Relation]:
        """Return relations (of one type: ``rel``), sorted by id."""
        out = [r for _, r in self._record_pairs("relation", None if rel else topic, status, rel)
               if isinstance(r, Relation) and (topic is None or topic in (r.from_, r.to))
               and (status is None or r.status == status) and (rel is None or r.rel == rel)]
        return sorted(out, key=lambda r: r.id)

    def _write(self, items: Sequence[tuple[PurePosixPath, Record, str | None]], *, noun: str, verb: str,
               ids: Sequence[str], reason: str | None = None, summary: str | None = None,
               allow_secrets: bool = False, subject: str | None = None) -> WriteResult:
        records = [r for _, r, _ in items]
        for path, record, _ in items:
            check_record(record, path=str(path))
        self._check_secrets(records, allow_secrets)
        changes = [Change(path, render_for_write(self, path, record, base).encode("utf-8"), base=base)
                   for path, record, base in items]
        self._check_writable(changes)
        message = self._message(noun, verb, ids, reason=reason, summary=summary, subject=subject)
        with self._handing_over(changes, [(record, base) for _, record, base in items]):
            commit = self.store.commit_grouped(changes, message=message, author=self._author(),
                                               committer=self._committer(), op=f"{noun}.{verb}",
                                               after=self._after_write)
        return WriteResult(commit=commit, records=tuple(records), paths=tuple(p for p, _, _ in items))

    def _after_write(self, commit: str, paths: Sequence[PurePosixPath], base: str | None = None, *,
                     blobs: Mapping[str, str] | None = None) -> None:
        """Bring derived state up to date after a write (``base``: where a group of commits began; ``blobs``: its blobs)."""
        cache = self.__dict__.get("_cache")
        if cache is not None:
            cache.after_commit(commit, paths, base=base, blobs=blobs, known=self._known)
        else:
            # Not open yet (a write that needed no lookup): opening it takes the commit in.
            try:
                self.cache()
            except Exception as err:  # noqa: BLE001 - the write is committed; the next read catches up
                log.warning("could not open the search cache after commit %s (%s)", commit[:10], err)

    def _base_of(self, path: PurePosixPath) -> str | None:
        return self.store.blob_id(path)

    def _ensure_new(self, record_id: str) -> None:
        existing = self.locate(record_id)
        if existing is not None:
            raise CollisionError(f"a record with id {record_id!r} already exists at {existing}",
                                 hint="choose another id")
        check_names_free(self, record_id)  # nor a name by which links reach another record

    def add_topic(self, *, title: str, kind: str = "concept", id: str | None = None,
                  aliases: Sequence[str] = (), tags: Sequence[str] = (), body: str = "") -> WriteResult:
        """Add a topic; its id is ``<kind>-<slug of title>`` unless given."""
        if kind not in TOPIC_KINDS:
            raise InvalidRecordError(f"unknown kind {kind!r}; use one of: {', '.join(TOPIC_KINDS)}", field="kind")
        check_one_line("--alias", *aliases)
        check_one_line("--tag", *tags)
        tid = check_id(id) if id else topic_id(kind, title)
        self._ensure_new(tid)
        topic = Topic(id=tid, kind=kind, title=title.strip(), body=_body(body), aliases=tuple(aliases),
                      tags=tuple(tags), created=format_timestamp(_now()))
        check_names_free(self, tid, topic_names(topic, path := topic_path(self, tid, topic)))
        return self._write([(path, topic, None)], noun="topic", verb="add", ids=[tid], summary=title)

    @cached_property
    def _topics_seen(self) -> dict[str, tuple[int, int, int]]:
        """Topic ids found at their own path, with that file's stat data then."""
        return {}

    def _check_topics(self, topics: Sequence[str], *, create: bool) -> list[tuple[PurePosixPath, Topic]]:
        if not topics:
            raise UsageError("a fact needs at least one topic", hint="pass --topic ID")
        missing, created = [], []
        for t in topics:
            check_id(t, field="topic")
            # A topic is usually at its own path: one read, and no cache to bring
            # up to date (which other writers keep making stale).
            guess = record_path("topic", t, None)
            try:
                st = os.lstat(self.root / guess)
            except (FileNotFoundError, NotADirectoryError):
                st = None
            if st is not None and stat.S_ISREG(st.st_mode):
                seen = self._topics_seen
                stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
                if seen.get(t) == stamp:
                    continue  # the same file this vault object already read as that topic
                found = self.read_path(guess)
                if found.id == t:
                    if not isinstance(found, Topic):
                        raise InvalidRecordError(f"{t!r} is not a topic", field="topics")
                    seen[t] = stamp
                    continue
            path = self.locate(t)
            if path is None:
                missing.append(t)
            elif not isinstance(self.read_path(path), Topic):
                raise InvalidRecordError(f"{t!r} is not a topic", field="topics")
        for t in missing:
            if not create:
                raise NotFoundError(
                    f"unknown topic {t!r}",
                    hint=self.topic_hint(t) + f"create it first (am topic add {t} --title ...) or pass --create-topic",
                )
            kind = t.split("-", 1)[0]
            kind = kind if kind in TOPIC_KINDS else "concept"
            title = t.split("-", 1)[1] if "-" in t and t.split("-", 1)[0] in TOPIC_KINDS else t
            topic = Topic(id=t, kind=kind, title=title.replace("-", " "), created=format_timestamp(_now()))
            check_names_free(self, t, topic_names(topic, path := record_path("topic", t, None)))
            created.append((path, topic))
        return created

    def _new_fact(self, draft: FactDraft, *, supersedes: Sequence[str] = ()) -> Fact:
        if not draft.text.strip():
            raise UsageError("the fact's text is empty", hint="say it in one to three sentences")
        confidence = draft.confidence or "medium"
        if confidence not in CONFIDENCES:
            raise InvalidRecordError(f"must be one of: {', '.join(CONFIDENCES)}", field="confidence")
        now = _now()
        fid = check_id(draft.id) if draft.id else new_fact_id(now)
        axis = draft.axis
        if axis is None:
            axis = ("subject" if (draft.repo or draft.commit)
                    else ("time" if (draft.valid_from or draft.valid_until) else None))
        return Fact(
            id=fid, topics=tuple(dict.fromkeys(draft.topics)), body=_body(draft.text), confidence=confidence,
            provenance=draft.provenance or self._provenance(),
            repo=draft.repo, version=draft.branch, commit=draft.commit, axis=axis, created=format_timestamp(now),
            valid_from=draft.valid_from, valid_until=draft.valid_until, supersedes=tuple(supersedes),
            paths=draft.paths, tags=draft.tags, pinned=draft.pin,
        )

    def add_fact(self, draft: FactDraft | str, /, *, create_topics: bool = False, allow_secrets: bool = False,
                 unverified: bool = False, **fields: Any) -> WriteResult:
        """Add a fact about one or more topics, in one commit (with any topics it creates).

        ``draft`` is a ``FactDraft``, or the fact's text with the draft's fields as keywords.
        Its world is checked first (DESIGN §5.7): a registered repo, a branch and commit its clone has,
        the commit stored in full; a branch without a commit records that branch's tip. ``unverified``
        records the world as given. A fact already recorded writes nothing (am/writes/duplicates.py).
        """
        draft = self._checked_draft(FactDraft.of(draft, fields), None, unverified=unverified)
        new_topics = self._check_topics(draft.topics, create=create_topics)
        with adding(self, draft) as known:  # the same statement's adds one at a time: a twin finds the first
            if known is not None:
                return known
            if draft.id:
                self._ensure_new(check_id(draft.id))

            def attempt() -> WriteResult:
                fact = self._new_fact(draft)
                path = record_path("fact", fact.id, fact.created)
                items: list[tuple[PurePosixPath, Record, str | None]] = [(path, fact, None)]
                items += [(p, t, None) for p, t in new_topics]
                return self._write(items, noun="fact", verb="add", ids=[fact.id] + [t.id for _, t in new_topics],
                                   summary=draft.text, allow_secrets=allow_secrets)

            return with_fresh_ids(attempt, generated=not draft.id)

    def supersede_fact(self, old_id: str, draft: FactDraft | str, /, *, reason: str, create_topics: bool = False,
                       allow_secrets: bool = False, unverified: bool = False, **fields: Any) -> WriteResult:
        """Replace a fact with a new one, in one commit touching both files.

        The new fact inherits the old one's topics and world unless given. The old
        fact is marked superseded only when the new one holds wherever it did (same
        repo, no narrower branch or later commit); otherwise it stays active and
        the supersession is resolved per world (DESIGN §5.6).
        """
        draft = FactDraft.of(draft, fields)
        if not reason.strip():
            raise UsageError("a supersede needs a reason", hint="pass --reason 'what changed'")
        # A supersede that lost a race to another update of the old fact is run again on its new version.
        return self._retrying(lambda: self._supersede_once(old_id, draft, reason=reason, create_topics=create_topics,
                                                           allow_secrets=allow_secrets, unverified=unverified))

    def _supersede_once(self, old_id: str, draft: FactDraft, *, reason: str, create_topics: bool,
                        allow_secrets: bool, unverified: bool = False) -> WriteResult:
        old_path, old, base = self._existing_for_update(old_id, Fact, "fact")
        if old.superseded_by and (done := superseded_already(self, old, draft, unverified=unverified)):
            return done  # a retry: OLD is superseded by a fact that says this already; nothing written
        if old.status in ("superseded", "expired"):
            raise UsageError(f"{old_id} is already {old.status}", hint="supersede the fact that replaced it instead")
        if old.superseded_by:  # superseded on its branch only: one superseded_by, never overwritten
            raise UsageError(f"{old_id} is already superseded by {old.superseded_by} (where that fact holds)",
                             hint=f"supersede {old.superseded_by} instead, or expire {old_id} "
                                  f"(am fact expire {old_id} --reason ...) and add the new fact")
        from am.writes.forms import with_ids

        # Topics written as "[[Name]]" are inherited as ids.
        draft = self._checked_draft(draft, old.repo, unverified=unverified).inheriting(with_ids(self, old))
        new_topics = self._check_topics(draft.topics, create=create_topics)
        if draft.id:
            self._ensure_new(check_id(draft.id))

        def attempt() -> WriteResult:
            fact = replace(self._new_fact(draft, supersedes=[old.id]), reason=one_line(reason))
            updated = replace(old, superseded_by=fact.id, reason=one_line(reason),
                              status="superseded" if holds_everywhere(fact, old) else old.status)
            path = record_path("fact", fact.id, fact.created)
            items: list[tuple[PurePosixPath, Record, str | None]] = [(path, fact, None), (old_path, updated, base)]
            items += [(p, t, None) for p, t in new_topics]
            return self._write(items, noun="fact", verb="supersede", ids=[fact.id, old.id], reason=reason,
                               subject=f"fact: supersede {old.id} -> {fact.id}", allow_secrets=allow_secrets)

        # A statement another holding fact already says: the old one is superseded by that fact, no twin.
        with superseding(self, (old_path, old, base), draft, reason=reason, allow_secrets=allow_secrets) as done:
            return done if done is not None else with_fresh_ids(attempt, generated=not draft.id)

    def set_fact_status(self, fact_id: str, status: str, *, reason: str | None = None,
                        verb: str = "status") -> WriteResult:
        """Change a fact's status (active, contested, pending-review, expired, superseded)."""
        if status not in STATUSES:
            raise InvalidRecordError(f"{status!r} is not a status; use one of: {', '.join(STATUSES)}", field="status")
        # Not run again when another update wins the race: its status would be overwritten (ConflictError).
        path, fact, base = self._existing_for_update(fact_id, Fact, "fact")
        if fact.status == status:
            raise UsageError(f"{fact_id} is already {status}")
        updated = replace(fact, status=status, reason=one_line(reason) if reason else fact.reason)
        return self._write([(path, updated, base)], noun="fact", verb=verb, ids=[fact_id], reason=reason,
                           subject=f"fact: {verb} {fact_id}" + (f" ({status})" if verb == "status" else ""))

    def expire_fact(self, fact_id: str, *, reason: str) -> WriteResult:
        """Mark a fact expired: it no longer holds anywhere, and stays in the vault."""
        if not reason.strip():
            raise UsageError("expiring a fact needs a reason", hint="pass --reason 'why it no longer holds'")
        return self.set_fact_status(fact_id, "expired", reason=reason, verb="expire")

    def edit_fact(self, fact_id: str, text: str, *, allow_secrets: bool = False) -> WriteResult:
        """Fix a fact's text (a typo) in one commit, keeping its id; a change of meaning is a supersede."""
        from am.writes.renames import edit_fact

        return edit_fact(self, fact_id, text, allow_secrets=allow_secrets)

    def rename_topic(self, old_id: str, new_id: str, *, title: str | None = None) -> WriteResult:
        """Rename a topic and rewrite every reference to it (facts, relations, wikilinks) in one commit."""
        from am.writes.renames import rename_topic

        return rename_topic(self, old_id, new_id, title=title)

    def setup_obsidian(self) -> tuple[str | None, list[str]]:
        """Write Obsidian templates and settings the vault lacks (never a person's), in one commit."""
        from am.writes.obsidian import setup_obsidian

        return setup_obsidian(self)

    def add_relation(self, from_id: str, rel: str, to_id: str, *, note: str = "",
                     allow_secrets: bool = False) -> WriteResult:
        """Add a typed edge between two topics or facts (or reactivate an expired one)."""
        from am.records.model import RELATION_TYPES
        from am.records.schemas import relation_type_error

        if rel not in RELATION_TYPES:
            raise relation_type_error(rel)
        for end, value in (("from", from_id), ("to", to_id)):
            check_id(value, field=end)
            if self.locate(value) is None:
                raise NotFoundError(f"unknown record {value!r} in '{end}'",
                                    hint=f"create it first: am topic add {value} --title ...")
        rid = relation_id(from_id, rel, to_id)
        existing = self.locate(rid)
        body = _body(note) if note.strip() else relation_body(self, from_id, rel, to_id)
        if existing is not None:
            path, old, base = self._existing_for_update(rid, Relation, "relation")
            if old.status == "active":
                raise CollisionError(f"relation {rid} already exists", hint="it is active; nothing to do")
            updated = replace(old, status="active", body=body if note.strip() else old.body)
            return self._write([(path, updated, base)], noun="relation", verb="add", ids=[rid],
                               allow_secrets=allow_secrets)
        relation = Relation(id=rid, rel=rel, from_=from_id, to=to_id, body=body, created=format_timestamp(_now()))
        path = record_path("relation", rid, relation.created)
        return self._write([(path, relation, None)], noun="relation", verb="add", ids=[rid],
                           allow_secrets=allow_secrets)

    def expire_relation(self, rel_id: str, *, reason: str | None = None) -> WriteResult:
        """Mark a relation expired (relations are never deleted)."""
        path, rel, base = self._existing_for_update(rel_id, Relation, "relation")
        if rel.status == "expired":
            raise UsageError(f"{rel_id} is already expired")
        updated = replace(rel, status="expired", reason=one_line(reason) if reason else rel.reason)
        return self._write([(path, updated, base)], noun="relation", verb="expire", ids=[rel_id], reason=reason)

    def import_batch(self, items: Sequence[tuple[PurePosixPath, Record, str | None]], *, source: str,
                     allow_secrets: bool = False) -> WriteResult:
        """Write one batch of an import as one commit: (path, record, blob it replaces or None for a new file)."""
        return self._write(items, noun="import", verb="batch", ids=[r.id for _, r, _ in items],
                           subject=f"import: {len(items)} records from {source}", allow_secrets=allow_secrets)

    def import_records(self, records: Sequence[Record], *, source: str, batch_size: int = 500,
                       allow_secrets: bool = False) -> list[WriteResult]:
        """Write many new records in batches (at most ``batch_size``, and a message that fits), one commit a batch."""
        results = []
        for start, end in batch_bounds([r.id for r in records], batch_size):
            items: list[tuple[PurePosixPath, Record, str | None]] = []
            for record in records[start:end]:
                record = replace(record, created=record.created or format_timestamp(_now()))
                items.append((record_path(record.type, record.id, record.created), record, None))
            results.append(self.import_batch(items, source=source, allow_secrets=allow_secrets))
        return results


def _body(text: str) -> str:
    text = text.strip("\n")
    return text + "\n" if text else ""
