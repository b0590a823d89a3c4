"""Validity of records in a world (DESIGN §5): the pure rules, and ancestry from a real clone."""

from __future__ import annotations

from am.errors import UnknownWorldError

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from am.worlds.ancestry import CommitGraph, setup_world
from am.git import GitStore
from am.records.model import Fact, Relation, Topic
from am.registry import Registry
from am.worlds.rules import RULE_ANCESTRY, RULE_BRANCH, SetAncestry, World, judge, resolve
from tests.conftest import commit_file, run_git

TZ = timezone(timedelta(hours=8))
C1, C2, C3 = "1" * 40, "2" * 40, "3" * 40


def fact(fid: str, **kw: object) -> Fact:
    base: dict[str, object] = {"id": fid, "topics": ("project-alpha",), "body": f"{fid}.\n"}
    base.update(kw)
    return Fact(**base)  # type: ignore[arg-type]


def held(records: list, world: World, oracle: object = None) -> list[str]:
    return sorted(resolve(records, world, oracle).facts)  # type: ignore[arg-type]


# ------------------------------------------------------------------ status, repo, branch, time


def test_status_rules() -> None:
    world = World(repo="r", branch="main")
    records = [fact("a"), fact("c", status="contested"), fact("p", status="pending-review"),
               fact("e", status="expired"), fact("s", status="superseded")]
    res = resolve(records, world, None)
    assert sorted(res.facts) == ["a", "c"]
    assert [f.id for f in res.contested] == ["c"]
    assert res.excluded == {"pending-review": 1, "expired": 1, "superseded": 1}
    assert held(records, World(repo="r", branch="main", include_pending=True)) == ["a", "c", "p"]


def test_repo_rule() -> None:
    records = [fact("any"), fact("mine", repo="alpha"), fact("theirs", repo="beta")]
    assert held(records, World(repo="alpha", branch="main")) == ["any", "mine"]
    assert held(records, World()) == ["any"]


def test_branch_name_fallback() -> None:
    records = [fact("nobranch", repo="alpha"), fact("main", repo="alpha", version="main"),
               fact("feat", repo="alpha", version="feat-x", commit="abcdef1")]
    assert held(records, World(repo="alpha", branch="main")) == ["main", "nobranch"]
    assert held(records, World(repo="alpha", branch="feat-x")) == ["feat", "nobranch"]
    verdict = judge(records[2], World(repo="alpha", branch="main"), None)
    assert not verdict.holds and verdict.rule == RULE_BRANCH and verdict.why == "other branch"


def test_valid_time() -> None:
    at = datetime(2026, 10, 1, 12, 0, tzinfo=TZ)
    records = [
        fact("open"),
        fact("started", valid_from="2026-09-01"),
        fact("future", valid_from="2026-11-01T00:00:00+08:00"),
        fact("ended", valid_until="2026-10-01T12:00:00+08:00"),  # exclusive end
        fact("window", valid_from="2026-09-30", valid_until="2026-10-02"),
    ]
    assert held(records, World(at=at)) == ["open", "started", "window"]
    assert held(records, World(at=at - timedelta(days=60))) == ["ended", "open"]


# ------------------------------------------------------------------ ancestry (pure oracle)


def test_ancestry_rule_with_oracle() -> None:
    # History of the world: C1 <- C2; C3 is on another branch.
    oracle = SetAncestry([C1, C2], known=[C3])
    world = World(repo="alpha", branch="main", commit=C2)
    records = [
        fact("at-c1", repo="alpha", version="feat", commit=C1),   # branch name ignored: ancestry decides
        fact("at-c3", repo="alpha", version="main", commit=C3),   # named main, but not in this history
        fact("short", repo="alpha", commit=C1[:7]),
        fact("ended", repo="alpha", commit=C1, until_commit=C2),
        fact("ends-later", repo="alpha", commit=C1, until_commit=C3),
        fact("unknown", repo="alpha", version="main", commit="deadbeef"),  # not in clone: branch name
    ]
    res = resolve(records, world, oracle)
    assert sorted(res.facts) == ["at-c1", "ends-later", "short", "unknown"]
    assert res.rules == {RULE_ANCESTRY: 3, RULE_BRANCH: 1}
    assert res.excluded == {"not in this commit's history": 1, "ended at an earlier commit": 1}


# ------------------------------------------------------------------ per-world supersession


def test_supersession_per_world_both_directions() -> None:
    oracle_main = SetAncestry([C1], known=[C2])
    oracle_feat = SetAncestry([C1, C2])
    old = fact("old", repo="alpha", version="main", commit=C1, superseded_by="new")
    new = fact("new", repo="alpha", version="feat", commit=C2, supersedes=("old",))
    main, feat = World(repo="alpha", branch="main", commit=C1), World(repo="alpha", branch="feat", commit=C2)
    assert held([old, new], main, oracle_main) == ["old"]
    assert held([old, new], feat, oracle_feat) == ["new"]
    # Only the new fact says it (a hand-written supersede): same result.
    bare_old = fact("old", repo="alpha", version="main", commit=C1)
    assert held([bare_old, new], feat, oracle_feat) == ["new"]
    # Only the old fact says it.
    bare_new = fact("new", repo="alpha", version="feat", commit=C2)
    assert held([old, bare_new], feat, oracle_feat) == ["new"]
    res = resolve([old, new], feat, oracle_feat)
    assert res.superseded_here == {"old": "new"} and res.excluded == {"superseded here": 1}


def test_pending_superseder_hides_nothing_and_chain() -> None:
    world = World(include_pending=True)
    a = fact("a")
    b = fact("b", supersedes=("a",), status="pending-review")
    assert held([a, b], world) == ["a", "b"]
    # a <- b <- c: b holds (by its own rules) so a is hidden; c hides b.
    c = fact("c", supersedes=("b",))
    b2 = fact("b", supersedes=("a",))
    assert held([a, b2, c], World()) == ["c"]


def test_relations_judged_and_topics() -> None:
    records = [
        Topic(id="project-alpha", kind="project", title="Alpha"),
        Topic(id="tool-old", kind="tool", title="Old", status="expired"),
        Relation(id="r1", rel="depends-on", from_="project-alpha", to="tool-x"),
        Relation(id="r2", rel="depends-on", from_="project-alpha", to="tool-y", status="expired"),
        Relation(id="r3", rel="depends-on", from_="project-alpha", to="tool-z", repo="beta"),
    ]
    res = resolve(records, World(repo="alpha"), None)
    assert sorted(res.relations) == ["r1"]
    assert sorted(res.topics) == ["project-alpha"] and sorted(res.all_topics) == ["project-alpha", "tool-old"]


# ------------------------------------------------------------------ a real clone


@pytest.fixture
def clone(tmp_path: Path) -> dict[str, str]:
    root = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(root))
    c1 = commit_file(root, "a.txt", "c1")
    run_git(root, "switch", "-q", "-c", "feat")
    c2 = commit_file(root, "b.txt", "c2")
    run_git(root, "switch", "-q", "main")
    c3 = commit_file(root, "c.txt", "c3")
    return {"root": str(root), "c1": c1, "c2": c2, "c3": c3}


def test_commit_graph_matches_git(clone: dict[str, str]) -> None:
    store = GitStore.open_code(Path(clone["root"]))
    graph = CommitGraph(store, clone["c3"])
    listed = set(run_git(Path(clone["root"]), "rev-list", "main").split())
    assert graph.history == listed
    assert graph.contains(clone["c1"]) and graph.contains(clone["c1"][:7])
    assert graph.contains(clone["c2"]) is False
    assert graph.contains("0" * 40) is None


def test_setup_world_rules(clone: dict[str, str]) -> None:
    registry = Registry.load()
    unregistered = setup_world("alpha", "main", registry=registry)
    assert unregistered.rule == RULE_BRANCH and "not registered" in unregistered.notes[0]
    registry.add_repo("alpha", Path(clone["root"]))
    tip = setup_world("alpha", "feat", registry=registry)
    assert tip.rule == RULE_ANCESTRY and tip.world.commit == clone["c2"] and tip.commit_source == "branch tip"
    given = setup_world("alpha", "main", clone["c1"][:8], registry=registry)
    assert given.world.commit == clone["c1"] and given.history_size == 1
    with pytest.raises(UnknownWorldError, match="branch nope is not in the clone"):
        setup_world("alpha", "nope", registry=registry)
    head = setup_world("alpha", registry=registry)
    assert head.world.branch == "main" and head.world.commit == clone["c3"]


def test_history_files_cache_and_extend(clone: dict[str, str], tmp_path: Path) -> None:
    from am.worlds import ancestry

    root = Path(clone["root"])
    store = GitStore.open_code(root)
    files = ancestry.HistoryFiles(tmp_path / "cache", store)
    first = files.history(clone["c3"])
    assert first == set(run_git(root, "rev-list", "main").split())
    assert files.load(clone["c3"]) == first
    # main moves on: the new history is the cached one plus a short walk.
    c4 = commit_file(root, "d.txt", "c4")
    run_git(root, "merge", "-q", "--no-ff", "-m", "merge feat", "feat")
    tip = run_git(root, "rev-parse", "HEAD").strip()
    assert files.history(tip) == set(run_git(root, "rev-list", "main").split())
    assert c4 in files.history(tip) and clone["c2"] in files.history(tip)
    # A damaged file is ignored and rewritten.
    (files.folder / f"{tip}.hist").write_bytes(b"garbage")
    assert files.load(tip) is None
    assert files.history(tip) == set(run_git(root, "rev-list", "main").split())


def test_setup_world_uses_the_history_files(clone: dict[str, str], tmp_path: Path) -> None:
    from am.worlds import ancestry

    registry = Registry.load()
    registry.add_repo("alpha", Path(clone["root"]))
    ancestry._HISTORY_CACHE.clear()
    setup = setup_world("alpha", "main", registry=registry, cache_dir=tmp_path / "cache")
    assert setup.history_size == 2  # c1 and c3; c2 is on feat
    assert list((tmp_path / "cache").glob("*/*.hist"))


def test_missing_clone_falls_back_with_a_note(clone: dict[str, str]) -> None:
    import shutil

    registry = Registry.load()
    registry.add_repo("alpha", Path(clone["root"]))
    shutil.rmtree(clone["root"])
    setup = setup_world("alpha", "main", registry=Registry.load())
    assert setup.rule == RULE_BRANCH and setup.oracle is None
    assert "is not on this machine" in setup.notes[0] and "am repo add alpha PATH --replace" in setup.notes[0]


# ------------------------------------------------------------------ properties

_IDS = [f"f{i}" for i in range(6)]


@st.composite
def _facts(draw: st.DrawFn) -> list[Fact]:
    out = []
    for fid in draw(st.lists(st.sampled_from(_IDS), unique=True, max_size=6)):
        out.append(fact(
            fid,
            status=draw(st.sampled_from(["active", "contested", "pending-review", "expired", "superseded"])),
            repo=draw(st.sampled_from([None, "alpha", "beta"])),
            version=draw(st.sampled_from([None, "main", "feat"])),
            commit=draw(st.sampled_from([None, C1, C2, C3[:7]])),
            supersedes=tuple(draw(st.lists(st.sampled_from(_IDS), max_size=2, unique=True))),
            superseded_by=draw(st.sampled_from([None, *_IDS])),
        ))
    return out


@settings(max_examples=200, deadline=None)
@given(_facts(), st.randoms(use_true_random=False), st.booleans())
def test_resolution_does_not_depend_on_record_order(facts: list[Fact], rnd: object, pending: bool) -> None:
    oracle = SetAncestry([C1, C2], known=[C3])
    world = World(repo="alpha", branch="main", commit=C2, include_pending=pending)
    first = resolve(facts, world, oracle)
    shuffled = list(facts)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    second = resolve(shuffled, world, oracle)
    assert sorted(first.facts) == sorted(second.facts)
    assert first.excluded == second.excluded and first.superseded_here == second.superseded_here
    # Whatever is shown holds on its own, and nothing shown is hidden by a shown superseder.
    for fid, f in first.facts.items():
        assert judge(f, world, oracle).holds
        assert not any(fid in g.supersedes for g in first.facts.values()
                       if g.status in ("active", "contested") and g.id != fid)
