"""`am now`: what is hot in a world, in at most fifty lines an agent reads at the start of a session.

Five short sections, each cut to a fixed number of lines, in a fixed order:
pinned facts; the facts most used in the last week (am/cache/usage.py, today
included); the topics touched recently (facts written in the last week, else
the newest facts' topics); open review items (facts pending review and
contested, as far as they hold in the world's repo and branch); the last
session (the newest ``session`` topic, else the newest fact whose provenance
names a session). Facts count only where they hold in the world
(``am.worlds.rules.judge``).

Deterministic: the same vault state, use counts and clock give the same bytes.
Reading it counts no use (so asking twice changes nothing).

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from am.errors import AmError
from am.packs.pack import clean_text
from am.records.model import Fact

if TYPE_CHECKING:
    from am.packs.reader import VaultReader

__all__ = ["NowLine", "NowReport", "what_now", "render_now_markdown", "render_now_json", "MAX_LINES"]

MAX_LINES = 50
_CUT = {"pinned": 8, "used": 8, "topics": 6, "review": 8}
_TEXT = 110
_CONF = {"high": 0, "medium": 1, "low": 2}
_TITLES = {"pinned": "Pinned", "used": "Most used this week", "topics": "Topics touched recently",
           "review": "Open for review"}


@dataclass(frozen=True)
class NowLine:
    """One line of a section: a record id, a short text and a note (uses, counts, a date)."""

    id: str
    text: str
    note: str = ""


@dataclass
class NowReport:
    """What `am now` shows, before rendering."""

    world: str
    vault: str
    commit: str | None
    day: str
    sections: dict[str, list[NowLine]] = field(default_factory=dict)
    more: dict[str, int] = field(default_factory=dict)
    session: NowLine | None = None


def _short(text: str) -> str:
    line = clean_text(text)
    return line if len(line) <= _TEXT else line[: _TEXT - 1] + "…"


def _cut(report: NowReport, name: str, lines: list[NowLine]) -> None:
    report.sections[name] = lines[: _CUT[name]]
    report.more[name] = max(0, len(lines) - _CUT[name])


def _ts(fact: Fact) -> float:
    from am.packs.assemble import _created

    return _created(fact).timestamp()


def what_now(vault: VaultReader, *, repo: str | None = None, branch: str | None = None,
             commit: str | None = None, at: datetime | None = None) -> NowReport:
    """Gather what is hot in a world: pinned, most used, recent topics, review items, the last session."""
    from am.clock import now
    from am.packs.slice import _usage
    from am.worlds.ancestry import setup_world
    from am.worlds.rules import judge

    moment = at or now()
    setup = setup_world(repo, branch, commit, at=moment, include_pending=True,
                        cache_dir=vault.root / ".am" / "cache" / "ancestry",
                        known_repos=getattr(vault, "known_repos", None))
    index = vault.cache()
    if index is None:
        raise AmError("the cache cannot be opened, and am now reads it", hint="run: am index rebuild")
    loose, strict = setup.world, replace(setup.world, include_pending=False)
    hidden = _superseded_here(index, loose, setup.oracle)

    def holds(fact: Fact, *, pending: bool = False) -> bool:
        return fact.id not in hidden and judge(fact, loose if pending else strict, setup.oracle).holds

    world = setup.world.repo or "vault-wide"
    if setup.world.branch:
        world += f" @ {setup.world.branch}"
    report = NowReport(world, vault.name, index.head, moment.date().isoformat())
    pinned = sorted((f for f in index.pinned_facts() if holds(f)),
                    key=lambda f: (_CONF.get(f.confidence, 3), -_ts(f), f.id))
    _cut(report, "pinned", [NowLine(f.id, _short(f.body), f.confidence) for f in pinned])
    counts = _usage(vault).counts(repo=setup.world.repo, branch=setup.world.branch, days=6, at=moment, today=True)
    best = sorted(counts, key=lambda i: (-counts[i], i))[:200]
    found = {r.id: r for _, r in index.records(ids=best) if isinstance(r, Fact)}
    used = [found[i] for i in best if i in found and holds(found[i])]
    _cut(report, "used", [NowLine(f.id, _short(f.body), f"{counts[f.id]} use{'s' * (counts[f.id] != 1)}")
                          for f in used])
    report.sections["topics"], report.more["topics"] = _topics(index, moment, holds)
    review = [f for f in index.facts_with_status(("contested", "pending-review")) if holds(f, pending=True)]
    review.sort(key=lambda f: (f.status != "contested", -_ts(f), f.id))
    _cut(report, "review", [NowLine(f.id, _short(f.body), f.status) for f in review])
    report.session = _session(index)
    return report


def _superseded_here(index: Any, world: Any, oracle: Any) -> set[str]:
    """Return the ids of the facts a fact that supersedes them hides in this world (rule 6), as packs hide them."""
    if not hasattr(index, "supersession_edges"):
        return set()
    from am.packs.cache import _Judge, _hidden

    return set(_hidden(index, world, ("expired", "superseded"), _Judge(world, oracle)))


def _topics(index: Any, moment: datetime, holds: Any) -> tuple[list[NowLine], int]:
    """Return the topics of the facts written in the last week (else of the newest facts), newest first."""
    since = (moment - timedelta(days=7)).timestamp()
    touched: dict[str, list[float]] = {}
    recent = True
    for n, fact in enumerate(index.newest_facts(since=since)):
        if n >= 5000:
            break
        if holds(fact, pending=True):
            for t in fact.topics:
                touched.setdefault(t, []).append(_ts(fact))
    if not touched:
        recent = False
        for n, fact in enumerate(index.newest_facts()):
            if n >= 200 or len(touched) >= _CUT["topics"]:
                break
            if holds(fact, pending=True):
                for t in fact.topics:
                    touched.setdefault(t, []).append(_ts(fact))
    order = sorted(touched, key=lambda t: (-max(touched[t]), t))
    titles = index.topic_titles(order[: _CUT["topics"]])
    lines = []
    for tid in order[: _CUT["topics"]]:
        last = datetime.fromtimestamp(max(touched[tid]), moment.tzinfo).date().isoformat()
        count = len(touched[tid])
        note = (f"{count} new fact{'s' * (count != 1)} this week, last {last}" if recent else f"last fact {last}")
        lines.append(NowLine(tid, _short(titles.get(tid) or tid), note))
    return lines, max(0, len(order) - _CUT["topics"])


def _session(index: Any) -> NowLine | None:
    """Return the newest session topic, else the newest fact a session wrote (as its session)."""
    topics = index.newest_topics(kind="session", limit=1)
    if topics:
        t = topics[0]
        return NowLine(t.id, _short(t.title), (t.created or "")[:10])
    for n, fact in enumerate(index.newest_facts()):
        if n >= 2000:
            break
        if fact.provenance.startswith("session:"):
            about = ", ".join(fact.topics)
            return NowLine(fact.provenance, _short(f"about {about}: {fact.body}"), (fact.created or "")[:10])
    return None


def render_now_markdown(report: NowReport) -> str:
    """Render the report in at most MAX_LINES lines."""
    lines = [f"# Now: {report.world}",
             f"Vault `{report.vault}` at `{(report.commit or 'none')[:12]}`; uses counted up to {report.day}."]
    for name in ("pinned", "used", "topics", "review"):
        items = report.sections.get(name, [])
        lines += ["", f"## {_TITLES[name]}"]
        if not items:
            lines.append("- none")
        for item in items:
            note = f" · {item.note}" if item.note else ""
            lines.append(f"- {item.text} (`{item.id}`{note})")
        if report.more.get(name):
            lines.append(f"- … and {report.more[name]} more")
    lines += ["", "## Last session"]
    if report.session is None:
        lines.append("- none recorded")
    else:
        s = report.session
        lines.append(f"- {s.text} (`{s.id}`" + (f" · {s.note}" if s.note else "") + ")")
    assert len(lines) <= MAX_LINES, len(lines)
    return "\n".join(lines) + "\n"


def render_now_json(report: NowReport) -> str:
    """Render the report as JSON with a stable shape (keys sorted)."""
    def items(lines: list[NowLine]) -> list[dict[str, str]]:
        return [{"id": i.id, "text": i.text, "note": i.note} for i in lines]

    data = {"world": report.world, "vault": {"name": report.vault, "commit": report.commit}, "day": report.day,
            **{name: items(report.sections.get(name, [])) for name in ("pinned", "used", "topics", "review")},
            "more": dict(sorted(report.more.items())),
            "last_session": None if report.session is None else items([report.session])[0]}
    return json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
