"""Recovery: am commits a branch lost, and the debris of interrupted writes.

``find_lost`` lists am commits that no branch reaches any more (a ``git reset
--hard``, a bad rebase): the reflogs first, then every object in the database.
``restore`` replays each one on the current branch as a new commit — a
cherry-pick made with a three-way tree merge, so history is never rewritten and
the original message, author and trailers are kept, plus ``Am-Restored-From``.

``diagnose`` / ``repair`` are ``am doctor``: stale Git locks, am's temp files,
orphan record files left by a write that was killed before its commit, Git
index entries a killed write did not update, the cache, a branch that moved
backwards, and every error ``am check`` finds (one health model: doctor is
check plus the repository).

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from am.errors import AmError, ConflictError, InvalidRecordError
from am.git.coord.inflight import pid_alive
from am.records.ids import RECORD_DIRS

__all__ = ["LostCommit", "Restored", "Finding", "find_lost", "restore", "diagnose", "repair"]

_TOPS = tuple(RECORD_DIRS.values())
_TEMP = re.compile(r"^\.(?P<name>.+)\.am-(?P<pid>\d+)\.tmp$")
_INDEX_TEMP = re.compile(r"^(?P<what>index|check-memo)\.(?P<pid>\d+)(?:\.[0-9a-f]+)?\.tmp$")  # a Git index, am check's memo
_REVERTS = re.compile(r"^This reverts commit ([0-9a-f]{40})\b", re.MULTILINE)  # git revert's message
_REWRITES = (("commit (amend)", "git commit --amend"), ("rebase", "git rebase"), ("pull --rebase", "git pull --rebase"))
_QUEUED = re.compile(r"^\.?(?P<pid>\d+)-\d+-[0-9a-f]+\.(req|claimed|done|tmp|done\.tmp)$")  # am/git/coord/spool.py


@dataclass(frozen=True)
class LostCommit:
    """A commit no branch reaches any more: an am write, or (``manual``) a hand commit among them."""

    commit: str
    found_by: str
    time: str
    actor: str
    op: str
    records: tuple[str, ...]
    subject: str
    manual: bool = False
    reverts: str | None = None  # a hand commit made by git revert of a lost am commit listed before it
    rewritten: str | None = None  # the user's own history rewrite that replaced it (git commit --amend, git rebase)
    conflicts: bool = False  # replaying it (after those listed before it) conflicts with the branch

    @property
    def replayed(self) -> bool:
        """Whether restoring replays it: am's own writes, and git reverts of them lost with them."""
        return not self.manual or self.reverts is not None

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the lost commit."""
        return {"commit": self.commit, "found_by": self.found_by, "time": self.time, "actor": self.actor,
                "op": self.op, "records": list(self.records), "subject": self.subject, "manual": self.manual,
                "reverts": self.reverts, "rewritten": self.rewritten, "conflicts": self.conflicts}


@dataclass(frozen=True)
class Restored:
    """What restoring one lost commit did: the new commit, or why there is none."""

    lost: str
    commit: str | None
    outcome: str  # restored, already-present, conflict, not-replayed
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the outcome."""
        return {"lost": self.lost, "commit": self.commit, "outcome": self.outcome, "detail": self.detail}


def _are(count: int) -> str:
    return f"{count} am commit{'s are' if count != 1 else ' is'}"


def _restored_ids(store: Any) -> set[str]:
    out = set()
    for info in store.walk():
        for key, value in info.trailers():
            if key == "Am-Restored-From":
                out.add(value.strip())
    return out


def _with_am_commits(infos: list[Any], am_ids: set[str]) -> set[str]:
    """Return the lost commits that share lost history (parent links among them) with a lost am commit."""
    group = {info.id: info.id for info in infos}

    def root(cid: str) -> str:
        while group[cid] != cid:
            group[cid] = group[group[cid]]
            cid = group[cid]
        return cid

    for info in infos:
        for parent in info.parents:
            if parent in group:
                group[root(info.id)] = root(parent)
    with_am = {root(cid) for cid in am_ids}
    return {cid for cid in group if root(cid) in with_am}


def _rewritten_by(message: str) -> str | None:
    """Return the Git command a reflog message names when it is a history rewrite the user made, else None."""
    return next((name for prefix, name in _REWRITES if message.startswith(prefix)), None)


def find_lost(vault: Any, *, scan_objects: bool = True, include_manual: bool = False,
              leave_rewritten: bool = False) -> list[LostCommit]:
    """Return am commits that no branch reaches and that were not restored yet, oldest first.

    The lost chain is judged in order, as ``restore`` replays it: a commit whose
    change is already there once the ones before it are replayed is left out
    (a killed write whose files doctor committed), so a supersede that a later
    lost undo took back is listed with that undo, not alone. With
    ``include_manual``, commits made by hand in the same lost history are
    listed too (``manual``): am does not replay them, and says so.

    A commit the newest reflog entry that took it off a branch names as
    ``git commit --amend`` or ``git rebase`` was replaced by the user's own
    rewrite (``rewritten``); with ``leave_rewritten`` the chain is judged as
    replaying only the others would leave it (what ``am doctor --fix`` does).
    """
    from am.upkeep.audit import entry_of

    store = vault.store
    done = _restored_ids(store)
    head = store.head()
    lost = [(info, how) for info, how in store.lost_commits(scan_objects=scan_objects) if info.id not in done]
    entries = {info.id: entry_of(store, info) for info, _ in lost}
    am_ids = {cid for cid, entry in entries.items() if not entry.manual}
    left = store.left_by({info.id for info, how in lost if how == "reflog"}) if lost else {}
    near = _with_am_commits([info for info, _ in lost], am_ids) if include_manual else set()
    tip = head  # the branch as restoring the commits listed so far would leave it (a commit or a tree id)
    out: list[LostCommit] = []
    for info, how in lost:
        entry = entries[info.id]
        reverted = _REVERTS.search(info.message) if entry.manual else None
        reverts = reverted[1] if reverted and any(c.commit == reverted[1] and not c.manual for c in out) else None
        if entry.manual and reverts is None:
            if info.id in near:
                out.append(LostCommit(info.id, how, entry.time, entry.actor, entry.op, entry.records,
                                      info.subject, manual=True))
            continue
        rewritten = _rewritten_by(left.get(info.id, ""))
        conflicts = False
        if tip is not None:
            try:
                picked = store.pick_tree(info.id, tip)
            except ConflictError:
                conflicts = True  # listed; restoring it reports the conflict
            else:
                if picked == store.tree_id(tip):
                    continue  # its change is there already
                if not (leave_rewritten and rewritten):
                    tip = picked
        out.append(LostCommit(info.id, how, entry.time, entry.actor, entry.op, entry.records, info.subject,
                              manual=entry.manual, reverts=reverts, rewritten=rewritten, conflicts=conflicts))
    return out


def _restore_message(message: str, lost: str) -> str:
    text = message.rstrip("\n")
    return f"{text}\nAm-Restored-From: {lost}\n"


def restore(vault: Any, lost: list[LostCommit]) -> list[Restored]:
    """Replay lost am commits on the current branch, oldest first, each as one new commit.

    Hand commits among them (``manual``) are not replayed; each is reported as ``not-replayed``.
    A ``git revert`` of a lost am commit, lost with it, is replayed after it: the undo
    a person made is history too, and the fact it took back stays taken back.
    """
    store = vault.store
    results = []
    if lost:
        vault.writer.check_writable(())  # a vault of a newer format: nothing replayed
    with store.write_lock(op="recover"):
        for item in lost:
            if not item.replayed:
                results.append(Restored(item.commit, None, "not-replayed",
                                        "made by hand (no Am-Op trailer): am replays only its own writes; "
                                        f"look at it with: git show {item.commit[:10]}, and if it is wanted: "
                                        f"git cherry-pick {item.commit[:10]}"))
                continue
            info = store.commit_info(item.commit)
            try:
                new = store.commit_tree(lambda tip, c=item.commit: store.pick_tree(c, tip),
                                        message=_restore_message(info.message, item.commit),
                                        author=(info.author, info.email), committer=vault.authorship.committer())
            except ConflictError as err:
                results.append(Restored(item.commit, None, "conflict", str(err)))
                continue
            if new is None:
                results.append(Restored(item.commit, None, "already-present"))
                continue
            touched = [PurePosixPath(p) for p, _ in store.changed_files(new)]
            vault.writer.after_write(new, touched)
            results.append(Restored(item.commit, new, "restored"))
    return results


@dataclass(frozen=True)
class Finding:
    """One thing am doctor noticed."""

    kind: str
    path: str
    message: str
    fixable: bool

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the finding."""
        return {"kind": self.kind, "path": self.path, "message": self.message, "fixable": self.fixable}


def _orphan_data(vault: Any, path: str) -> tuple[bytes | None, str]:
    """Return the bytes of a work-tree record file am may commit, or None and why not."""
    from am.git.workfiles import read_work_file
    from am.records.codec import (
        MAX_RECORD_BYTES,
        decode_record_bytes,
        parse_record,
        render_record,
    )
    from am.records.schemas import check_record
    from am.upkeep.hookscan import secret_findings

    found = read_work_file(str(vault.root), path, cap=MAX_RECORD_BYTES)
    if found is None or found.data is None:
        return None, f"not a regular file am may read ({found.problem if found else 'gone'})"
    data = found.data
    try:
        text = decode_record_bytes(data, path=path)
        record = parse_record(text, path)
        check_record(record, path=path)
    except (OSError, InvalidRecordError) as err:
        return None, f"not a valid record ({err})"
    if PurePosixPath(path).stem != record.id:
        return None, "its id does not match its file name"
    if render_record(record) != text:
        # Only am's canonical form can be a write am itself was making.
        return None, "not in am's canonical form, so it looks like a person's edit"
    if secret_findings(path, data):
        return None, "it looks like it holds a credential"
    return data, ""


def _deleted_by_git(root: Path, path: str, blob: str) -> str | None:
    """Say which commit of git's deleted this committed version of a record (Git's index had lost it), or None.

    A fact acknowledged by am and deleted by a person's `git commit -a` over an
    index that lacked it (issue 36) is still in the work tree: doctor --fix
    commits it again. One git call per such file, which is rare.
    """
    from am.git.program.transport import git

    try:
        proc = git(root, "log", "-1", "--format=%H%x00%B", "--diff-filter=D", "HEAD", "--", path, check=False)
        if proc.returncode != 0 or "\0" not in proc.stdout:
            return None
        commit, message = proc.stdout.split("\0", 1)
        was = git(root, "rev-parse", "--verify", "-q", f"{commit}^:{path}", check=False).stdout.strip()
    except AmError:
        return None
    if was != blob or "\nAm-Op:" in "\n" + message:
        return None
    return (f"committed by am, then deleted by commit {commit[:10]}, which is not am's (Git's index had lost the "
            "file, and a git commit -a took that for a deletion); am doctor --fix commits it again")


def _candidates(vault: Any) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    store = vault.store
    head = dict(store.tree_files(list(_TOPS)))
    staged = store.staged_entries()
    status = store.work_tree_status()
    return head, staged, status


def diagnose(vault: Any) -> list[Finding]:
    """Return what is wrong with the vault's repository and work tree; change nothing.

    Lost commits count only when a reflog shows the branch once held them: an
    unreachable commit found by scanning objects may be a write that failed
    before it moved the branch, so only ``am recover`` lists those.
    """
    from am.git import hash_blob
    from am.git.workfiles import read_work_file
    from am.records.codec import MAX_RECORD_BYTES

    store = vault.store
    findings: list[Finding] = []
    stale_after = float(os.environ.get("AM_GIT_LOCK_STALE", "60"))
    for lock, age in store.git_locks():
        stale = age >= stale_after or store.left_by_dead_am(lock)
        findings.append(Finding(
            "stale-lock" if stale else "lock", str(lock),
            f"Git lock file, {age:.0f} s old" + ("; no git command should hold a lock this long" if stale
                                                 else "; a git command may be running"),
            stale,
        ))
    am_dir = store.gitdir / "am"
    if am_dir.is_dir():
        for tmp in am_dir.iterdir():
            m = _INDEX_TEMP.match(tmp.name)
            if m and not pid_alive(int(m["pid"])):
                what = "temporary index" if m["what"] == "index" else "half-written check memo"
                findings.append(Finding("temp-file", str(tmp), f"{what} of a killed am process", True))
        queue = am_dir / "queue"
        for item in sorted(queue.iterdir()) if queue.is_dir() else ():
            m = _QUEUED.match(item.name)
            if m and not pid_alive(int(m["pid"])):
                findings.append(Finding("temp-file", str(item), "queued write of a killed am process", True))
    from am.git.program.sparse import hidden_record_folders

    hidden = tuple(f"{top}/" for top in hidden_record_folders(vault.root, store.gitdir))  # am check reports them
    try:
        head, staged, status = _candidates(vault)
    except AmError as err:
        findings.append(Finding("index-damaged", str(store.gitdir / "index"),
                                f"Git's index cannot be read ({err.message}); HEAD's tree can replace it", True))
        head, staged, status = {}, {}, {}
    for path in sorted(status):
        p = PurePosixPath(path)
        m = _TEMP.match(p.name)
        if m and p.parts and p.parts[0] in _TOPS:
            if not pid_alive(int(m["pid"])):
                findings.append(Finding("temp-file", path, "half-written file of a killed am process", True))
            continue
        if not (p.parts and p.parts[0] in _TOPS and p.suffix == ".md") or path.startswith(hidden):
            continue
        found = read_work_file(str(vault.root), path, cap=MAX_RECORD_BYTES)  # never through a link
        source = found.blob_source() if found is not None else None
        on_disk = hash_blob(source) if source is not None else None
        in_head = head.get(path)
        in_index = staged.get(path)
        if on_disk is not None and on_disk == in_head:
            if in_index != in_head:
                findings.append(Finding("index-drift", path,
                                        "committed, but Git's index does not have it (a write was killed "
                                        "before it updated the index)", True))
            continue
        if found is not None and source is None:
            findings.append(Finding("uncommitted", path, f"left alone, not read: {found.problem}", False))
            continue
        if on_disk is None:
            if in_head is not None:
                findings.append(Finding("missing", path, "committed but deleted from the work tree; "
                                        "restore it with: git checkout -- " + path, False))
            continue
        data, why = _orphan_data(vault, path)
        if in_index not in (None, in_head, on_disk):
            data, why = None, "it has staged changes of its own"
        if data is not None:
            deleted = _deleted_by_git(vault.root, path, on_disk) if in_head is None else None
            findings.append(Finding("orphan", path, deleted or (("new" if in_head is None else "changed")
                                    + " record file not committed (a write killed before its commit, "
                                    "or a note not committed yet)"), True))
        else:
            findings.append(Finding("uncommitted", path, f"uncommitted edit left alone: {why}", False))
    findings += [] if hidden else _cache_findings(vault)
    findings += _check_findings(vault)
    findings += _lost_findings(vault)
    from am.upkeep.health import hook_findings  # missing or broken hooks (a fresh clone has none)

    findings += [Finding(h.kind, h.path, h.message, True) for h in hook_findings(vault.root)]
    from am.upkeep.merges import driver_gone, driver_missing

    gone = driver_gone(vault.root)
    if gone is not None:
        findings.append(Finding("merge-driver-broken", "merge.am.driver",
                                f"the merge driver runs {gone}, which is gone, so git merge and git pull take every "
                                "record changed on both sides as a conflict and keep only this side's text; "
                                "register it again with: am hooks install", True))
    if driver_missing(vault.root):
        findings.append(Finding("merge-driver-missing", "merge.am.driver",
                                ".gitattributes names merge=am but this clone has no merge.am.driver, so git merge "
                                "and git pull merge records as text (conflict markers); register it with: "
                                "am hooks install", True))
    return findings


def _lost_findings(vault: Any) -> list[Finding]:
    """Report am commits the branch's reflog shows it lost: replayable, conflicting, or rewritten by the user."""
    ref = vault.store.head_ref()
    try:
        lost = find_lost(vault, scan_objects=False, leave_rewritten=True)
    except AmError as err:
        return [Finding("history", "", f"could not read the reflog: {err}", False)]
    rewritten = [c for c in lost if c.rewritten]
    conflicts = [c for c in lost if not c.rewritten and c.conflicts]
    replayable = [c for c in lost if not c.rewritten and not c.conflicts]
    findings = []
    if replayable:
        findings.append(Finding("branch-moved-back", ref, f"{_are(len(replayable))} no longer on any branch "
                                f"(first: {replayable[0].commit[:10]} {replayable[0].subject}); "
                                f"am recover --apply restores {'them' if len(replayable) > 1 else 'it'}", True))
    if conflicts:
        findings.append(Finding("lost-conflict", ref, f"{_are(len(conflicts))} no longer on any branch and "
                                "conflict with what it holds now (first: "
                                f"{conflicts[0].commit[:10]} {conflicts[0].subject}); am recover lists them: read "
                                "each with git show SHA and edit or supersede those records by hand", False))
    if rewritten:
        first = rewritten[0]
        how = " and ".join(sorted({c.rewritten for c in rewritten if c.rewritten}))
        were = "s were" if len(rewritten) != 1 else " was"
        findings.append(Finding("rewritten", ref, f"{len(rewritten)} am commit{were} replaced by your own {how} "
                                f"(first: {first.commit[:10]} {first.subject}); left as you made it, not a lost "
                                "write (am recover lists them; git reflog expire --expire-unreachable=now --all "
                                "forgets them)", False))
    return findings


def _check_findings(vault: Any) -> list[Finding]:
    """Return ``am check``'s errors as findings: one health model, so doctor never says all good while check fails."""
    from am.upkeep.check import check_vault

    return [Finding("check", issue.path, f"{issue.message} [{issue.code}]; fix the file (am check explains it)",
                    False) for issue in check_vault(vault, worlds=False).errors]  # its world issues are warnings


def _cache_findings(vault: Any) -> list[Finding]:
    """Open the cache, which checks it and rebuilds it when it is corrupt; report a rebuild."""
    opener = getattr(vault, "cache", None)
    if not callable(opener):
        return []
    try:
        index = opener()
    except ImportError:
        return []
    except Exception as err:  # the cache is disposable; report and let the next command rebuild it
        return [Finding("cache", ".am/cache", f"the cache could not be opened: {err}", True)]
    if index is None:
        from am.errors import storage_trouble

        trouble = storage_trouble(Path(vault.root) / ".am" / "cache")
        return [Finding("cache", ".am/cache", "the cache cannot be used" + (f" ({trouble})" if trouble else "")
                        + "; am reads the files instead", True)]
    rebuilt = getattr(index, "rebuilt", None)
    if rebuilt and rebuilt != "missing":
        return [Finding("cache-rebuilt", ".am/cache", f"the cache was {rebuilt}; moved aside and rebuilt", False)]
    return []


def repair(vault: Any) -> list[str]:
    """Fix what ``diagnose`` finds that is safe to fix; return what was done, one line each."""
    from am.git import Change

    store = vault.store
    done: list[str] = []
    try:
        vault.writer.check_writable(())
        refusal = ""
    except AmError as err:  # a vault of a newer format: local repairs only, no commit of this am's
        refusal = str(err)
    with store.write_lock(op="doctor"):
        for lock in store.clear_stale_git_locks():
            done.append(f"moved stale lock aside: {lock}")
        findings = diagnose(vault)
        if any(f.kind == "index-damaged" for f in findings):
            kept = store.rebuild_index()
            done.append(f"rebuilt Git's index from HEAD (the damaged one is kept as {kept})")
            findings = diagnose(vault)
        drift = [PurePosixPath(f.path) for f in findings if f.kind == "index-drift"]
        if drift:
            store.stage_paths(drift)
            done.append(f"updated Git's index for {len(drift)} committed files")
        for f in findings:
            if f.kind == "temp-file":
                try:
                    os.unlink(vault.root / f.path)  # an absolute path stays absolute
                    done.append(f"removed {f.path}")
                except FileNotFoundError:
                    pass
        orphans = [f.path for f in findings if f.kind == "orphan"]
        if orphans:
            changes = []
            ids = []
            for path in orphans:
                data, _ = _orphan_data(vault, path)
                if data is None:
                    continue
                changes.append(Change(PurePosixPath(path), data, base=store.blob_id(path)))
                ids.append(PurePosixPath(path).stem)
            if changes and refusal:
                done.append(f"could not commit {len(changes)} orphan record files: {refusal}")
            elif changes:
                message = vault.authorship.message("doctor", "adopt", ids,
                                         subject=f"doctor: commit {len(changes)} record files left uncommitted")
                commit = store.commit(changes, message=message, author=vault.authorship.author(),
                                      committer=vault.authorship.committer())
                vault.writer.after_write(commit, [c.path for c in changes])
                done.append(f"committed {len(changes)} orphan record files in {commit[:10]}: {', '.join(ids)}")
    if any(f.kind == "cache" for f in findings):
        done += _rebuild_cache(vault)
    if any(f.kind.startswith("hook-") for f in findings):
        from am.upkeep.health import reinstall_hooks

        done += reinstall_hooks(vault.root)
    if any(f.kind in ("merge-driver-missing", "merge-driver-broken") for f in findings):
        from am.upkeep.hookfiles import am_command
        from am.upkeep.merges import set_driver

        set_driver(vault.root, am_command())
        done.append("registered the merge driver (merge.am.driver)")
    if any(f.kind == "branch-moved-back" for f in findings) and refusal:
        done.append(f"could not restore the lost am commits: {refusal}")
    elif any(f.kind == "branch-moved-back" for f in findings):
        lost = find_lost(vault, scan_objects=False, leave_rewritten=True)
        results = restore(vault, [c for c in lost if not c.rewritten and not c.conflicts])
        ok = [r for r in results if r.outcome == "restored"]
        done.append(f"restored {len(ok)} of {len(results)} lost am commit{'s' * (len(results) != 1)}")
        done += [f"could not restore {r.lost[:10]}: {r.detail}" for r in results if r.outcome == "conflict"]
    return done


def _rebuild_cache(vault: Any) -> list[str]:
    opener = getattr(vault, "cache", None)
    try:
        index = opener() if callable(opener) else None
        if index is None:
            return []
        index.rebuild()
    except Exception as err:  # report; the truth is the files, never the cache
        return [f"could not rebuild the cache: {err}"]
    return ["rebuilt the cache"]
