"""What `am fact show` adds to a fact's fields: its valid time read against now, and where it holds.

A fact's ``status`` is what was written; whether it holds is a question of a world (DESIGN §5).
``am fact show`` answers it for the worlds a reader of one fact asks about: the fact's own
branch and the repository's ``main``, each through the same rules as ``am why`` and
``am slice`` (so a fact past its ``valid_until`` no longer reads as plainly "active").

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from am.errors import AmError
from am.records.model import Fact

if TYPE_CHECKING:
    from am.packs.reader import VaultReader

__all__ = ["time_note", "holds_in", "render_holds"]

MAIN = "main"


def _moment(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.astimezone()


def time_note(fact: Fact, now: datetime) -> str | None:
    """Say when the fact's valid time does not include now: ended, or not begun."""
    until, since = _moment(fact.valid_until), _moment(fact.valid_from)
    if until is not None and until <= now:
        return f"its valid time ended {fact.valid_until}: it holds in no world now (am why ID --at T for before)"
    if since is not None and since > now:
        return f"its valid time starts {fact.valid_from}: it holds in no world yet"
    return None


def _worlds(fact: Fact) -> list[tuple[str | None, str | None]]:
    if fact.repo is None:
        return [(None, None)]
    worlds: list[tuple[str | None, str | None]] = [(fact.repo, fact.version)] if fact.version else []
    if fact.version != MAIN:
        worlds.append((fact.repo, MAIN))
    return worlds


def holds_in(vault: VaultReader, fact: Fact) -> list[dict[str, Any]]:
    """Return, for the fact's own branch and its repository's main, whether it holds there and, if not, why."""
    from am.packs.pack import SliceRequest
    from am.packs.why import why_fact

    out: list[dict[str, Any]] = []
    for repo, branch in _worlds(fact):
        where = {"repo": repo, "branch": branch}
        try:
            found = why_fact(vault, fact.id, SliceRequest(repo=repo, branch=branch, max_tokens=0))
        except AmError as err:  # no clone registered, a branch the clone lacks: said, not guessed
            out.append({"world": where, "holds": None, "section": None, "why": str(err).split("\n")[0]})
            continue
        failed = next((s for s in found.steps if s.passed is False), None)
        out.append({"world": where, "holds": found.holds, "section": found.section,
                    "why": failed.evidence if failed is not None else None})
    return out


def render_holds(found: list[dict[str, Any]]) -> list[str]:
    """Return ``holds_in``'s answer as lines for people."""
    lines = []
    for item in found:
        world = item["world"]
        name = "any world" if world["repo"] is None else world["repo"] + (f"@{world['branch']}" if world["branch"] else "")
        if item["holds"] is None:
            lines.append(f"  {name}: cannot tell ({item['why']})")
        elif item["holds"]:
            section = item["section"]
            lines.append(f"  {name}: holds" + (f" ({section} here)" if section not in (None, "facts") else ""))
        else:
            lines.append(f"  {name}: does not hold ({item['why']})")
    return lines
