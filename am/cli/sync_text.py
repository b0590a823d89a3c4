"""The text of a sync's report, without click: `am sync` prints it, and so does the click-free fast path (entry.py).

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the click-free fast path does not import typing
if TYPE_CHECKING:
    from am.sync import SyncReport

__all__ = ["report_lines", "up_to_date_line"]


def up_to_date_line(where: str, short: str) -> str:
    """The line of a sync that found nothing to merge: ``where`` is remote/branch, ``short`` its tip's first 10 hex."""
    return f"nothing to merge: up to date with {where} ({short})"


def _records(count: int) -> str:
    return f"{count} record{'s' * (count != 1)}"


def report_lines(report: SyncReport) -> list[str]:
    """Return the lines that say what a sync or a merge of a branch did (or would do, for a dry run)."""
    lines = []
    short = (report.after or "")[:10] or "nothing"
    prefix = "would " if report.dry_run else ""
    where = f"{report.remote}/{report.branch}" if report.remote != "." else f"branch {report.branch}"
    if report.action == "up-to-date" and report.pushed:
        pass  # said below
    elif report.action == "up-to-date" and report.dry_run and report.remote != "." and report.remote_before is None:
        lines.append(f"nothing to merge: {where} does not exist yet")  # the push would make it
    elif report.action == "up-to-date":  # a dry run names the remote's tip: its own may be ahead, to push
        theirs = (report.remote_before or "")[:10] if report.dry_run and report.remote != "." else ""
        lines.append(up_to_date_line(where, theirs or short))
    elif report.action == "fast-forward":
        lines.append(f"{prefix}fast-forward to {where}"
                     + ("" if report.dry_run else f" ({short}, {report.changed} file{'s' * (report.changed != 1)})"))
    else:
        lines.append(f"{prefix}merge {where}"
                     + ("" if report.dry_run else f" in commit {(report.merge_commit or '')[:10]}"))
    for d in report.decisions:
        if d.how not in ("union", "deleted") and not d.detail.startswith("contested copy of"):
            lines.append(f"  {d.how:<6} {d.id}" + (f"  ({d.detail})" if d.detail else ""))
    added = sum(1 for d in report.decisions if d.how == "union")  # new there, or changed there and not here
    if added:
        lines.append(f"  {_records(added)} from the other side {'would be ' if report.dry_run else ''}added or changed")
    deleted = sum(1 for d in report.decisions if d.how == "deleted")
    if deleted:
        verb = "would be" if report.dry_run else "is" if deleted == 1 else "are"
        lines.append(f"  {_records(deleted)} the other side deleted {verb} deleted")
    if report.contested:
        lines.append(f"  contested: {', '.join(report.contested)} (resolve with am fact supersede)")
    if report.marked:
        more = f" and {len(report.marked) - 3} more" if len(report.marked) > 3 else ""
        lines.append(f"  warning: the other side {'would bring' if report.dry_run else 'brought'} Git's conflict "
                     f"markers in records ({', '.join(report.marked[:3])}{more}): a git merge made without am's merge "
                     "driver and committed; those records read as broken until someone resolves each file and "
                     "commits (am check lists them)")
    if report.pushed:
        lines.append(f"pushed {short} to {where}")
    elif report.dry_run and report.remote != "." and report.action != "fast-forward" \
            and report.before is not None and report.before != report.remote_before:
        lines.append(f"would push {'the merge' if report.action == 'merge' else short} to {where}")
    if report.rounds > 1:
        lines.append(f"  ({report.rounds} rounds: the remote moved while syncing)")
    return lines
