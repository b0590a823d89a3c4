"""`am purge`: take a fact's text out of the vault's history (DESIGN §15, the second level).

The fact is forgotten first (its file becomes a tombstone, one commit), then every local
branch's history is rewritten so that no commit holds any version of its text: the record's
file is the tombstone at every commit and path it had, any other file or commit message has
the text replaced by ``[purged]`` (am/git/rewrite.py). The old tips stay under
``refs/am/purged/`` until ``am purge --prune`` deletes them with the reflogs and unreachable
objects. An audit line (ids, reason, who, when, the first commits that held the text; never
the text) is appended to ``.am/purges.jsonl`` in its own commit, which is how `am sync` on
any clone knows a history that must not be merged back.

History a remote already has is refused unless ``--published``: rewriting it means every
clone and the remote must follow, and the command says exactly how.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from am.errors import UsageError

__all__ = ["PURGE_LOG", "PurgeResult", "purge", "purged_commits", "needles_of"]

PURGE_LOG = ".am/purges.jsonl"
_LINE = 20  # a line of the text this long or longer is purged wherever it is quoted


@dataclass(frozen=True)
class PurgeResult:
    """What a purge did: the ids, the branches moved, the commits rewritten, the backup refs, the audit commit."""

    ids: tuple[str, ...]
    branches: dict[str, tuple[str, str]]
    rewritten: int
    backup: tuple[str, ...]
    first_holding: tuple[str, ...]
    audit_commit: str | None
    remotes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"ids": list(self.ids), "branches": {k: {"old": o, "new": n} for k, (o, n) in self.branches.items()},
                "rewritten": self.rewritten, "backup": list(self.backup), "first_holding": list(self.first_holding),
                "audit_commit": self.audit_commit, "remotes": list(self.remotes)}


def needles_of(vault: Any, record_id: str) -> tuple[list[bytes], set[str]]:
    """Return every text a record's versions said (whole, and each long line) and every path it had."""
    from am.upkeep.audit import record_history
    from am.writes.forget import TOMBSTONE

    texts: set[str] = set()
    paths: set[str] = set()
    for version in record_history(vault, record_id).versions:
        paths.add(version.path)
        body = version.body.strip()
        if not body or body.startswith(TOMBSTONE):
            continue
        texts.add(body)
        texts.update(line.strip() for line in body.splitlines() if len(line.strip()) >= _LINE)
    return [t.encode("utf-8") for t in texts], paths


def purge(vault: Any, ids: list[str], *, reason: str, published: bool, when: str) -> PurgeResult:
    """Forget each fact (if not yet), rewrite local history without its text, and record the purge."""
    from am.git.rewrite import dirty_paths, reachable_holding, rewrite_history
    from am.records.model import Fact
    from am.writes.forget import forget_fact, is_tombstone

    if not reason.strip():
        raise UsageError("a purge needs a reason (it is kept in the audit line, never the text)",
                         hint='pass --reason "..."')
    store = vault.store
    dirty = dirty_paths(store)
    if dirty:
        raise UsageError(f"the vault has uncommitted changes ({', '.join(dirty[:3])}); a purge rewrites history",
                         hint="commit or set them aside first (git stash), then purge")
    facts = [vault.get_typed(fid, Fact, "fact")[1] for fid in ids]  # every id is a fact, before anything is written
    needles: list[bytes] = []
    paths: set[str] = set()
    for fact in facts:
        found, where = needles_of(vault, fact.id)
        needles += found
        paths |= where
    if not needles:
        raise UsageError(f"no version of {', '.join(ids)} holds text to purge", hint="nothing to do")
    remotes = tuple(reachable_holding(store, needles, "refs/remotes/"))
    if remotes and not published:
        raise UsageError(f"the text is in history a remote already has ({', '.join(remotes)}); purging rewrites it",
                         hint="pass --published to rewrite it anyway; then the remote and every clone must follow "
                              "(am purge prints how)")
    for fact in facts:
        if not is_tombstone(fact):
            forget_fact(vault.writer, fact.id, reason=reason, actor=vault.actor, when=when)
    tombstones = {}
    for fact in facts:
        path, _ = vault.get(fact.id)
        data = (vault.root / path).read_bytes()
        tombstones.update({p: data for p in needles_of(vault, fact.id)[1] | {str(path)}})
    stamp = when.replace(":", "").replace("-", "")[:15]
    with store.write_lock(op="vault.purge"):
        done = rewrite_history(store, needles, tombstones, [f.id for f in facts], stamp=stamp,
                               reflog=f"am purge {' '.join(ids)}: {reason}")
    audit = _record(vault, [f.id for f in facts], reason, when, done.first_holding)
    _drop_cache(vault)
    return PurgeResult(tuple(f.id for f in facts), done.branches, done.commits_rewritten, done.backup,
                       done.first_holding, audit, remotes)


def _record(vault: Any, ids: list[str], reason: str, when: str, first: tuple[str, ...]) -> str:
    """Append the audit line to .am/purges.jsonl and commit it: ids, reason, who, when; never the text."""
    from am.git import Change

    path = vault.root / PURGE_LOG
    before = path.read_bytes() if path.is_file() else b""
    line = json.dumps({"time": when, "actor": vault.actor, "ids": ids, "reason": reason,
                       "first_holding": list(first)}, ensure_ascii=False, sort_keys=True) + "\n"
    authorship = vault.authorship
    message = authorship.message("vault", "purge", ids, reason=reason, subject=f"vault: purge {' '.join(ids)}")
    with vault.store.write_lock(op="vault.purge"):
        commit = vault.store.commit([Change(PurePosixPath(PURGE_LOG), before + line.encode("utf-8"))],
                                    message=message, author=authorship.author(), committer=authorship.committer())
    return str(commit)


def purged_commits(text: str) -> set[str]:
    """Return the commits a purge log names as the first to hold purged text (any history with one holds it)."""
    out: set[str] = set()
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.update(str(c) for c in entry.get("first_holding", []) if isinstance(c, str))
    return out


def _drop_cache(vault: Any) -> None:
    """Delete the cache's index and vectors (freed SQLite pages can keep old text); rebuilt on the next read."""
    vault.files.close()
    folder = vault.root / ".am" / "cache"
    for pattern in ("index.sqlite*", "vec*"):
        for path in folder.glob(pattern):
            if path.is_file():
                path.unlink(missing_ok=True)
