"""`am sync` and `am merge`: fetch, merge record-aware, push without force, and the same merge of a local branch.

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from am.errors import ConflictError, GitError, UsageError
from am.git import checks
from am.git.program import transport
from am.git.refs import UNKNOWN, failpoint
from am.records.writes import one_line

if TYPE_CHECKING:
    from am.git.program.prewrite import Prewrite
    from am.git.store import GitStore
    from am.records.merge import Decision, TreeMerge
    from am.vault import Vault

__all__ = ["MergePlan", "SyncReport", "merge_branch", "plan_merge", "sync"]

# How many times a push rejected because the remote moved is retried (fetch, merge, push again).
MAX_ROUNDS = 5


@dataclass(frozen=True)
class MergePlan:
    """What merging ``theirs`` into ``ours`` does: nothing, a fast-forward, or a merge commit of these files."""

    action: str  # up-to-date, fast-forward, merge
    ours: str | None
    theirs: str | None
    base: str | None = None
    merge: TreeMerge | None = None
    modes: dict[str, int] = field(default_factory=dict)  # the mode of each merged file the other side set

    @property
    def decisions(self) -> tuple[Decision, ...]:
        return self.merge.decisions if self.merge is not None else ()

    @property
    def contested(self) -> tuple[str, ...]:
        return self.merge.contested if self.merge is not None else ()


@dataclass
class SyncReport:
    """What a sync (or a merge of a branch) did, round by round."""

    remote: str
    branch: str
    dry_run: bool = False
    before: str | None = None
    after: str | None = None
    remote_before: str | None = None
    action: str = "up-to-date"
    merge_commit: str | None = None
    pushed: bool = False
    rounds: int = 0
    decisions: list[Decision] = field(default_factory=list)
    contested: list[str] = field(default_factory=list)
    changed: int = 0
    marked: list[str] = field(default_factory=list)  # records the other side brought with Git's conflict markers

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the report."""
        return {
            "remote": self.remote, "branch": self.branch, "dry_run": self.dry_run, "before": self.before,
            "after": self.after, "remote_before": self.remote_before, "action": self.action,
            "merge_commit": self.merge_commit, "pushed": self.pushed, "rounds": self.rounds,
            "changed_files": self.changed, "contested": list(self.contested),
            "conflict_markers": list(self.marked),
            "decisions": [{"id": d.id, "path": d.path, "how": d.how, "detail": d.detail} for d in self.decisions],
        }


def plan_merge(store: GitStore, ours: str | None, theirs: str | None) -> MergePlan:
    """Decide how ``theirs`` joins ``ours``, computing the record-aware merge when histories diverged."""
    from am.git import remote
    from am.records.merge import merge_changes

    if theirs is None or theirs == ours or (ours is not None and store.is_ancestor(theirs, ours)):
        return MergePlan("up-to-date", ours, theirs)
    from am.writes.formats import check_formats_at, settings_at

    if ours is None or store.is_ancestor(ours, theirs):
        settings_at(store, theirs)  # a vault.yml no command could read afterwards is not taken in (issue 36.14)
        return MergePlan("fast-forward", ours, theirs)

    check_formats_at(store, ours, theirs)
    base = remote.merge_base(store, ours, theirs)
    mine_modes: dict[str, int] = {}
    other_modes: dict[str, int] = {}
    mine = dict(store.tree_changes(base, ours, modes=mine_modes))
    other_changes = store.tree_changes(base, theirs, modes=other_modes)
    remote.check_incoming(other_changes, theirs)  # before any of it reaches the merge's tree
    remote.check_record_sizes(other_changes, store.blob_size, theirs)  # before the merge reads one whole
    other = dict(other_changes)
    both = [p for p in other if p in mine and mine[p] != other[p]]
    base_ids = {p: (store.blob_id(p, commit=base) if base is not None else None) for p in both}

    def exists(path: str) -> str | None:
        return store.blob_id(path, commit=ours)

    merged = merge_changes(mine, other, base=base_ids, read=store.read_object, exists=exists)
    unmerged = [p for p in merged.conflicts if _LINK in (mine_modes.get(p), other_modes.get(p))]  # no line merge of links
    for path in merged.conflicts:
        if path in unmerged:
            continue
        # Not a record (.gitignore, .gitattributes, .am/vault.yml): Git's line merge, when the lines do not clash.
        old, mine_id, other_id = base_ids.get(path), mine[path], other[path]
        assert mine_id is not None and other_id is not None
        if any(store.blob_size(b) > _TEXT_MERGE_MAX for b in (old, mine_id, other_id) if b is not None):
            unmerged.append(path)  # a large file changed on both sides: Git's to merge, not held in memory here
            continue
        text = transport.merge_text(None if old is None else store.read_object(old), store.read_object(mine_id),
                                    store.read_object(other_id))
        if text is None:
            unmerged.append(path)
        else:
            merged.files[path] = text
    if unmerged:
        from am.writes.obsidian import LAYOUT_FILES

        layout = [p for p in unmerged if p in LAYOUT_FILES]
        raise ConflictError(
            f"both sides changed {', '.join(unmerged[:5])} in the same lines, and they are not records am can merge",
            hint="merge by hand (git merge), commit, then run am sync again; nothing was changed"
                 + (f". {layout[0]} is Obsidian's window layout of one machine, not memory: keep either side's "
                    f"(git checkout --ours {layout[0]}), and keep it out of Git from then on: am obsidian setup "
                    f"lists it in .gitignore, then git rm --cached {layout[0]} and commit" if layout else ""),
        )
    return MergePlan("merge", ours, theirs, base, merged,
                     _merged_modes(store, base, merged.files, mine, mine_modes, other_modes, other))


_FILE, _LINK = 0o100644, 0o120000
# A file that is not a record and changed on both sides is merged line by line by git merge-file, which am feeds
# from memory: above this size it is left to a person (git merge), as a conflict, never read whole.
_TEXT_MERGE_MAX = 8 << 20


def _merged_modes(store: GitStore, base: str | None, files: dict[str, bytes | str | None], mine: dict[str, str | None],
                  mine_modes: dict[str, int], other_modes: dict[str, int],
                  other: dict[str, str | None]) -> dict[str, int]:
    """The mode each merged file the other side changed takes, as git's three-way merge of modes decides.

    The side that changed the mode since the base wins (an executable made on
    one machine stays one); changed on both, ours. Files only ours changed keep
    the mode ours has (the merge tree is built on ours).
    """
    modes: dict[str, int] = {}
    for path, data in files.items():
        if data is None or path not in other:
            continue
        theirs_mode = other_modes.get(path, _FILE)
        if path not in mine:
            modes[path] = theirs_mode
            continue
        ours_mode = mine_modes.get(path, _FILE)
        if ours_mode != theirs_mode:
            try:
                base_mode = int(store.repo[base].tree[path].filemode) if base is not None else None
            except KeyError:
                base_mode = None
            modes[path] = theirs_mode if ours_mode == base_mode else ours_mode
        else:
            modes[path] = ours_mode
    return modes


def _preview(report: SyncReport, store: GitStore, plan: MergePlan) -> None:
    """Fill a dry run's report with what the plan would change: the files, and each record a fast-forward brings."""
    from am.records.merge import merge_changes

    report.decisions, report.contested = list(plan.decisions), list(plan.contested)
    if plan.action == "merge" and plan.merge is not None:
        report.changed = len(plan.merge.files)
    elif plan.action == "fast-forward":
        # Every record the other side changed comes as it is: a union, as the merge names one side's change.
        theirs = dict(store.tree_changes(plan.ours, plan.theirs))
        brought = merge_changes({}, theirs, base={}, read=store.read_object, exists=lambda _path: None)
        report.changed, report.decisions = len(theirs), list(brought.decisions)


def _message(vault: Vault, plan: MergePlan, what: str, op: str) -> str:
    decided = [d for d in plan.decisions if d.how not in ("union", "deleted")]
    added = sum(1 for d in plan.decisions if d.how == "union")
    subject = f"sync: merge {what}" + (f" ({len(decided)} records decided" if decided else "")
    if decided:
        subject += f", {len(plan.contested)} contested)" if plan.contested else ")"
    lines = [one_line(subject, limit=120), ""]
    lines.append(f"Am-Merge-Base: {plan.base or 'none'}")
    lines.append(f"Am-Merge-Added: {added}")
    lines.append(f"Am-Op: {op}")
    for rid in dict.fromkeys(d.id for d in decided):
        lines.append(f"Am-Record: {rid}")
    for d in decided:
        lines.append(f"Am-Decision: {one_line(d.trailer(), limit=300)}")
    lines.append(f"Am-Actor: {vault.actor}")
    return "\n".join(lines) + "\n"


def apply_plan(vault: Vault, plan: MergePlan, *, what: str, op: str, again: str,
               ahead: Prewrite | None = None) -> tuple[str | None, str | None, list[str]]:
    """Carry out a plan on the vault's branch; return (new tip, merge commit, changed paths). Hold write_lock.

    ``again``: the command to run again once an edit in the way is dealt with, and the one that
    finishes the merge if the file system stops it part way.
    """
    from am.git import remote

    store = vault.store.opened()
    if plan.action == "up-to-date":
        return plan.ours, None, []
    assert plan.theirs is not None
    commit = staged = None
    target = plan.theirs
    if plan.action == "merge":
        assert plan.merge is not None and plan.ours is not None
        staged = remote.merge_commit(
            store, plan.ours, plan.merge.files, [plan.ours, plan.theirs], message=_message(vault, plan, what, op),
            author=vault.authorship.author(), committer=vault.authorship.committer(), modes=plan.modes)
        commit = target = staged.commit
    try:
        paths = remote.advance(store, target, expected=plan.ours, reflog=f"{op}: {plan.action} {what}",
                               staged=staged, ahead=ahead, again=again, source=plan.theirs)
    except OSError as err:
        if not (store._am_dir / transport.JOURNAL).exists():
            raise  # stopped before the journal: nothing was changed
        from am.errors import storage_error

        raise storage_error(err, "finish the merge", then=(
            f"run {again}: it finishes this merge from where it stopped (its files so far are the merge's own; "
            "nothing is lost)")) from None
    return target, commit, paths


def _refresh_cache(vault: Vault) -> None:
    """Bring an open cache up to date; one not open yet catches up from the tree diff when next read (as after a write)."""
    import logging

    cache = vault.files.held_cache()
    if cache is None:
        return
    try:
        cache.refresh()
    except Exception as err:  # noqa: BLE001 - the merge stands; the next command catches up
        logging.getLogger("am").warning("could not update the search cache after sync (%s)", err)


def marked_records(store: GitStore, old: str | None, new: str) -> list[str]:
    """Return ``path:line`` of each record file changed from ``old`` to ``new`` that holds Git's conflict markers.

    Only files a commit that is not an am write changed are read (a hand commit, a merge Git made): am's
    writes put no markers in records, so a vault agents write costs a walk of the commits, not a read of
    every file they wrote.
    """
    from am.records.merge import conflict_marker_line, is_record_path

    walker = store.repo.walk(new)
    if old is not None:
        walker.hide(old)
    touched: set[str] = set()
    for commit in walker:
        if "\nAm-Op: " in commit.message:
            continue
        parent = str(commit.parent_ids[0]) if commit.parent_ids else None
        touched.update(path for path, blob in store.tree_changes(parent, str(commit.id)) if blob is not None)
    if not touched:
        return []
    found = []
    for path, blob in store.tree_changes(old, new):
        if blob is None or path not in touched or not is_record_path(path) or store.blob_size(blob) > _TEXT_MERGE_MAX:
            continue  # (a file that large is no record am reads: not read whole to look for markers)
        data = store.read_object(blob)
        if b"<<<<<<<" in data or b">>>>>>>" in data:
            line = conflict_marker_line(data.decode("utf-8", "replace"))
            if line is not None:
                found.append(f"{path}:{line}")
    return found


def refuse_markers(store: GitStore, ours: str | None, theirs: str | None) -> None:
    """Refuse to publish record files that hold Git's conflict markers: a git merge or git pull made without am's
    merge driver (a plain git clone has none) and committed without its pre-commit hook.

    Only what this side would push is read: the record files its commits changed since the merge base.
    """
    if ours is None or ours == theirs or (theirs is not None and store.is_ancestor(ours, theirs)):
        return  # nothing of ours to publish
    from am.git import remote

    found = marked_records(store, remote.merge_base(store, ours, theirs) if theirs is not None else None, ours)
    if found:
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        raise ConflictError(
            f"{', '.join(found[:3])}{more}: Git's conflict markers (<<<<<<<, >>>>>>>) are committed in a record "
            "this vault would push, from a git merge or git pull made without am's merge driver; am sync does not "
            "publish them",
            hint="resolve each file (keep one text, delete the marker lines; am check lists them) and commit, "
                 "then run am hooks install (so git pull merges records as am sync does), then am sync again; "
                 "nothing was merged or pushed")


def refuse_purged(store: GitStore, ours: str | None, theirs: str | None, where: str) -> None:
    """Refuse to merge a history that still holds text the other side purged (am purge, .am/purges.jsonl).

    Merging it would bring the purged text back as an ancestor of the merge; each side is told what to do.
    """
    if ours is None or theirs is None or ours == theirs:
        return
    from am.upkeep.purge import PURGE_LOG, purged_commits

    def listed(tip: str) -> set[str]:
        data = store.read_blob(PURGE_LOG, commit=tip)
        return purged_commits(data.decode("utf-8", "replace")) if data else set()

    def holds(tip: str, commits: set[str]) -> list[str]:
        return [c for c in sorted(commits) if store.find_commit(c) is not None and store.is_ancestor(c, tip)]

    if found := holds(ours, listed(theirs) - listed(ours)):
        raise ConflictError(
            f"{where}'s history was purged (am purge: .am/purges.jsonl names the text's first commit "
            f"{found[0][:10]}), and this clone's history still holds that text; am sync does not merge it back",
            hint=f"keep what only this clone has (git log {where}..HEAD), then take the purged history: "
                 f"git fetch && git reset --keep {where}; re-add the kept facts; then am purge --prune here; "
                 "nothing was merged or pushed")
    if found := holds(theirs, listed(ours) - listed(theirs)):
        raise ConflictError(
            f"this vault's history was purged (am purge), and {where} still holds the text (first commit "
            f"{found[0][:10]}); am sync does not merge it back",
            hint=f"publish the purged history: git push --force-with-lease {where.replace('/', ' ', 1)}; then every "
                 "other clone runs am sync and follows what it says; nothing was merged or pushed")


def _resolve_remote(store: GitStore, branch: str, remote_arg: str | None) -> tuple[str, str]:
    from am.git import remote

    tracked = remote.upstream(store, branch)
    if remote_arg:
        return remote_arg, tracked[1] if tracked and tracked[0] == remote_arg else branch
    if tracked:
        return tracked
    names = remote.remote_names(store)
    if "origin" in names:
        return "origin", branch
    if len(names) == 1:
        return names[0], branch
    raise UsageError("this vault has no remote to sync with" if not names else
                     f"this vault has several remotes ({', '.join(names)}) and its branch tracks none",
                     hint="name one (am sync origin) or set one: am sync --set-upstream URL")


def _quick(vault: Vault, remote_arg: str | None, dry_run: bool) -> SyncReport | tuple[str, str, str | None] | None:
    """Fetch the tracked remote without pygit2; return a report when there is nothing to do, else what was fetched.

    None: this vault needs the full path (no upstream, a move under way, unusual refs).
    """
    fetched = transport.fetch_tracked(vault.root, remote_arg)
    if fetched is None:
        return None
    name, remote_branch, theirs, ours = fetched
    if transport.up_to_date(fetched):
        return SyncReport(remote=name, branch=remote_branch, dry_run=dry_run, before=ours, after=ours,
                          remote_before=theirs, rounds=1)
    return name, remote_branch, theirs


def sync(vault: Vault, remote_arg: str | None = None, *, dry_run: bool = False, set_upstream: str | None = None,
         max_rounds: int = MAX_ROUNDS) -> SyncReport:
    """Fetch, merge (fast-forward or one record-aware merge commit) and push without force; retry when the remote moved."""
    checks.check_no_git_operation(vault.store.gitdir)  # before the upstream is set or anything fetched
    fetched = None if set_upstream is not None else _quick(vault, remote_arg, dry_run)
    if isinstance(fetched, SyncReport):
        return fetched  # nothing to fetch, nothing to push: pygit2 was never needed
    # What the fetch brought is written ahead while pygit2 is imported and the merge planned.
    ahead = None if dry_run or fetched is None or fetched[2] in (None, UNKNOWN) else _write_ahead(vault, fetched[2])
    try:
        return _sync(vault, remote_arg, fetched, dry_run=dry_run, set_upstream=set_upstream, max_rounds=max_rounds,
                     ahead=ahead)
    finally:
        if ahead is not None:
            ahead.close()


def _sync(vault: Vault, remote_arg: str | None, fetched: tuple[str, str, str | None] | None, *, dry_run: bool,
          set_upstream: str | None, max_rounds: int, ahead: Prewrite | None) -> SyncReport:
    from am.git import remote
    from am.git.common import _Moved

    store = vault.store.opened()
    ref = store.head_ref()
    branch = ref.removeprefix("refs/heads/")
    restore = None
    if set_upstream is not None:  # "" too: refused as no URL, not taken as no option
        restore = remote.set_upstream(store, remote=remote_arg or "origin", url=set_upstream, branch=branch)
    name, remote_branch = _resolve_remote(store, branch, remote_arg) if fetched is None else fetched[:2]
    report = SyncReport(remote=name, branch=remote_branch, dry_run=dry_run, before=store.branch_tip(ref))
    with store.write_lock(op="sync"):
        remote.resume_advance(store)  # a sync killed while moving the branch is finished first
    lost: tuple[transport.PushResult, str | None] | None = None  # a push the server failed to take, and its tip then
    for round_ in range(1, max_rounds + 1):
        report.rounds = round_
        if round_ == 1 and fetched is not None and fetched[2] != UNKNOWN:
            theirs = fetched[2]
        else:
            try:
                theirs = remote.fetch(store, name, remote_branch)
            except GitError:
                if restore is not None:
                    restore()  # a URL that could not be fetched does not replace the one that worked
                raise
            restore = None
            failpoint("sync-fetched")
        if round_ == 1:
            report.remote_before = theirs
        if lost is not None and lost[1] == theirs:  # the branch did not move: the server refused the update
            raise GitError(f"{name} refused the push of {remote_branch}: {lost[0].message}",
                           hint="the vault is merged locally; fix what the remote says, then run am sync again")
        lost = None
        with store.write_lock(op="sync"):
            ours = store.branch_tip(ref)
            refuse_markers(store, ours, theirs)
            refuse_purged(store, ours, theirs, f"{name}/{remote_branch}")
            plan = plan_merge(store, ours, theirs)
            if plan.action != "up-to-date" and theirs is not None:  # what the other side brings, said, not refused
                report.marked = marked_records(store, plan.base if plan.action == "merge" else ours, theirs)
            if dry_run:
                report.action, report.after = plan.action, ours
                _preview(report, store, plan)
                return report
            try:
                tip, commit, paths = apply_plan(vault, plan, what=f"{name}/{remote_branch}", op="sync.merge",
                                                again="am sync", ahead=ahead)
            except _Moved:
                continue  # a commit landed meanwhile: fetch and plan again
        if plan.action != "up-to-date":
            report.action = "merge" if plan.action == "merge" or report.action == "merge" else plan.action
            report.changed += len(paths)
            report.decisions += plan.decisions
            report.contested += plan.contested
            report.merge_commit = commit or report.merge_commit
            _refresh_cache(vault)
        report.after = tip
        if tip is None or tip == theirs:
            return report
        result = remote.push(store, name, tip, remote_branch)
        if result.status == "refused" and result.lock is not None and remote.clear_remote_lock(store, name, result.lock):
            result = remote.push(store, name, tip, remote_branch)  # a killed push's stale lock, moved aside
        if result.status in ("ok", "up-to-date"):
            report.pushed = result.status == "ok"
            return report
        if result.status == "raced":  # another push may have landed first: the next round's fetch tells
            lost = (result, theirs)
            continue
        if result.status == "refused" and result.lock is not None:
            raise GitError(
                f"{name} refused the push of {remote_branch}: its lock file {result.lock} is there (a push or "
                "another git command under way, or one killed part way that left it)",
                hint="the vault is merged locally; if no git command is running on that repository (no git push to it, "
                     f"no git receive-pack, no git gc), remove the lock: rm {result.lock} - then run am sync again")
        if result.status != "rejected":
            raise GitError(f"{name} refused the push of {remote_branch}: {result.message}",
                           hint="the vault is merged locally; fix what the remote says, then run am sync again")
    raise GitError(f"{name}/{remote_branch} kept moving: {max_rounds} rounds of fetch, merge and push did not land",
                   hint="run am sync again; nothing is lost")


def merge_branch(vault: Vault, branch: str, *, dry_run: bool = False, ahead: Prewrite | None = None) -> SyncReport:
    """Fold a vault branch (an agent's, say) into the current branch with the record-aware merge.

    ``ahead``: files already being written ahead for this merge (am.git.program.prewrite), which the caller closes;
    by default this starts its own.
    """
    checks.check_no_git_operation(vault.store.gitdir)
    own = None if dry_run or ahead is not None else _write_ahead(vault, f"refs/heads/{branch}")
    try:
        return _merge_branch(vault, branch, dry_run=dry_run, ahead=ahead or own)
    finally:
        if own is not None:
            own.close()


def _write_ahead(vault: Vault, theirs: str) -> Prewrite | None:
    """Start writing ahead the files merging ``theirs`` would bring (am.git.program.prewrite); None where it cannot."""
    from am.git.program import prewrite

    return prewrite.start(str(vault.root), theirs)


def _merge_branch(vault: Vault, branch: str, *, dry_run: bool, ahead: Prewrite | None) -> SyncReport:
    store = vault.store.opened()
    ref = store.head_ref()
    theirs = store.branch_tip(f"refs/heads/{branch}")
    if theirs is None:
        raise UsageError(f"the vault has no branch {branch!r}", hint="list them with: git branch")
    report = SyncReport(remote=".", branch=branch, dry_run=dry_run, before=store.branch_tip(ref),
                        remote_before=theirs, rounds=1)
    with store.write_lock(op="merge"):
        if not dry_run:
            from am.git.remote import resume_advance

            resume_advance(store)  # a sync or merge killed while moving the branch is finished first
        ours = report.before = store.branch_tip(ref)
        plan = plan_merge(store, ours, theirs)
        report.action = plan.action
        report.decisions, report.contested = list(plan.decisions), list(plan.contested)
        if dry_run:
            report.after = ours
            _preview(report, store, plan)
            return report
        tip, commit, paths = apply_plan(vault, plan, what=f"branch {branch}", op="merge.branch",
                                        again=f"am merge {branch}", ahead=ahead)
    report.after, report.merge_commit, report.changed = tip, commit, len(paths)
    if plan.action != "up-to-date":
        _refresh_cache(vault)
    return report
