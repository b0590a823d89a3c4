"""The web view's slow pages read only what they show (review, export, numbers), with the answers of the whole reads.

Each fast path is held equal to the slow one it replaces, on vaults built to have every case the slow one
tells apart, with the cache fresh, stale (a hand edit not yet committed) and missing.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from conftest import commit_file, run_git
from test_graph import demo  # noqa: F401 -- the demo vault, built once for the module

from am.packs.pack import SliceRequest


def _pack_stale(vault: Any, request: SliceRequest) -> tuple[Any, list[tuple[str, Any]], list[tuple[str, str]]]:
    """What the review's stale list was read from before: the whole --max-tokens 0 pack of every topic."""
    from am.packs.slice import slice_vault
    from am.packs.why import _cannot_tell

    pack = slice_vault(vault, replace(request, max_tokens=0, topic=None, query=None), count_use=False)
    shown = {f.id: f for f in pack.all_shown()}
    found = [(fid, mark.to_json()) for fid, mark in sorted(pack.stale.items()) if fid in shown]
    unknown = [(f.id, why) for f in sorted(shown.values(), key=lambda f: f.id)
               if f.paths and (why := _cannot_tell(pack.setup, f)) is not None]
    world = pack.setup.world
    return (world.repo, world.branch, world.commit, world.include_pending), found, unknown


def _report(vault: Any, request: SliceRequest) -> tuple[Any, list[tuple[str, Any]], list[tuple[str, str]]]:
    from am.packs.why import stale_in_world

    report = stale_in_world(vault, request)
    world = report.setup.world
    return ((world.repo, world.branch, world.commit, world.include_pending),
            [(s.fact.id, s.mark.to_json()) for s in report.facts],
            [(f.id, why) for f, why in report.cannot_tell])


def _watching_vault(alpha: Any, tmp_path: Path) -> tuple[Any, Path]:
    """A vault whose facts watch code in every way a world tells apart, and the code clone."""
    from am.registry import Registry

    code = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code))
    first = commit_file(code, "users.py", "def get_user(id): pass")
    second = commit_file(code, "billing.py", "def charge(): pass")
    Registry.load().add_repo("project-alpha", code)
    add = alpha.add_fact
    add("getUser takes one id.", topics=["project-alpha"], id="fact-users", repo="project-alpha", branch="main",
        commit=first, paths=("users.py",))
    add("Billing charges once.", topics=["project-alpha"], id="fact-billing", repo="project-alpha", branch="main",
        commit=second, paths=("billing.py",))
    add("Any repo: users.py is small.", topics=["project-alpha"], id="fact-anyrepo", commit=first,
        paths=("users.py",), unverified=True)
    add("Old view of users.py.", topics=["project-alpha"], id="fact-old", repo="project-alpha", branch="main",
        commit=first, paths=("users.py",))
    alpha.supersede_fact("fact-old", "New view of users.py.", reason="newer", id="fact-new", commit=first,
                         paths=("users.py",))
    add("Gone.", topics=["project-alpha"], id="fact-gone", repo="project-alpha", commit=first, paths=("users.py",))
    alpha.expire_fact("fact-gone", reason="wrong")
    add("Maybe.", topics=["project-alpha"], id="fact-maybe", repo="project-alpha", commit=first, paths=("users.py",))
    alpha.set_fact_status("fact-maybe", "pending-review")
    add("Another repo's.", topics=["project-alpha"], id="fact-beta", repo="project-beta", commit=first,
        paths=("users.py",), unverified=True)
    # Unverified: a --repo --path fact is otherwise observed at the clone's HEAD (issue 33.3b).
    add("No commit named.", topics=["project-alpha"], id="fact-nocommit", repo="project-alpha", paths=("users.py",),
        unverified=True)
    add("A commit the clone lacks.", topics=["project-alpha"], id="fact-lost", repo="project-alpha",
        commit="0" * 40, paths=("users.py",), unverified=True)
    run_git(code, "checkout", "-q", "-b", "feat-batch")
    add("The batch work starts here.", topics=["project-alpha"], id="fact-batch", repo="project-alpha",
        branch="feat-batch", paths=("users.py",))
    commit_file(code, "users.py", "def get_users(ids): pass")
    run_git(code, "checkout", "-q", "main")
    commit_file(code, "billing.py", "def charge(twice): pass")
    return alpha, code


WORLDS = [SliceRequest(repo="project-alpha", branch="main"), SliceRequest(repo="project-alpha", branch="feat-batch"),
          SliceRequest(repo="project-alpha", branch="feat-batch", include_pending=True), SliceRequest()]


def test_the_stale_list_read_from_the_cache_is_the_whole_pack_s(alpha: Any, am_home: Path, tmp_path: Path) -> None:
    vault, _ = _watching_vault(alpha, tmp_path)
    found = {}
    for request in WORLDS:
        found[request] = _report(vault, request)
        assert found[request] == _pack_stale(vault, request)
    main = dict(found[WORLDS[0]][1])
    assert sorted(main) == ["fact-billing"]  # users.py unchanged on main
    assert sorted(dict(found[WORLDS[1]][1])) == ["fact-anyrepo", "fact-batch", "fact-new", "fact-users"]
    assert [fid for fid, _ in found[WORLDS[0]][2]] == ["fact-lost", "fact-nocommit"]
    assert "fact-maybe" in dict(found[WORLDS[2]][1])  # a pending fact holds when pending ones are asked for
    assert found[WORLDS[3]][1:] == ([], [("fact-anyrepo", "no repo given: only records that name no repo hold")])


def test_the_stale_list_follows_a_hand_edit_and_a_deleted_cache(alpha: Any, am_home: Path, tmp_path: Path) -> None:
    from am.vault import Vault

    vault, _ = _watching_vault(alpha, tmp_path)
    root = vault.root
    vault.close()
    # An uncommitted edit (Obsidian): fact-billing expired by hand, fact-users now watching billing.py.
    billing = next(root.glob("facts/**/fact-billing.md"))
    billing.write_text(billing.read_text().replace("status: active", "status: expired"))
    users = next(root.glob("facts/**/fact-users.md"))
    users.write_text(users.read_text().replace("users.py", "billing.py"))
    for deleted in (False, True):
        if deleted:
            shutil.rmtree(root / ".am" / "cache")
        with Vault.open(root) as opened:
            got = _report(opened, WORLDS[0])
            assert sorted(dict(got[1])) == ["fact-users"]
            assert got == _pack_stale(opened, WORLDS[0])


def test_conflicts_with_pairs_are_read_alone_with_and_without_the_cache(alpha: Any, am_home: Path) -> None:
    for fid in ("fact-a", "fact-b", "fact-c", "fact-d"):
        alpha.add_fact(f"Text of {fid}.", topics=["project-alpha"], id=fid)
    alpha.add_relation("fact-a", "conflicts-with", "fact-b")
    alpha.add_relation("fact-c", "conflicts-with", "fact-d")
    alpha.add_relation("fact-a", "references", "fact-c")
    alpha.expire_relation("fact-c--conflicts-with--fact-d")
    every = alpha.list_relations(status="active")
    expected = [r for r in every if r.rel == "conflicts-with"]
    assert [r.id for r in expected] == ["fact-a--conflicts-with--fact-b"]
    assert alpha.list_relations(status="active", rel="conflicts-with") == expected
    assert alpha.list_relations(rel="conflicts-with", topic="fact-d") == [
        r for r in alpha.list_relations(topic="fact-d") if r.rel == "conflicts-with"]
    alpha.close()
    alpha.files.__dict__["_cache_failed"] = True  # the cache cannot be used: the files are read
    assert alpha.cache() is None
    assert alpha.list_relations(status="active", rel="conflicts-with") == expected


def test_the_review_page_is_the_same_from_a_fresh_a_stale_and_no_cache(alpha: Any, am_home: Path,
                                                                         tmp_path: Path) -> None:
    from am.vault import Vault
    from am.web.views import Views, world_request

    vault, _ = _watching_vault(alpha, tmp_path)
    vault.add_fact("On.", topics=["project-alpha"], id="fact-on")
    vault.add_fact("Off.", topics=["project-alpha"], id="fact-off")
    vault.add_relation("fact-on", "conflicts-with", "fact-off")
    vault.set_fact_status("fact-on", "contested")
    vault.set_fact_status("fact-off", "contested")
    root = vault.root
    vault.close()
    answers = []
    for step in ("fresh", "edited", "deleted"):
        if step == "edited":  # a hand edit: another pair joined, not committed
            rel = next(root.glob("relations/**/fact-on--conflicts-with--fact-off.md"))
            rel.write_text(rel.read_text().replace("status: active", "status: expired"))
        if step == "deleted":
            shutil.rmtree(root / ".am" / "cache")
        with Vault.open(root) as opened:
            views = Views(opened)
            answers.append(json.dumps([views.review(world_request(repo="project-alpha", branch=b))
                                       for b in ("main", "feat-batch")], sort_keys=True))
    fresh, edited, deleted = (json.loads(a) for a in answers)
    assert [p["id"] for p in fresh[0]["pairs"]] == ["fact-on--conflicts-with--fact-off"]
    assert fresh[0]["pairs"][0]["texts"] == {"fact-on": "On.", "fact-off": "Off."}
    assert edited[0]["pairs"] == [] and edited == deleted
    assert [f["id"] for f in fresh[0]["stale"]] == ["fact-billing"] and len(fresh[1]["stale"]) == 4



def _slices_by_reading_the_text_back(graph: Any) -> dict[str, Any]:
    """The export's topic slices as they were made before: the whole pack's JSON text parsed, each topic's
    facts picked by a scan of every fact."""
    from am.packs.pack import render_json
    from am.web.export import _command

    whole = json.loads(render_json(graph.pack))
    by_topic = {t["id"]: t for t in whole["topics"]}
    sectioned = [f for t in whole["topics"] for f in t["facts"]]
    out = {}
    for node in graph.nodes:
        topic = dict(by_topic.get(node.id, {"id": node.id, "title": node.title, "kind": node.kind, "aliases": [],
                                            "summary": ""}))
        topic["facts"] = [f for f in sectioned if node.id in f["topics"]]
        out[node.id] = {"world": whole["world"], "topics": [topic],
                        **{k: [f for f in whole[k] if node.id in f["topics"]]
                           for k in ("pinned", "stale", "contested", "pending")},
                        "command": _command(graph, node.id)}
    return out


def test_the_export_s_topic_slices_are_the_whole_pack_s(demo: tuple[Path, Path], monkeypatch: Any) -> None:  # noqa: F811
    from am.packs.graph import world_graph
    from am.vault import Vault
    from am.web.export import topic_slices

    root, home = demo
    monkeypatch.setenv("AM_HOME", str(home))
    with Vault.open(root) as vault:
        for request in (SliceRequest(repo="project-alpha", branch="main"),
                        SliceRequest(repo="project-alpha", branch="feat-batch", include_pending=True),
                        SliceRequest(repo="project-alpha", topic="tool-redis", depth=1), SliceRequest()):
            graph = world_graph(vault, request)
            got = topic_slices(graph)
            assert json.dumps(got, sort_keys=True) == json.dumps(_slices_by_reading_the_text_back(graph),
                                                                 sort_keys=True)
            kinds = {k for s in got.values() for k in ("pinned", "stale", "contested", "pending") if s[k]}
            assert got and (request.repo is None or kinds)  # the demo has such facts in its worlds


def test_a_pack_with_no_budget_sizes_its_facts_only_for_the_hint_of_what_was_left_out(demo: tuple[Path, Path],  # noqa: F811
                                                                                          monkeypatch: Any) -> None:
    from am.packs.assemble import fill, header_tokens
    from am.packs.pack import Pack, render_markdown
    from am.packs.slice import slice_vault
    from am.vault import Vault

    root, home = demo
    monkeypatch.setenv("AM_HOME", str(home))
    with Vault.open(root) as vault:
        whole = slice_vault(vault, SliceRequest(repo="project-alpha", branch="main", max_tokens=0), count_use=False)
    facts = [f for f in whole.all_shown()]
    topics = whole.resolution.topics
    packs = []
    for budget in (0, 10**9):  # no budget, and one nothing reaches: the same facts admitted
        request = replace(whole.request, max_tokens=budget)
        pack = Pack(request, whole.setup, whole.vault_name, whole.vault_commit, whole.resolution, whole.scope)
        pack.stale_lookup = whole.stale_lookup
        # A fact whose file went away between two reads of the cache (None) is left out: the hint needs sizes.
        fill(pack, iter([facts[0], None, *facts[1:]]), len(facts) + 1, set(topics), whole.relations, topics)
        packs.append(pack)
    none, huge = packs
    assert none.left_out == huge.left_out == {"facts": 1, "topics": 0, "relations": 0}
    # The same sizes, but for the header, which names the budget.
    assert none.needed - header_tokens(none) == huge.needed - header_tokens(huge) > 100
    assert "--max-tokens 0" not in render_markdown(none).split("## Left out")[1]  # the hint names a size
    assert [f.id for f in none.all_shown()] == [f.id for f in huge.all_shown()] == [f.id for f in whole.all_shown()]


def test_a_layout_asked_again_is_the_one_computed_afresh() -> None:
    from am.packs import layout as layouts

    nodes = [f"t{i:03d}" for i in range(300)]
    edges = [(nodes[i], nodes[(i * 7 + 3) % 300]) for i in range(300)]
    for focus in (None, "t005", "not-a-node"):
        layouts._KEPT.clear()
        fresh = layouts.layout(nodes, edges, focus=focus)
        fresh["t000"] = (-1.0, -1.0)  # a caller's change to its answer is its own
        kept = layouts.layout(list(reversed(nodes)), edges + edges[:5], focus=focus)  # the same graph
        layouts._KEPT.clear()
        assert kept == layouts.layout(nodes, edges, focus=focus) != fresh
    other = layouts.layout(nodes, edges[1:])
    layouts._KEPT.clear()
    assert other == layouts.layout(nodes, edges[1:]) != layouts.layout(nodes, edges)


def test_the_export_and_numbers_after_the_graph_are_their_answers_alone(alpha: Any, am_home: Path,
                                                                          tmp_path: Path) -> None:
    from am.vault import Vault
    from am.web.export import render_html
    from am.web.views import Views, world_request

    vault, _ = _watching_vault(alpha, tmp_path)
    root = vault.root
    vault.close()

    def answers(opened: Any, *, graph_first: bool) -> tuple[str, str]:
        views = Views(opened)
        request = world_request(repo="project-alpha", branch="main")
        if graph_first:
            views.graph(request)
        numbers = views.numbers(request)
        numbers["cache"].pop("bytes")
        return render_html(views.topic_graph(request)), json.dumps(numbers, sort_keys=True)

    def alone() -> tuple[str, str]:
        with Vault.open(root) as fresh:
            return answers(fresh, graph_first=False)

    with Vault.open(root) as opened:
        views = Views(opened)
        assert answers(opened, graph_first=True) == alone()
        main = world_request(repo="project-alpha", branch="main")
        views.graph(main)
        assert views.topic_graph(main) is views.topic_graph(main)  # kept, built once
        # A commit since: the kept graph is not this vault's any more.
        opened.add_fact("A new fact about billing.", topics=["project-alpha"], id="fact-new-one")
        html, numbers = answers(opened, graph_first=False)
        assert "fact-new-one" in html and (html, numbers) == alone()
        # An uncommitted edit: nothing is kept.
        new = next(root.glob("facts/**/fact-new-one.md"))
        new.write_text(new.read_text().replace("A new fact", "An edited fact"))
        opened.cache().refresh()
        html, numbers = answers(opened, graph_first=True)
        assert "An edited fact" in html and (html, numbers) == alone()
