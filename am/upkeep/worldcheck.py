"""`am check`'s world pass: facts and relations whose world cannot be resolved on this machine (DESIGN §5.7).

A record naming a repo that is not registered here, a branch its clone does
not have, or a commit it does not have is judged by the branch-name fallback
(or not at all), so a slice may silently leave it out: each is a warning that
names the record, the field and the fix. So is a record whose branch and commit
both resolve but whose commit the branch no longer has, as such or landed (an
amend, a rebase that changed the patch, a force-push): it holds nowhere on its
own branch, and `am fact confirm` cannot move it (the new commit does not
descend from the old), so the fix is a supersede there. Written with ``--unverified`` (a
branch not fetched here), it resolves once the clone is registered and fetched. A
branch gone from the clone whose commit the main line holds (merged and deleted,
renamed) is no warning: the record holds there by its commit, nothing to fetch.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from am.records.model import Fact, Record, Relation
from am.registry import Registry
from am.upkeep.checkmemo import Gist
from am.upkeep.issues import Issue

__all__ = ["WorldIssue", "group_world_issues", "world_issues"]


@dataclass(frozen=True)
class WorldIssue(Issue):
    """An ``unresolved-world`` warning, with what it shares with others of its kind (for ``am check``'s text)."""

    group: tuple[str, ...] = ()  # (kind, repo[, branch]): one line for all the records of a group
    fix: str = ""  # the group's one fix

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of an issue (the group is text output's, not the format's)."""
        return Issue(self.severity, self.code, self.path, self.message, self.field, self.line).to_json()


_GROUP_SAYS = {
    "repo": "name repo {1!r}, which is not registered on this machine, so they are judged by branch name",
    "clone": "name repo {1!r}, whose registered clone cannot be read",
    "branch": "name branch {2!r}, which is not in the clone of {1}",
    "commit": "name a commit that is not in the clone of {1}: each is judged by branch name, or on every branch "
              "when it names none",
    "rewritten": "name a commit that is not in the history of branch {2!r} of {1} and did not land there (was the "
                 "branch rewritten?), so they do not hold on their own branch",
}


def group_world_issues(issues: Sequence[Issue]) -> list[str]:
    """Return the lines ``am check`` prints for ``issues``: the world warnings of a group of two or more as one line.

    One line per repo not registered (or not readable), per branch missing from a clone, per repo whose clone lacks
    commits, per rewritten branch: with the count, the one fix and an example file. A group of one, and every other
    issue, is printed as itself, in the report's order (the grouped lines where their first record was); a last
    line says how to list each.
    """
    groups: dict[tuple[str, ...], list[WorldIssue]] = {}
    for issue in issues:
        if isinstance(issue, WorldIssue) and issue.group:
            groups.setdefault(issue.group, []).append(issue)
    out: list[str] = []
    counted = 0
    for issue in issues:
        members = groups.get(issue.group, []) if isinstance(issue, WorldIssue) and issue.group else []
        if len(members) < 2:
            out.append(issue.describe())
        elif members[0] is issue:
            counted += len(members)
            says = _GROUP_SAYS[issue.group[0]].format(*issue.group)
            out.append(f"{issue.severity}: {len(members)} records {says} ({issue.fix}; the first: {issue.path}) "
                       f"[{issue.code}]")
    if counted:
        out.append(f"({counted} unresolved-world warnings counted by repo or branch above; to list each: "
                   "am check --all)")
    return out


def world_issues(records: Iterable[tuple[PurePosixPath | str, Record | Gist]],
                 registry: Registry | None = None) -> list[Issue]:
    """Return a warning for every fact or relation whose repo, branch or commit cannot be resolved here.

    ``records`` are records or their gists (what ``am check`` keeps of them, am/upkeep/checkmemo.py).
    """
    from am.worlds.ancestry import CommitGraph, is_shallow, open_clone
    from am.worlds.branches import branch_tip
    from am.worlds.checks import home_branch

    registry = registry or Registry.load()
    clones: dict[str, Any] = {}
    tips: dict[tuple[str, str], str | None] = {}
    commits: dict[tuple[str, str], bool] = {}
    graphs: dict[tuple[str, str], Any] = {}  # (repo, branch tip) -> its history, for facts a rewrite left behind
    issues: list[Issue] = []
    for path, record in records:
        if not isinstance(record, (Fact, Relation, Gist)) or record.repo is None:  # a gist of a topic has none
            continue
        if record.status in ("expired", "superseded"):
            continue  # they hold nowhere anyway
        repo, where = record.repo, str(path)
        if repo not in registry.repos:
            fix = f"register its clone: am repo add {repo} PATH"
            issues.append(WorldIssue("warning", "unresolved-world", where,
                                     f"repo {repo!r} is not registered on this machine, so this record is judged by "
                                     f"branch name ({fix})", "repo", group=("repo", repo), fix=fix))
            continue
        if repo not in clones:
            clones[repo] = open_clone(repo, registry)[0]
        store = clones[repo]
        if store is None:
            fix = f"am repo add {repo} PATH --replace"
            issues.append(WorldIssue("warning", "unresolved-world", where,
                                     f"the clone registered for {repo!r} cannot be read ({fix})", "repo",
                                     group=("clone", repo), fix=fix))
            continue
        if record.version is not None:
            key = (repo, record.version)
            if key not in tips:
                tips[key] = branch_tip(store, record.version)
            # A branch gone from the clone whose commit the main line holds (merged and deleted, renamed): the
            # record holds there by its commit (home_branch, the rule confirm keeps), nothing to fetch.
            if tips[key] is None and home_branch(store, record.version, record.commit) is None:
                issues.append(WorldIssue("warning", "unresolved-world", where,
                                         f"branch {record.version!r} is not in the clone of {repo} (fetch it, or fix "
                                         "the branch)", "version", group=("branch", repo, record.version),
                                         fix="fetch it, or fix the branch"))
        if record.commit:
            key = (repo, record.commit)
            if key not in commits:
                commits[key] = store.find_commit(record.commit) is not None
            if not commits[key]:
                fix = "fetch it, or fix the id"
                if is_shallow(Path(store.gitdir)):  # a CI checkout (--depth): the commit may be beyond its depth
                    fix = f"the clone is shallow: git -C {store.root} fetch --unshallow, or fix the id"
                issues.append(WorldIssue("warning", "unresolved-world", where,
                                         f"commit {record.commit!r} is not in the clone of {repo}: the record is judged "
                                         f"by branch name, or on every branch when it names none ({fix})", "commit",
                                         group=("commit", repo), fix=fix.replace("the id", "the ids")))
            elif record.version is not None and (tip := tips[(repo, record.version)]) is not None:
                # The branch was rewritten (an amend, a rebase that changed the patch, a force-push): its
                # commit is neither in the branch's history nor landed there: it does not hold on its branch.
                if (repo, tip) not in graphs:
                    graphs[(repo, tip)] = CommitGraph(store, tip)
                if graphs[(repo, tip)].contains(record.commit) is False:
                    issues.append(WorldIssue("warning", "unresolved-world", where,
                                             f"commit {record.commit[:10]} is not in the history of branch "
                                             f"{record.version!r} and its change did not land there (was the branch "
                                             "rewritten? an amend, a rebase that changed the patch, a force-push), so "
                                             f"the record does not hold on its own branch {record.version!r} "
                                             f"({_refile(record)})", "commit",
                                             group=("rewritten", repo, record.version, record.type),
                                             fix=_refile(record).replace(record.id, "ID").replace("it there",
                                                                                                 "each there")))
    return issues


def _refile(record: Fact | Relation | Gist) -> str:
    """Say how to file again, on its own branch, a record whose branch was rewritten under it."""
    if record.type == "fact":
        return (f"re-file it there: am fact supersede {record.id} \"what holds now\" --branch {record.version} "
                "--reason \"...\"")
    return (f"re-file it there: am relation add ... --repo {record.repo} --branch {record.version}, "
            f"then am relation expire {record.id}")
