"""The cache's slice path (am/packs/cache.py) against the general judge: the same pack, byte for byte.

Random vaults mix every status, repo, branch, commit (full, short, unknown,
on and off the world's history), until_commit, valid time, supersession both
ways, pins and budgets; for many worlds each, the pack built from the cache
in pieces must equal ``build_pack`` on the full records (resolve() judging
every one), in Markdown and in JSON.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from am.records.model import Fact, Record, Relation, Topic
from am.registry import Registry
from am.packs.slice import SliceRequest, render_json, render_markdown, slice_vault
from am.worlds.rules import to_moment
from tests.conftest import commit_file, run_git


@pytest.fixture
def clone(tmp_path: Path) -> dict[str, str]:
    root = tmp_path / "alpha-code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(root))
    c1 = commit_file(root, "c1")
    run_git(root, "switch", "-q", "-c", "feat")
    f1 = commit_file(root, "f1")
    run_git(root, "switch", "-q", "main")
    c2 = commit_file(root, "c2")
    Registry.load().add_repo("project-alpha", root)
    return {"c1": c1, "f1": f1, "c2": c2}


_TOPICS = ["project-alpha", "project-beta", "tool-redis", "tool-old", "concept-cache", "person-li"]
_DATES = ["2025-01-01", "2026-06-01", "2026-06-01T08:00:00+08:00", "2027-01-01T00:00:00", "2026-03-01T00:00:00Z"]


def _random_records(rng: random.Random, commits: dict[str, str], n: int) -> list[Record]:
    known = [commits["c1"], commits["c2"][:7], commits["f1"][:12], commits["f1"], "0badc0de"]
    records: list[Record] = []
    for i, tid in enumerate(_TOPICS[:-1]):  # person-li has facts but no file
        status = rng.choice(["active", "active", "expired", "contested", "pending-review"])
        records.append(Topic(id=tid, kind=tid.split("-")[0], title=f"Topic {i} " + "word " * rng.randrange(40),
                             aliases=tuple(rng.sample(["A", "Alias 服务", "B"], rng.randrange(3))), status=status,
                             body=rng.choice(["", "A short summary.\n", "一段中文摘要，讲缓存。\n\nSecond paragraph.\n"])))
    ids = [f"fact-{i:03d}" for i in range(n)]
    for i, fid in enumerate(ids):
        repo = rng.choice([None, None, "project-alpha", "project-alpha", "project-beta"])
        has_world = repo is not None and rng.random() < 0.8
        since, until = rng.choice([None, None, None, *_DATES]), rng.choice([None, None, None, *_DATES])
        if since and until and to_moment(until) <= to_moment(since):  # a span that holds at no time is refused
            since, until = (until, since) if to_moment(until) < to_moment(since) else (since, None)
        records.append(Fact(
            id=fid, topics=tuple(rng.sample(_TOPICS, rng.randrange(1, 3))),
            body=rng.choice(["Alpha caches sessions.", "限流：每秒五十次。", "A " + "long " * rng.randrange(60)])
            + f" Note {i}.\n",
            status=rng.choice(["active"] * 4 + ["contested", "pending-review", "expired", "superseded"]),
            confidence=rng.choice(["high", "medium", "low"]), repo=repo,
            version=rng.choice([None, "main", "feat", "gone"]) if has_world else None,
            commit=rng.choice([None, *known]) if has_world else None,
            until_commit=rng.choice([None, None, None, *known]) if has_world else None,
            valid_from=since, valid_until=until,
            supersedes=tuple(rng.sample(ids, rng.choice([0, 0, 0, 1, 2]))),
            superseded_by=rng.choice([None] * 6 + ids[:10]), pinned=rng.random() < 0.08,
            paths=rng.choice([(), (), ("c1",), ("f1",), ("c2", "nothing/")]) if has_world else (),
            created=rng.choice([f"2026-{1 + i % 12:02d}-{1 + i % 27:02d}T10:00:00+08:00",
                                "2026-05-05T10:00:00+08:00", "2026-05-05T02:00:00Z", "2026-05-05T10:00:00"])))
    for i in range(n // 3):
        ends = rng.sample(_TOPICS + ids[:5], 2)
        rel = rng.choice(["depends-on", "references", "part-of"])
        records.append(Relation(
            id=f"{ends[0]}--{rel}--{ends[1]}", rel=rel, from_=ends[0], to=ends[1],
            status=rng.choice(["active", "active", "expired"]), repo=rng.choice([None, "project-alpha"]),
            commit=rng.choice([None, commits["f1"]]), valid_until=rng.choice([None, "2026-06-01"])))
    return list({(r.type, r.id): r for r in records}.values())


def _requests(rng: random.Random, commits: dict[str, str], k: int) -> list[SliceRequest]:
    out = []
    for _ in range(k):
        at = rng.choice([None, "2026-03-01", "2026-07-01T09:00:00+08:00"])
        repo = rng.choice([None, "project-alpha", "project-alpha", "project-beta"])
        branch = rng.choice([None, "main", "feat", "gone"])
        commit = rng.choice([None, None, None, commits["c1"][:8], commits["f1"]])
        if repo == "project-alpha" and branch == "main" and commit == commits["f1"]:
            branch = "feat"  # f1 is not on main: that world is refused since issue 33.4 (tests/test_refusals.py)
        out.append(SliceRequest(
            # A branch the registered clone lacks is an error of its own (tested in _assert_same's first call).
            repo=repo, branch=None if (branch == "gone" and repo == "project-alpha") else branch,
            commit=commit,
            at=None if at is None else to_moment(at), at_label=at or "now",
            include_pending=rng.random() < 0.3, max_tokens=rng.choice([0, 250, 600, 1500, 8000])))
    return out


def _both(vault: Any, request: SliceRequest) -> tuple[Any, Any]:
    fast = slice_vault(vault, request)
    general = slice_vault(vault, request, records=[r for _, r in vault.iter_records()])
    return fast, general


def _assert_same(vault: Any, request: SliceRequest, *, fast_path: bool = True) -> None:
    from am.errors import UnknownWorldError

    try:
        fast, general = _both(vault, request)
    except UnknownWorldError:
        # A world that cannot exist (branch 'gone' in the registered clone) is refused by both paths alike.
        with pytest.raises(UnknownWorldError):
            slice_vault(vault, request, records=[r for _, r in vault.iter_records()])
        return
    assert (fast.resolution.counted is not None) == fast_path, request
    assert general.resolution.counted is None
    assert render_markdown(fast) == render_markdown(general), request
    assert render_json(fast) == render_json(general), request


@pytest.mark.parametrize("seed", range(6))
def test_cache_path_equals_the_general_judge(vault: Any, clone: dict[str, str], seed: int) -> None:
    rng = random.Random(seed)
    vault.import_records(_random_records(rng, clone, 60 + 20 * seed), source="test")
    for request in _requests(rng, clone, 14):
        _assert_same(vault, request)
    _assert_same(vault, SliceRequest(repo="project-alpha", branch="gone"))


_QUERIES = ["Alpha", "sessions cache", "限流", "long", "Topic 3", "Alias 服务", "redis", "Note 7", "nothing-here"]


@pytest.mark.parametrize("seed", range(3))
def test_query_on_the_cache_path_equals_the_general_judge(vault: Any, clone: dict[str, str], seed: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    import am.packs.cache

    rng = random.Random(100 + seed)
    vault.import_records(_random_records(rng, clone, 80), source="test")
    served = 0
    for request, query in zip(_requests(rng, clone, len(_QUERIES)), _QUERIES):
        asked = replace(request, query=query)
        fast = slice_vault(vault, asked)
        with monkeypatch.context() as patch:
            # The general path on the same cache (its full-text search, its link table).
            patch.setattr(am.packs.cache, "cached_pack", lambda *args, **kwargs: None)
            general = slice_vault(vault, asked)
        assert general.resolution.counted is None
        served += fast.resolution.counted is not None
        assert render_markdown(fast) == render_markdown(general), (request, query)
        assert render_json(fast) == render_json(general), (request, query)
    # Most queries are served by the full-text level here; a query with no hit that holds takes the general path.
    assert served >= 3


_LINKS = ["", "", " See [[tool-redis]].", " See [[project-beta]] and [[nowhere-x]].", " Cf. [[fact-003]].",
          " Elsewhere: [[other:project-alpha]].", " Bridge [[nowhere-x]].", " [[concept-cache]] [[person-li]]"]


def _linked_records(rng: random.Random, commits: dict[str, str], n: int) -> list[Record]:
    """Random records with same-vault, dangling and cross-vault links, and the odd cases of the topic graph.

    Facts about fact ids (a fact id used as a topic), a topic sharing a fact's id,
    relations ending at facts, and fact bodies linking facts.
    """
    from dataclasses import replace

    out: list[Record] = []
    for r in _random_records(rng, commits, n):
        if isinstance(r, Fact):
            extra = tuple(rng.sample(["fact-001", "fact-004", "fact-007", "tool-old"], rng.choice([0, 0, 0, 1])))
            r = replace(r, body=r.body.rstrip("\n") + rng.choice(_LINKS) + "\n",
                        topics=tuple(dict.fromkeys(r.topics + extra)))
        elif isinstance(r, Topic):
            r = replace(r, body=r.body + rng.choice(_LINKS) + "\n")
        out.append(r)
    # A topic with a fact's id (both hold or not, by their own status), linking elsewhere.
    out.append(Topic(id="fact-002", kind="concept", title="Same id as a fact", body="Links [[tool-old]].\n",
                     status=rng.choice(["active", "expired"])))
    return out


def _topic_requests(rng: random.Random, commits: dict[str, str], k: int) -> list[SliceRequest]:
    from dataclasses import replace

    starts = _TOPICS[:-1] + ["fact-002"]
    return [replace(r, topic=rng.choice(starts), depth=depth)
            for r in _requests(rng, commits, k) for depth in (0, 1, 2, 3)]


@pytest.mark.parametrize("seed", range(4))
def test_topic_on_the_cache_path_equals_the_general_judge(vault: Any, clone: dict[str, str], seed: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import am.packs.cache

    rng = random.Random(200 + seed)
    vault.import_records(_linked_records(rng, clone, 50 + 20 * seed), source="test")
    # Facts in scope come along the rank index (a wide scope) or by topic then sorted (a narrow one).
    monkeypatch.setattr(am.packs.cache, "_DENSE", 0.0 if seed % 2 else float("inf"))
    for request in _topic_requests(rng, clone, 6):
        fast = slice_vault(vault, request)
        assert fast.resolution.counted is not None, request
        with monkeypatch.context() as patch:
            # The general path on the same cache (views, its link table, networkx).
            patch.setattr(am.packs.cache, "cached_pack", lambda *args, **kwargs: None)
            general = slice_vault(vault, request)
        assert general.resolution.counted is None
        assert render_markdown(fast) == render_markdown(general), request
        assert render_json(fast) == render_json(general), request


@pytest.mark.parametrize("seed", range(2))
def test_topic_on_the_cache_path_equals_resolve_on_full_records(vault: Any, clone: dict[str, str],
                                                                seed: int) -> None:
    # Bodies parsed again (no topic shares a fact's id here: then the cache's link table also counts
    # the topic's own links for the fact, which a parse of the held records cannot see).
    rng = random.Random(300 + seed)
    vault.import_records([r for r in _linked_records(rng, clone, 60) if r.id != "fact-002" or isinstance(r, Fact)],
                         source="test")
    for request in _topic_requests(rng, clone, 4):
        if request.topic == "fact-002":
            continue
        _assert_same(vault, request)


def test_topic_missing_or_dangling(vault: Any, clone: dict[str, str]) -> None:
    from am.errors import NotFoundError

    vault.import_records(_linked_records(random.Random(7), clone, 30), source="test")
    with pytest.raises(NotFoundError):
        slice_vault(vault, SliceRequest(topic="nowhere-x"))
    with pytest.raises(NotFoundError):
        slice_vault(vault, SliceRequest(topic="fact-001"))  # a fact id, but no topic file has it
    # person-li has facts but no topic file, so it cannot start a neighbourhood either.
    with pytest.raises(NotFoundError):
        slice_vault(vault, SliceRequest(topic="person-li"))


def test_topic_graph_odd_cases(vault: Any, clone: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    import am.packs.cache

    topic = lambda tid, body="": Topic(id=tid, kind="concept", title=tid, body=body)  # noqa: E731
    fact = lambda fid, *about: Fact(id=fid, topics=about, body=f"{fid}.\n")  # noqa: E731
    vault.import_records([
        # Topic t-a links two facts, making them nodes; a fact about a fact id steps through it
        # only when that id comes later (fact-020 after fact-010), not earlier (fact-005 before fact-030).
        topic("t-a", "See [[fact-010]] and [[fact-030]].\n"), topic("t-b"), topic("t-c"), topic("t-d"),
        topic("t-e", "Dangling [[nowhere]].\n"), topic("t-f", "Also [[nowhere]], and [[other:t-a]].\n"),
        fact("fact-010", "t-a", "fact-020"), fact("fact-020", "t-b"),
        fact("fact-005", "t-c"), fact("fact-030", "t-a", "fact-005"),
        # A topic with a fact's id: its own links count as the fact's (the fact's topics link t-d).
        topic("fact-040", "Links [[t-d]].\n"), fact("fact-040", "t-e"),
        # Facts made nodes by facts' links: as a link's target, and as a linking fact's topic.
        topic("t-g"), topic("t-h"), topic("t-i"), topic("t-j"), topic("t-k"),
        Fact(id="fact-050", topics=("t-j",), body="Links [[fact-060]].\n"), fact("fact-060", "t-k"),
        Fact(id="fact-070", topics=("t-g", "fact-080"), body="Links [[t-h]].\n"), fact("fact-080", "t-i"),
    ], source="test")

    def near(start: str, depth: int) -> set[str]:
        request = SliceRequest(topic=start, depth=depth, max_tokens=0)
        fast = slice_vault(vault, request)
        assert fast.resolution.counted is not None
        with monkeypatch.context() as patch:
            patch.setattr(am.packs.cache, "cached_pack", lambda *args, **kwargs: None)
            general = slice_vault(vault, request)
        assert render_markdown(fast) == render_markdown(general)
        assert render_json(fast) == render_json(general)
        return {t.id for t, _ in fast.sections} | {t.id for t in fast.others}

    monkeypatch.setattr(am.packs.cache, "_DENSE", 0.0)  # read along the rank index
    assert near("t-a", 3) == {"t-a", "t-b"}
    monkeypatch.setattr(am.packs.cache, "_DENSE", float("inf"))  # read by topic, then sorted
    assert near("t-a", 0) == {"t-a"}
    assert near("t-a", 3) == {"t-a", "t-b"}  # t-a - fact-010 - fact-020 - t-b; fact-005 was passed before
    assert near("t-e", 1) == {"t-e", "t-d", "fact-040"}  # fact-040's topic t-e links t-d; the topic is a node
    assert near("t-e", 2) == {"t-e", "t-d", "fact-040", "t-f"}  # through the dangling target
    assert near("t-d", 4) == {"t-d", "t-e", "fact-040", "t-f"}
    assert near("t-j", 2) == {"t-j", "t-k"}  # t-j - fact-060 (a link target) - t-k
    assert near("t-h", 1) == {"t-h", "t-g"}
    assert near("t-h", 2) == {"t-h", "t-g", "t-i"}  # t-h - fact-080 (a linking fact's topic) - t-i


def test_twins_take_the_general_path(vault: Any, clone: dict[str, str]) -> None:
    rng = random.Random(42)
    vault.import_records(_random_records(rng, clone, 40), source="test")
    request = SliceRequest(repo="project-alpha", branch="main", max_tokens=900)
    _assert_same(vault, request)
    # A person's copy of a fact file under another path: the first by path wins, which needs every row.
    source = next(p for p in vault.root.glob("facts/**/fact-001.md"))
    copy = source.parent.parent / "00" / source.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, copy)
    run_git(vault.root, "add", ".")
    run_git(vault.root, "commit", "-q", "-m", "a copy")
    vault.cache().refresh()  # the cache looks at hand commits at most once a second
    assert vault.cache().has_twins()
    _assert_same(vault, request, fast_path=False)
    copy.unlink()
    run_git(vault.root, "commit", "-q", "-am", "copy gone")
    vault.cache().refresh()
    assert not vault.cache().has_twins()
    _assert_same(vault, request)


def test_worked_example_on_the_cache_path(vault: Any, clone: dict[str, str]) -> None:
    vault.add_topic(title="Alpha service", kind="project", id="project-alpha")
    vault.add_fact("Alpha only offers getUser(id).", topics=["project-alpha"], id="fact-getuser",
                   repo="project-alpha", branch="main", commit=clone["c1"])
    vault.supersede_fact("fact-getuser", "Alpha offers getUsers(ids) too.", reason="batch", id="fact-getusers",
                         branch="feat", commit=clone["f1"])
    main = slice_vault(vault, SliceRequest(repo="project-alpha", branch="main"))
    feat = slice_vault(vault, SliceRequest(repo="project-alpha", branch="feat"))
    assert main.resolution.counted == (1, 0) and feat.resolution.counted == (1, 0)
    assert [f.id for _, fs in main.sections for f in fs] == ["fact-getuser"]
    assert [f.id for _, fs in feat.sections for f in fs] == ["fact-getusers"]
    assert feat.resolution.superseded_here == {"fact-getuser": "fact-getusers"}
    assert "1 superseded here" in render_markdown(feat)
