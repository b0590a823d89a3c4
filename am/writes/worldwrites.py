"""World-aware writes: checked worlds, re-confirming a fact, pinning it, recording a code repo's remote.

``checked_draft`` turns the repo, branch and commit a draft names into what is
recorded, or refuses them (DESIGN §5.7); ``confirm_fact`` re-observes a fact at
a newer commit in one commit (DESIGN §5.6); ``record_repo`` writes a code
repo's remote URL into ``.am/vault.yml`` in one commit. Each takes the vault's ``RecordWriter`` or
``RecordFiles``; none calls back into the facade.

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

from dataclasses import replace as replace_draft
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from am.errors import UsageError

if TYPE_CHECKING:
    from am.records.writes import FactDraft, WriteResult
    from am.writes.writer import RecordWriter

__all__ = ["checked_draft", "confirm_fact", "draft_here", "observed_at_head", "pin_fact", "record_repo"]


def checked_draft(draft: FactDraft, repo: str | None, *, unverified: bool) -> FactDraft:
    """Return the draft with its world checked and filled (``repo``: the superseded fact's, inherited).

    Every new fact's draft passes here (add, supersede, session proposals): its one-line values are checked first.
    """
    from am.worlds.checks import verify_world

    draft.check_lines()
    if not (draft.repo or draft.branch or draft.commit):
        return draft
    world = verify_world(draft.repo or repo, draft.branch, draft.commit, unverified=unverified)
    commit = world.commit
    if world.verified and world.repo and commit is None and world.branch is None and draft.paths:
        # Watched paths need a commit to be judged from: without one the fact could never go stale. It was
        # observed in the clone as it is, so at its HEAD (the door says which: observed_at_head).
        from am.worlds.checks import clone_head

        commit = clone_head(world.repo)
    return replace_draft(draft, repo=world.repo, branch=world.branch, commit=commit)


def draft_here(draft: FactDraft, cwd: Path | None = None) -> tuple[FactDraft, str | None]:
    """Fill a draft's repo, branch and commit from the registered clone (or worktree) around ``cwd`` (``--here``).

    Values the draft gives win. When the commit is the checkout's HEAD and the work tree has uncommitted changes
    in the draft's watched paths (or anywhere, when it watches none), the fact is marked ``dirty: true`` and
    the warning to show is returned: HEAD may not hold what the fact says, and the work may be discarded.
    Every door's ``here`` comes through this (the CLI's --here, MCP's here: true).
    """
    from am.worlds.here import find_checkout, uncommitted_in, world_here

    repo, branch, commit = world_here(cwd)
    filled = replace_draft(draft, repo=draft.repo or repo, branch=draft.branch or branch,
                           commit=draft.commit or commit)
    checkout = find_checkout(cwd)
    if draft.commit is not None or checkout is None:  # a commit given: the work tree is not what it names
        return filled, None
    changed = uncommitted_in(checkout.top, draft.paths)
    if not changed:
        return filled, None
    named = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    where = f"in the watched paths ({', '.join(draft.paths)})" if draft.paths else "(the fact watches no --path)"
    return replace_draft(filled, dirty=True), (
        f"the work tree at {checkout.top} has uncommitted changes {where}: {named}. The fact is recorded at HEAD "
        f"{commit[:10]} with dirty: true (am why says so); if that work is discarded, it describes code that "
        "never was. Commit the work first (then am fact confirm ID --commit C), or expire the fact if it goes")


def observed_at_head(draft: FactDraft, record: object) -> str | None:
    """Say which commit a fact given --repo and --path but no branch or commit was recorded at, or None."""
    from am.records.model import Fact

    if draft.branch or draft.commit or not draft.repo or not draft.paths:
        return None
    if not isinstance(record, Fact) or not record.commit:
        return None
    return (f"observed at the HEAD of the clone of {draft.repo}, {record.commit[:10]}: a change to "
            f"{', '.join(draft.paths)} after it makes the fact stale there (to say where it was observed: "
            "--branch B or --commit C)")


def confirm_fact(writer: RecordWriter, fact_id: str, *, commit: str | None = None,
                 unverified: bool = False) -> WriteResult:
    """Re-observe a fact at a newer commit (default: its branch's tip), in one commit.

    The new commit must descend from the old one and be on the fact's branch
    (or that branch be gone from the clone), else the fact
    would stop holding where it held: supersede it instead, on the other
    branch (``am fact supersede ID TEXT --branch B``). A pending-review fact
    becomes active again.
    """
    from am.records.model import Fact, replace
    from am.worlds.checks import verify_world

    path, fact, base = writer.existing_for_update(fact_id, Fact, "fact")
    if fact.repo is None:
        raise UsageError(f"{fact_id} names no repo, so there is no commit to confirm it at",
                         hint="confirm applies to facts observed in a code repository")
    if commit is None and fact.version is None:
        raise UsageError(f"{fact_id} names no branch; say where it was confirmed", hint="pass --commit C")
    checked = verify_world(fact.repo, fact.version if commit is None else None, commit, unverified=unverified)
    new_commit = checked.commit
    if new_commit is None:
        raise UsageError(f"no commit to confirm {fact_id} at", hint="pass --commit C")
    if checked.verified:
        from am.worlds.ancestry import open_clone
        from am.worlds.checks import check_confirm

        store, _ = open_clone(fact.repo)
        if store is not None:
            # The commit must keep the fact in the worlds it held in: on its branch (or that branch merged) ...
            check_confirm(store, fact_id, fact.version, fact.commit, new_commit)
            old = store.find_commit(fact.commit) if fact.commit else None
            if old is not None and not store.is_ancestor(old, new_commit):  # ... and after its commit
                raise UsageError(
                    f"{new_commit[:10]} does not descend from {fact_id}'s commit {old[:10]}",
                    hint="confirming there would stop the fact holding where it held; supersede it instead "
                         "(am fact supersede), or pass --unverified")
    if fact.commit == new_commit and fact.status != "pending-review":
        if commit is None:  # the branch's tip: nothing changed on the fact's own branch
            raise UsageError(
                f"{fact_id} is already observed at {new_commit[:10]}, the tip of its branch {fact.version}",
                hint=f"where it is stale (am stale --branch B), check it there and, if it no longer holds, "
                     f"am fact supersede {fact_id} \"what holds there\" --branch B --reason \"...\"; "
                     f"or confirm it at a later commit of {fact.version}: --commit C")
        raise UsageError(f"{fact_id} is already observed at {new_commit[:10]}",
                         hint="to re-observe it, pass --commit a newer commit")
    status = "active" if fact.status == "pending-review" else fact.status
    reason = f"confirmed at {fact.repo}@{new_commit[:12]}"
    updated = replace(fact, commit=new_commit, status=status, dirty=False)  # observed again, at a commit
    return writer.write([(path, updated, base)], noun="fact", verb="confirm", ids=[fact_id], reason=reason,
                        subject=f"fact: confirm {fact_id} at {new_commit[:12]}")



def pin_fact(writer: RecordWriter, fact_id: str, *, pinned: bool = True) -> WriteResult:
    """Set or clear a fact's ``pinned: true`` (pinned facts come first in every pack), in one commit."""
    from am.records.model import Fact, replace

    path, fact, base = writer.existing_for_update(fact_id, Fact, "fact")
    if fact.pinned == pinned:
        raise UsageError(f"{fact_id} is already {'pinned' if pinned else 'not pinned'}")
    verb = "pin" if pinned else "unpin"
    return writer.write([(path, replace(fact, pinned=pinned), base)], noun="fact", verb=verb, ids=[fact_id],
                        subject=f"fact: {verb} {fact_id}")


def record_repo(writer: RecordWriter, name: str, remote: str | None) -> str | None:
    """Write a code repo's remote URL into .am/vault.yml in one commit; None when it names one already."""
    from am.git import Change
    from am.records.vaultfile import repos_of, with_repo

    files, store = writer.files, writer.store
    vault_file = PurePosixPath(".am/vault.yml")
    writer.check_writable(())
    known = repos_of(files.settings).get(name)
    if known == (remote or "") and "repos" in files.settings:
        return None
    if known:  # the URL a teammate recorded stays: each machine's clone (a fork, ssh or https) would rewrite it
        return None
    text = (files.root / vault_file).read_text(encoding="utf-8")
    new = with_repo(text, name, remote)
    if new == text:
        return None
    message = writer.authorship.message("vault", "repo", [], subject=f"vault: repo {name}"
                                        + (f" at {remote}" if remote else ""))
    with store.write_lock(op="vault.repo"):
        commit: str = store.commit([Change(vault_file, new.encode("utf-8"), base=store.blob_id(vault_file))],
                                   message=message, author=writer.authorship.author())
    files.settings = files.read_settings()
    return commit
