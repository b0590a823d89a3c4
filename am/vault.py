"""The Vault facade: one method per use case, shared by the CLI, hooks and agents.

A vault is a Git repository with ``.am/vault.yml``. Reads come from the work
tree (so a person's uncommitted edit in Obsidian counts); every write is one
commit made through ``GitStore.commit``.

The facade owns its collaborators and hands them down: ``files`` (am/cache/recordfiles.py: the folder,
the Git store, the settings, the cache, and the reads of record files), ``authorship``
(am/writes/authorship.py: who writes) and ``writer`` (am/writes/writer.py: the one way a record
reaches Git). A write method calls into am/writes once with what it needs; nothing there calls back.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from am.cache.recordfiles import RecordFiles
from am.cache.usage import CountsUses
from am.clock import now as _now
from am.errors import (
    CollisionError,
    InvalidRecordError,
    NotAVaultError,
    NotFoundError,
    UsageError,
)
from am.git import Change, LazyStore
from am.records.ids import (
    VAULT_FILE,
    check_id,
    format_timestamp,
    is_valid_id,
    record_path,
    relation_id,
    topic_id,
)
from am.records.model import TOPIC_KINDS, Fact, Record, Relation, Topic, replace
from am.records.writes import (
    FactDraft,
    WriteResult,
    batch_bounds,
    check_one_line,
    one_line,
)
from am.registry import Registry, find_vault_root
from am.writes import facts, lookup
from am.writes.authorship import Authorship
from am.writes.facts import body_of
from am.writes.formats import FORMAT_VERSION
from am.writes.forms import check_names_free, relation_body, topic_names, topic_path
from am.writes.writer import RecordWriter

if TYPE_CHECKING:
    from am.cache.index import Index

__all__ = ["Vault", "FactDraft", "WriteResult", "VAULT_FILE", "FORMAT_VERSION"]


class Vault(CountsUses):
    """One vault: its files, its Git repository and its cache."""

    def __init__(self, root: Path, store: LazyStore, *, actor: str | None = None) -> None:
        self.root = root
        self.store = store
        self.files = RecordFiles(root, store)
        self.name = str(self.settings.get("name") or root.name)
        self.authorship = Authorship(store, actor)
        self.writer = RecordWriter(self.files, self.authorship)

    @property
    def settings(self) -> dict[str, Any]:
        """The vault's settings (``.am/vault.yml``)."""
        return self.files.settings

    @settings.setter
    def settings(self, settings: dict[str, Any]) -> None:
        self.files.settings = settings

    @property
    def actor(self) -> str:
        """Who this vault's writes are by: the actor given, else $AM_ACTOR, else git's user.name (else "am")."""
        return self.authorship.actor

    @actor.setter
    def actor(self, actor: str) -> None:
        self.authorship.actor = actor

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
                from am.git.program.sparse import refuse_hidden_vault

                refuse_hidden_vault(Path.cwd().resolve())  # .am/ left out by a sparse checkout: not "no vault"
                raise NotAVaultError("not inside a vault",
                                     hint="cd into one, pass --vault NAME|PATH, set AM_VAULT, or create one with: am init")
        else:
            text = str(where)
            candidate = Path(text).expanduser()
            registered = is_valid_id(text) and not candidate.exists()
            root = (Registry.load().vault_path(text) if registered else candidate).resolve()
            if not (root / ".am" / "vault.yml").is_file():
                from am.git.program.sparse import refuse_hidden_vault

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
                store.commit(changes, message=vault.authorship.message("vault", "init", [],
                                                                        subject=f"vault: init {vault_name}"),
                             author=vault.authorship.author())
            vault = cls(root, store, actor=actor)
        if register:  # an adopted vault (a clone) keeps its own name in vault.yml; --name is this machine's for it
            Registry.load().add_vault(name or vault.name, root, replace=replace)
        return vault


    def close(self) -> None:
        """Release what the vault holds open."""
        self.files.close()
        if (held := self.__dict__.pop("_usage", None)) is not None:
            held.close()

    def cache(self) -> Index | None:
        """Return the vault's cache (am/cache/index.py), brought up to date; None when it cannot be used."""
        return self.files.cache()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ reading

    def iter_record_paths(self) -> Iterator[PurePosixPath]:
        """Yield the vault-relative path of every .md file under topics/, facts/, relations/."""
        return self.files.iter_record_paths()

    def record_file_names(self) -> Iterator[str]:
        """Yield ``iter_record_paths`` as strings (no path object per file: a check of 20k files lists them all)."""
        return self.files.record_file_names()

    def read_path(self, path: PurePosixPath) -> Record:
        """Parse the record file at a vault-relative path: a regular file, no link followed, size capped."""
        return self.files.read_path(path)

    def iter_records(self, *, strict: bool = False) -> Iterator[tuple[PurePosixPath, Record]]:
        """Yield every record in the work tree; unreadable files are logged (or raised if strict)."""
        return self.files.iter_records(strict=strict)

    def locate(self, record_id: str) -> PurePosixPath | None:
        """Return the path of the record with this id, or None."""
        return self.files.locate(record_id)

    def get(self, record_id: str) -> tuple[PurePosixPath, Record]:
        """Return (path, record) for an id, or raise NotFoundError."""
        return lookup.get(self.files, record_id)

    def get_typed(self, record_id: str, kind: type[Record], noun: str) -> tuple[PurePosixPath, Any]:
        """Return (path, record) for an id that must name a record of the given type."""
        return lookup.get_typed(self.files, record_id, kind, noun)

    def get_topic(self, topic_id_: str) -> Topic:
        """Return a topic by id."""
        return self.get_typed(topic_id_, Topic, "topic")[1]  # type: ignore[no-any-return]

    def get_fact(self, fact_id: str) -> Fact:
        """Return a fact by id."""
        return self.get_typed(fact_id, Fact, "fact")[1]  # type: ignore[no-any-return]

    def get_relation(self, rel_id: str) -> Relation:
        """Return a relation by id."""
        return self.get_typed(rel_id, Relation, "relation")[1]  # type: ignore[no-any-return]

    def id_hint(self, missing: str) -> str:
        """Return 'did you mean X? ' for a mistyped record id, or ''."""
        return lookup.id_hint(self.files, missing)

    def topic_hint(self, missing: str) -> str:
        """Return 'did you mean X? ' for a mistyped topic id, or ''."""
        return lookup.topic_hint(self.files, missing)

    def known_repos(self) -> set[str]:
        """Return the code-repo names this vault knows: registered here, in .am/vault.yml, or named by records."""
        from am.writes.lookup import known_repos

        return known_repos(self.files)

    def list_topics(self, *, kind: str | None = None) -> list[Topic]:
        """Return topics, sorted by id."""
        out = [r for _, r in self.files.record_pairs("topic")
               if isinstance(r, Topic) and (kind is None or r.kind == kind)]
        return sorted(out, key=lambda t: t.id)

    def list_facts(self, *, topic: str | None = None, status: str | None = None,
                   repo: str | None = None) -> list[Fact]:
        """Return facts, oldest first."""
        out = [r for _, r in self.files.record_pairs("fact", topic, status) if isinstance(r, Fact)
               and (topic is None or topic in r.topics)
               and (status is None or r.status == status) and (repo is None or r.repo == repo)]
        return sorted(out, key=lambda f: (f.created or "", f.id))

    def list_relations(self, *, topic: str | None = None, status: str | None = None,
                       rel: str | None = None) -> list[Relation]:
        """Return relations (of one type: ``rel``), sorted by id."""
        out = [r for _, r in self.files.record_pairs("relation", None if rel else topic, status, rel)
               if isinstance(r, Relation) and (topic is None or topic in (r.from_, r.to))
               and (status is None or r.status == status) and (rel is None or r.rel == rel)]
        return sorted(out, key=lambda r: r.id)

    # ------------------------------------------------------------ writing: each calls into am/writes once

    def add_topic(self, *, title: str, kind: str = "concept", id: str | None = None,
                  aliases: Sequence[str] = (), tags: Sequence[str] = (), body: str = "") -> WriteResult:
        """Add a topic; its id is ``<kind>-<slug of title>`` unless given."""
        if kind not in TOPIC_KINDS:
            raise InvalidRecordError(f"unknown kind {kind!r}; use one of: {', '.join(TOPIC_KINDS)}", field="kind")
        check_one_line("--alias", *aliases)
        check_one_line("--tag", *tags)
        tid = check_id(id) if id else topic_id(kind, title)
        self.writer.ensure_new(tid)
        topic = Topic(id=tid, kind=kind, title=title.strip(), body=body_of(body), aliases=tuple(aliases),
                      tags=tuple(tags), created=format_timestamp(_now()))
        check_names_free(self.files, tid, topic_names(topic, path := topic_path(self.files, tid, topic)))
        return self.writer.write([(path, topic, None)], noun="topic", verb="add", ids=[tid], summary=title)

    def add_fact(self, draft: FactDraft | str, /, *, create_topics: bool = False, allow_secrets: bool = False,
                 unverified: bool = False, **fields: Any) -> WriteResult:
        """Add a fact about one or more topics, in one commit (with any topics it creates).

        ``draft`` is a ``FactDraft``, or the fact's text with the draft's fields as keywords.
        Its world is checked first (DESIGN §5.7): a registered repo, a branch and commit its clone has,
        the commit stored in full; a branch without a commit records that branch's tip. ``unverified``
        records the world as given. A fact already recorded writes nothing (am/writes/duplicates.py).
        """
        return facts.add_fact(self.writer, FactDraft.of(draft, fields), create_topics=create_topics,
                              allow_secrets=allow_secrets, unverified=unverified)

    def supersede_fact(self, old_id: str, draft: FactDraft | str, /, *, reason: str, create_topics: bool = False,
                       allow_secrets: bool = False, unverified: bool = False, **fields: Any) -> WriteResult:
        """Replace a fact with a new one, in one commit touching both files.

        The new fact inherits the old one's topics and world unless given. The old
        fact is marked superseded only when the new one holds wherever it did (same
        repo, no narrower branch or later commit); otherwise it stays active and
        the supersession is resolved per world (DESIGN §5.6).
        """
        return facts.supersede_fact(self.writer, old_id, FactDraft.of(draft, fields), reason=reason,
                                    create_topics=create_topics, allow_secrets=allow_secrets, unverified=unverified)

    def set_fact_status(self, fact_id: str, status: str, *, reason: str | None = None,
                        verb: str = "status") -> WriteResult:
        """Change a fact's status (active, contested, pending-review, expired, superseded)."""
        return facts.set_fact_status(self.writer, fact_id, status, reason=reason, verb=verb)

    def expire_fact(self, fact_id: str, *, reason: str) -> WriteResult:
        """Mark a fact expired: it no longer holds anywhere, and stays in the vault."""
        if not reason.strip():
            raise UsageError("expiring a fact needs a reason", hint="pass --reason 'why it no longer holds'")
        return self.set_fact_status(fact_id, "expired", reason=reason, verb="expire")

    def confirm_fact(self, fact_id: str, *, commit: str | None = None, unverified: bool = False) -> WriteResult:
        """Re-observe a fact at a newer commit (default: its branch's tip), in one commit (am/writes/worldwrites.py)."""
        from am.writes.worldwrites import confirm_fact

        return confirm_fact(self.writer, fact_id, commit=commit, unverified=unverified)

    def pin_fact(self, fact_id: str, *, pinned: bool = True) -> WriteResult:
        """Set or clear a fact's ``pinned: true`` (pinned facts come first in every pack), in one commit."""
        from am.writes.worldwrites import pin_fact

        return pin_fact(self.writer, fact_id, pinned=pinned)

    def write_files(self, files: Sequence[tuple[PurePosixPath, bytes, str | None]], *, subject: str) -> str:
        """Commit files that are not records (session logs, settings) as they are (am/writes/filewrites.py)."""
        from am.writes.filewrites import write_files

        return write_files(self.writer, files, subject=subject)

    def record_repo(self, name: str, remote: str | None) -> str | None:
        """Write a code repo's remote URL into .am/vault.yml in one commit; None when it names one already."""
        from am.writes.worldwrites import record_repo

        return record_repo(self.writer, name, remote)

    def edit_fact(self, fact_id: str, text: str, *, allow_secrets: bool = False,
                  provenance: str | None = None) -> WriteResult:
        """Fix a fact's text (a typo) in one commit, keeping its id; its provenance becomes the editor's."""
        from am.writes.renames import edit_fact

        return edit_fact(self.writer, fact_id, text, allow_secrets=allow_secrets, provenance=provenance)

    def rename_topic(self, old_id: str, new_id: str, *, title: str | None = None) -> WriteResult:
        """Rename a topic and rewrite every reference to it (facts, relations, wikilinks) in one commit."""
        from am.writes.renames import rename_topic

        return rename_topic(self.writer, old_id, new_id, title=title)

    def setup_obsidian(self) -> tuple[str | None, list[str]]:
        """Write Obsidian templates and settings the vault lacks (never a person's), in one commit."""
        from am.writes.obsidian import setup_obsidian

        return setup_obsidian(self.writer)

    def add_relation(self, from_id: str, rel: str, to_id: str, *, note: str = "",
                     allow_secrets: bool = False) -> WriteResult:
        """Add a typed edge between two topics or facts (or reactivate an expired one)."""
        from am.records.model import RELATION_TYPES
        from am.records.schemas import relation_type_error

        if rel not in RELATION_TYPES:
            raise relation_type_error(rel)
        files, writer = self.files, self.writer
        for end, value in (("from", from_id), ("to", to_id)):
            check_id(value, field=end)
            if files.locate(value) is None:
                raise NotFoundError(f"unknown record {value!r} in '{end}'",
                                    hint=f"create it first: am topic add {value} --title ...")
        rid = relation_id(from_id, rel, to_id)
        existing = files.locate(rid)
        body = body_of(note) if note.strip() else relation_body(files, from_id, rel, to_id)
        if existing is not None:
            path, old, base = writer.existing_for_update(rid, Relation, "relation")
            if old.status == "active":
                raise CollisionError(f"relation {rid} already exists", hint="it is active; nothing to do")
            updated = replace(old, status="active", body=body if note.strip() else old.body)
            return writer.write([(path, updated, base)], noun="relation", verb="add", ids=[rid],
                                allow_secrets=allow_secrets)
        relation = Relation(id=rid, rel=rel, from_=from_id, to=to_id, body=body, created=format_timestamp(_now()))
        path = record_path("relation", rid, relation.created)
        return writer.write([(path, relation, None)], noun="relation", verb="add", ids=[rid],
                            allow_secrets=allow_secrets)

    def expire_relation(self, rel_id: str, *, reason: str | None = None) -> WriteResult:
        """Mark a relation expired (relations are never deleted)."""
        path, rel, base = self.writer.existing_for_update(rel_id, Relation, "relation")
        if rel.status == "expired":
            raise UsageError(f"{rel_id} is already expired")
        updated = replace(rel, status="expired", reason=one_line(reason) if reason else rel.reason)
        return self.writer.write([(path, updated, base)], noun="relation", verb="expire", ids=[rel_id],
                                 reason=reason)

    def import_batch(self, items: Sequence[tuple[PurePosixPath, Record, str | None]], *, source: str,
                     allow_secrets: bool = False) -> WriteResult:
        """Write one batch of an import as one commit: (path, record, blob it replaces or None for a new file)."""
        return self.writer.write(items, noun="import", verb="batch", ids=[r.id for _, r, _ in items],
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
