"""am serve's Numbers page: fact writes by actor, each commit counted once and kept (am/upkeep/writers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import run_git


def _by_actor_from_the_log(vault: Any) -> dict[str, int]:
    """The Numbers page's rule, read from the whole `am log` (what the page walked every time before)."""
    from am.upkeep.audit import log_entries

    by_actor: dict[str, int] = {}
    for entry in log_entries(vault):
        if entry.op in ("fact.add", "fact.supersede"):
            by_actor[entry.actor] = by_actor.get(entry.actor, 0) + 1
        elif entry.op == "import.batch" or entry.manual:
            by_actor[entry.actor] = by_actor.get(entry.actor, 0) + sum(1 for r in entry.records if r.startswith("f-"))
    return dict(sorted(by_actor.items()))


def test_fact_writes_by_actor_are_counted_once_and_follow_history(alpha: Any, am_home: Path) -> None:
    from am.upkeep.writers import fact_writes_by_actor

    root = alpha.root
    alpha.add_fact("One.", topics=["project-alpha"], id="fact-one")
    alpha.add_fact("Two.", topics=["project-alpha"], id="fact-two")
    alpha.supersede_fact("fact-two", "Two, better.", reason="newer", id="fact-three")
    # A hand commit (Obsidian): one fact edited, one written under a readable name, a topic.
    one = next(root.glob("facts/**/fact-one.md"))
    one.write_text(one.read_text() + "Edited by hand.\n")
    (root / "facts" / "A readable name.md").write_text(
        "---\ntype: fact\nid: f-20260101-0000-hand01\ntopics: [project-alpha]\n---\nWritten by hand.\n")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "notes")
    author = run_git(root, "log", "-1", "--format=%an").strip()
    kept = root / ".am" / "cache" / "writers.json"
    assert not kept.exists()
    first = fact_writes_by_actor(alpha)
    # The hand commit wrote one "f-" id (hand01; fact-one is no f- id), and the count is kept.
    assert first == _by_actor_from_the_log(alpha) and first[author] == 1 and kept.is_file()
    assert fact_writes_by_actor(alpha) == first  # the same HEAD: read from the file
    # A new commit: counted on top of the kept ones.
    alpha.add_fact("Four.", topics=["project-alpha"], id="fact-four")
    assert fact_writes_by_actor(alpha) == _by_actor_from_the_log(alpha) != first
    # A rewritten history (reset): the commits that left are not counted.
    run_git(root, "reset", "-q", "--hard", "HEAD~1")
    assert fact_writes_by_actor(alpha) == _by_actor_from_the_log(alpha) == first
    # A damaged or foreign file is counted anew.
    kept.write_text('{"version": 1, "head": null, "commits": {"x": ["y", "z"]}}')
    assert fact_writes_by_actor(alpha) == first
    kept.write_text("not json")
    assert fact_writes_by_actor(alpha) == first


def test_the_server_counts_the_writes_by_actor_at_its_start(alpha: Any, am_home: Path) -> None:
    import json
    import time

    from test_web import Server

    alpha.add_fact("One.", topics=["project-alpha"], id="fact-one")
    kept = alpha.root / ".am" / "cache" / "writers.json"
    server = Server(alpha.root, am_home)
    try:
        server.json("/api/worlds")  # not the Numbers page: its count is made at the start all the same
        deadline = time.monotonic() + 120  # a wait for the worker, not a measure of it
        while not kept.exists():
            assert time.monotonic() < deadline, "the server did not count the writes at its start"
            time.sleep(0.05)
    finally:
        server.stop()
    data = json.loads(kept.read_text())  # written whole (a rename), never half
    assert data["head"] == run_git(alpha.root, "rev-parse", "HEAD").strip()
    assert data["totals"] == _by_actor_from_the_log(alpha)
    server = Server(alpha.root, am_home)
    try:
        assert server.json("/api/numbers")["by_actor"] == data["totals"]
    finally:
        server.stop()
