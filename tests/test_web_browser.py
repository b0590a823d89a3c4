"""`am serve` in a real browser: headless Chromium (Debian's package) loads the page of the demo vault.

Skipped, with the reason printed, where no Chromium is installed (apt-get install chromium); nothing
else in the suite depends on it. The page's DOM after its scripts ran is compared with what `am slice`
and `git log` say; a screenshot of each page is kept in $AM_TEST_ARTEFACTS (else the test's tmp folder).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_git
from test_graph import am, demo  # noqa: F401 -- the module's demo fixture
from test_web import Server

BROWSER = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (apt-get install chromium)")
FACT_ID = re.compile(r"\b(f-\d{8}-\d{4}-[0-9a-f]{6}|fact-[a-z0-9-]+)\b")


@pytest.fixture(scope="module")
def server(demo: tuple[Path, Path]) -> Iterator[Server]:  # noqa: F811
    started = Server(*demo)
    yield started
    started.stop()


def browse(url: str, *extra: str) -> str:
    assert BROWSER is not None
    proc = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1300,900", "--virtual-time-budget=15000", *extra, url],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def dom(server: Server, query: str) -> str:
    text = browse(f"http://{server.host}/?{query}", "--dump-dom")
    assert 'data-loaded="1"' in text, text[-3000:]
    assert 'class="error"' not in text, text
    return text


def screenshot(server: Server, query: str, name: str, tmp_path: Path) -> Path:
    folder = Path(os.environ.get("AM_TEST_ARTEFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    browse(f"http://{server.host}/?{query}", f"--screenshot={path}")
    assert path.stat().st_size > 10_000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {path}")
    return path


def aside_facts(page: str) -> list[str]:
    aside = re.search(r'<aside id="facts"[^>]*>(.*?)</aside>', page, re.DOTALL)
    assert aside is not None
    return FACT_ID.findall(aside.group(1))


def test_the_graph_shows_the_demo_and_a_branch_switch_changes_facts_as_slice_does(
        server: Server, demo: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    graph = json.loads(am(demo, "graph", "--repo", "project-alpha", "--branch", "main", "--format", "json"))
    page = dom(server, "repo=project-alpha&branch=main")
    assert set(re.findall(r'<g class="am-node[^"]*"[^>]*data-id="([^"]+)"', page)) == {n["id"] for n in graph["nodes"]}
    drawn = set(re.findall(r'data-from="([^"]+)" data-to="([^"]+)"', page))
    assert drawn == {(e["from"], e["to"]) for e in graph["edges"]}
    seen = {}
    for branch in ("main", "feat-rate-limit"):
        page = dom(server, f"repo=project-alpha&branch={branch}&topic=project-alpha&depth=1")
        pack = json.loads(am(demo, "slice", "--repo", "project-alpha", "--branch", branch, "--topic", "project-alpha",
                             "--depth", "0", "--max-tokens", "0", "--format", "json"))
        expected = [f["id"] for group in (pack["pinned"], *(t["facts"] for t in pack["topics"]), pack["stale"],
                                          pack["contested"], pack["pending"]) for f in group]
        assert sorted(set(aside_facts(page))) == sorted(expected)
        seen[branch] = set(expected)
    assert seen["main"] != seen["feat-rate-limit"]
    screenshot(server, "repo=project-alpha&branch=feat-rate-limit&topic=project-alpha", "am-serve-graph.png", tmp_path)


def test_the_timeline_lists_the_demo_commits_by_actor(server: Server, demo: tuple[Path, Path],  # noqa: F811
                                                      tmp_path: Path) -> None:
    page = dom(server, "tab=activity")
    rows = re.findall(r'<tr data-commit="([0-9a-f]{40})"><td[^>]*>[^<]*</td><td>([^<]*)</td>', page)
    log = json.loads(am(demo, "log", "--format", "json"))
    assert rows == [(e["commit"], e["actor"]) for e in log]
    assert [c for c, _ in rows] == run_git(demo[0], "log", "--format=%H").split()
    assert page.count("am undo ") >= len(rows) - 1
    screenshot(server, "tab=activity", "am-serve-activity.png", tmp_path)


def test_a_record_the_topic_view_cannot_read_is_named_as_am_slice_names_it(alpha, am_home: Path) -> None:
    alpha.add_fact("Alpha answers in JSON.", topics=["project-alpha"], id="fact-json")
    alpha.add_fact("Alpha logs to stdout.", topics=["project-alpha"], id="fact-logs")
    broken = alpha.root / alpha.locate("fact-logs")
    broken.write_text("---\ntype: fact\nid: fact-logs\nstatus: [broken\n---\nAlpha logs to stdout.\n")
    started = Server(alpha.root, am_home)
    try:
        page = dom(started, "topic=project-alpha&depth=0")
    finally:
        started.stop()
    assert "Alpha answers in JSON." in page and "Alpha logs to stdout." not in page
    # The fact is missing from the view: the view says so and names the file, as the CLI's slice does.
    aside = re.search(r'<aside id="facts"[^>]*>(.*?)</aside>', page, re.DOTALL)
    assert aside is not None and "unreadable" in aside.group(1)
    assert str(broken.relative_to(alpha.root)) in aside.group(1)


def test_an_unknown_tab_in_the_address_shows_the_graph(server: Server) -> None:
    page = dom(server, "tab=nothing")  # a hand-edited or old link: the graph, not a script error
    assert 'id="tab-graph" class="tab active"' in page or 'class="tab active" id="tab-graph"' in page
    assert re.search(r'<g class="am-node', page)


def test_the_address_s_world_is_honoured_or_its_error_shown(server: Server) -> None:
    # ?at= and ?pending=1 reach the requests (the Numbers page's pack command says which world it measured).
    page = dom(server, "tab=numbers&repo=project-alpha&branch=main&at=2026-01-01&pending=1")
    assert "am slice --repo project-alpha --branch main --at 2026-01-01 --include-pending --max-tokens 0" in page
    # A value the picker's list lacks is not swapped for the default in silence: the server's error is shown.
    for query, error in (("topic=project-alpha&depth=99", "depth 99 is out of range"),
                         ("repo=nosuch", "repo 'nosuch' is neither registered here nor named by any record"),
                         ("repo=project-alpha&branch=nosuch", "branch nosuch is not in the clone of project-alpha")):
        page = browse(f"http://{server.host}/?{query}", "--dump-dom")
        assert 'data-loaded="1"' in page
        shown = re.search(r'<div class="error">([^<]*)</div>', page)
        assert shown is not None and error in shown.group(1), (query, page[-2000:])


def test_one_very_long_word_wraps_inside_its_fact_box(tmp_path: Path) -> None:
    # Layout measured in the browser: the page's stylesheet, a fact box in a narrow aside, a 3,000-letter word.
    css = Path(__file__).resolve().parent.parent / "am" / "web" / "static" / "style.css"
    page = tmp_path / "long.html"
    page.write_text(f'<!DOCTYPE html><html><head><link rel="stylesheet" href="{css.as_uri()}"></head><body>'
                    f'<aside style="width: 300px"><div class="fact" id="f"><div>{"x" * 3000}</div></div></aside>'
                    '<script>var f = document.getElementById("f");'
                    'document.body.setAttribute("data-width", f.scrollWidth + "/" + f.clientWidth);</script>'
                    '</body></html>')
    found = re.search(r'data-width="(\d+)/(\d+)"', browse(page.as_uri(), "--dump-dom"))
    assert found is not None
    assert int(found.group(1)) <= int(found.group(2))  # nothing wider than the box: the word wraps
