"""`am graph`: the topic graph of a world as Mermaid, DOT, JSON and one self-contained HTML file.

The oracle for what the graph holds is `am slice --format json` of the same
world, run as a separate process; Git's state is read with the git CLI.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PYTHON, run_git, subprocess_env

from am.packs.layout import SIZE, layout

WORLD = ["--repo", "project-alpha"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The demo vault and its code repository, built once for the module, with a registry of their own."""
    home = tmp_path_factory.mktemp("demo-home")
    root = tmp_path_factory.mktemp("demo") / "demo"
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "demo", str(root)], capture_output=True, text=True, check=False,
                          env=subprocess_env(AM_HOME=str(home)))
    assert proc.returncode == 0, proc.stderr
    yield root, home


_SEEN: dict[tuple[str, ...], str] = {}


def am(demo: tuple[Path, Path], *args: str, code: int = 0, again: bool = False) -> str:
    """Run am on the demo; a read already run returns its output again (the demo never changes), unless ``again``."""
    root, home = demo
    key = (str(root), *args)
    if code == 0 and not again and key in _SEEN:
        return _SEEN[key]
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), *args], capture_output=True, check=False,
                          text=True, env=subprocess_env(AM_HOME=str(home)), cwd=root)
    assert proc.returncode == code, proc.stderr
    if code == 0:
        _SEEN[key] = proc.stdout
    return proc.stdout if code == 0 else proc.stderr


def slice_topics(demo: tuple[Path, Path], *args: str) -> tuple[dict[str, int], set[tuple[str, str, str]]]:
    """Return {topic: facts holding there} and the relations that `am slice` shows for the same world."""
    pack = json.loads(am(demo, "slice", "--max-tokens", "0", "--format", "json", *args))
    counts = {t["id"]: 0 for t in pack["topics"]} | {t: 0 for t in pack["other_topics"]}
    for group in (pack["pinned"], *(t["facts"] for t in pack["topics"]), pack["stale"], pack["contested"],
                  pack["pending"]):
        for fact in group:
            for tid in fact["topics"]:
                if tid in counts:
                    counts[tid] += 1
    relations = {(r["from"], r["rel"], r["to"]) for r in pack["relations"] if r["status"] == "active"}
    return counts, relations


def uses(root: Path) -> int:
    path = root / ".am" / "cache" / "usage.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT coalesce(sum(n), 0) FROM uses").fetchone()[0])


@pytest.mark.parametrize("branch", ["main", "feat-batch", "feat-rate-limit"])
def test_the_json_graph_is_the_slice_of_the_same_world(demo: tuple[Path, Path], branch: str) -> None:
    graph = json.loads(am(demo, "graph", *WORLD, "--branch", branch, "--format", "json"))
    counts, relations = slice_topics(demo, *WORLD, "--branch", branch)
    assert {n["id"]: n["facts"] for n in graph["nodes"]} == counts
    assert {(e["from"], e["rel"], e["to"]) for e in graph["edges"] if e["rel"] != "links-to"} == relations
    assert graph["world"]["branch"] == branch
    kinds = {n["kind"] for n in graph["nodes"]}
    assert {"project", "tool", "person", "decision"} <= kinds
    assert len({graph["kinds"][k] for k in kinds}) == len(kinds)  # one colour a kind
    for node in graph["nodes"]:
        assert 0 <= node["x"] <= SIZE and 0 <= node["y"] <= SIZE


def test_switching_the_branch_changes_the_counts_as_the_slice_does(demo: tuple[Path, Path]) -> None:
    main = {n["id"]: n["facts"] for n in json.loads(am(demo, "graph", *WORLD, "--branch", "main", "--format", "json"))["nodes"]}
    limit = {n["id"]: n["facts"] for n in json.loads(am(demo, "graph", *WORLD, "--branch", "feat-rate-limit",
                                                         "--format", "json"))["nodes"]}
    assert main["project-alpha"] < limit["project-alpha"]  # a fact of the branch's own commits holds there only
    assert main == slice_topics(demo, *WORLD, "--branch", "main")[0]
    assert limit == slice_topics(demo, *WORLD, "--branch", "feat-rate-limit")[0]


def test_a_topics_neighbourhood(demo: tuple[Path, Path]) -> None:
    graph = json.loads(am(demo, "graph", *WORLD, "--branch", "main", "--topic", "tool-redis", "--depth", "1",
                          "--format", "json"))
    counts, _ = slice_topics(demo, *WORLD, "--branch", "main", "--topic", "tool-redis", "--depth", "1")
    assert {n["id"] for n in graph["nodes"]} == set(counts) == {"tool-redis", "project-alpha"}
    assert graph["scope"]["topic"] == "tool-redis"
    focus = next(n for n in graph["nodes"] if n["id"] == "tool-redis")
    assert (focus["x"], focus["y"]) == (SIZE / 2, SIZE / 2) or len(graph["nodes"]) == 2
    err = am(demo, "graph", "--topic", "tool-nothing", code=4)
    assert err.startswith("Error: ") and "tool-nothing" in err and len(err.strip().splitlines()) == 1


def test_mermaid_lines_are_a_flowchart_of_the_graph(demo: tuple[Path, Path]) -> None:
    text = am(demo, "graph", *WORLD, "--branch", "main")  # mermaid is the default
    graph = json.loads(am(demo, "graph", *WORLD, "--branch", "main", "--format", "json"))
    lines = text.splitlines()
    assert lines[0] == "---" and lines[1].startswith("title: '") and lines[2] == "---"
    assert lines[3] == "flowchart LR"
    defined: dict[str, str] = {}
    edges = []
    classes = set()
    for line in lines[4:]:
        if m := re.fullmatch(r'    (n\d+)\["([^"]+)"\]:::(k_[a-z]+)', line):
            defined[m.group(1)] = m.group(2).split("<br/>")[0]
            classes.add(m.group(3))
        elif m := re.fullmatch(r"    (n\d+) (-->|-\.->)\|([a-z-]+)\| (n\d+)", line):
            edges.append((m.group(1), m.group(3), m.group(4)))
        elif m := re.fullmatch(r"    classDef (k_[a-z]+) fill:#[0-9a-f]{6},stroke:#333,color:#fff", line):
            classes.discard(m.group(1))
        else:
            pytest.fail(f"not a Mermaid flowchart line: {line!r}")
    assert classes == set()  # every class used is defined
    assert sorted(defined.values()) == sorted(n["id"] for n in graph["nodes"])
    named = {(defined[a], rel, defined[b]) for a, rel, b in edges}
    assert named == {(e["from"], e["rel"], e["to"]) for e in graph["edges"]}
    assert '"' not in "".join(defined.values())


def test_mermaid_escapes_what_would_break_a_label(tmp_path: Path) -> None:
    from am.packs.graph import _mermaid_text

    assert _mermaid_text('say "hi" <b> #1 `x`') == "say #quot;hi#quot; #lt;b#gt; #35;1 #96;x#96;"


def test_a_mermaid_label_shows_an_ampersand_as_written(vault: object, vault_path: Path) -> None:
    """A title &lt;x&gt; must show as &lt;x&gt;, not <x>: & and Mermaid's own entity placeholders are escaped."""
    vault.add_topic(title="&lt;x&gt; R&D ﬂ°amp¶ß", kind="concept", id="concept-x")  # type: ignore[attr-defined]
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault_path), "graph"], capture_output=True,
                          text=True, check=False, env=subprocess_env(), cwd=vault_path)
    assert proc.returncode == 0, proc.stderr
    (label,) = re.findall(r'^    n0\["(.*)"\]:::k_concept$', proc.stdout, re.MULTILINE)
    assert label == "concept-x<br/>#amp;lt;x#amp;gt; R#amp;D #64258;°amp#182;ß"
    # What Mermaid makes of it (#name; to an HTML entity), then the browser: the title as written.
    shown = html.unescape(re.sub(r"#(\w+);", lambda m: f"&{'#' * m.group(1).isdigit()}{m.group(1)};", label))
    assert shown == "concept-x<br/>&lt;x&gt; R&D ﬂ°amp¶ß"


def test_dot_parses_and_holds_the_graph(demo: tuple[Path, Path]) -> None:
    pydot = pytest.importorskip("pydot", reason="pydot (the test extra) parses DOT as an independent oracle")
    text = am(demo, "graph", *WORLD, "--branch", "main", "--format", "dot")
    graph = json.loads(am(demo, "graph", *WORLD, "--branch", "main", "--format", "json"))
    parsed = pydot.graph_from_dot_data(text)
    assert parsed is not None and len(parsed) == 1
    dot = parsed[0]
    names = {n.get_name().strip('"') for n in dot.get_nodes()} - {"node", "edge", "graph"}
    assert names == {n["id"] for n in graph["nodes"]}
    found = {(e.get_source().strip('"'), e.get_label().strip('"'), e.get_destination().strip('"'))
             for e in dot.get_edges()}
    assert found == {(e["from"], e["rel"], e["to"]) for e in graph["edges"]}
    for node in dot.get_nodes():
        if node.get_name().strip('"') == "tool-redis":
            assert node.get_fillcolor().strip('"') == graph["kinds"]["tool"]


def test_graphviz_reads_the_dot_where_installed(demo: tuple[Path, Path]) -> None:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed here (apt-get install graphviz)")
    text = am(demo, "graph", *WORLD, "--branch", "main", "--format", "dot")
    graph = json.loads(am(demo, "graph", *WORLD, "--branch", "main", "--format", "json"))
    proc = subprocess.run(["dot", "-Tplain"], input=text, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert {r[1].strip('"') for r in rows if r[0] == "node"} == {n["id"] for n in graph["nodes"]}
    assert {(r[1].strip('"'), r[2].strip('"')) for r in rows if r[0] == "edge"} == {
        (e["from"], e["to"]) for e in graph["edges"]}


def test_html_is_one_self_contained_file(demo: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "graph.html"
    am(demo, "graph", *WORLD, "--branch", "feat-batch", "--format", "html", "-o", str(out))
    text = out.read_text(encoding="utf-8")
    # Nothing is fetched: no src or href attribute, no url(), no @import, no fetch; the only "http"
    # is the SVG namespace's name, which a browser never loads.
    assert re.findall(r"https?://[^\s\"']+", text) == ["http://www.w3.org/2000/svg"]
    assert not re.search(r"\b(src|href)\s*=", text) and "url(" not in text.replace('url(#am-arrow)', "")
    assert "@import" not in text and "fetch(" not in text
    assert text.count("<script") == 3 and text.count("</script>") == 3
    data = json.loads(re.search(r'<script type="application/json" id="am-data">(.*?)</script>', text, re.DOTALL).group(1))
    graph = json.loads(am(demo, "graph", *WORLD, "--branch", "feat-batch", "--format", "json"))
    assert data["graph"] == graph
    pack = json.loads(am(demo, "slice", *WORLD, "--branch", "feat-batch", "--topic", "tool-redis", "--depth", "0",
                         "--max-tokens", "0", "--format", "json"))
    shown = data["topics"]["tool-redis"]
    assert [f["id"] for f in shown["topics"][0]["facts"]] == [f["id"] for t in pack["topics"] if t["id"] == "tool-redis"
                                                               for f in t["facts"]]
    assert [f["id"] for f in shown["contested"]] == [f["id"] for f in pack["contested"]]


def test_a_vault_title_cannot_end_the_script(tmp_path: Path) -> None:
    from am.web.export import _script_json

    text = _script_json({"title": "</script><script>alert(1)</script>"})
    assert "</script" not in text and json.loads(text)["title"].startswith("</script>")


def test_graph_is_byte_stable_and_writes_nothing(demo: tuple[Path, Path]) -> None:
    root = demo[0]
    head, status, used = run_git(root, "rev-parse", "HEAD"), run_git(root, "status", "--porcelain"), uses(root)
    for fmt in ("mermaid", "dot", "json"):
        assert am(demo, "graph", *WORLD, "--format", fmt) == am(demo, "graph", *WORLD, "--format", fmt, again=True)
    assert run_git(root, "rev-parse", "HEAD") == head and run_git(root, "status", "--porcelain") == status
    assert uses(root) == used  # a person looking is not an agent using the facts
    am(demo, "slice", *WORLD, again=True)
    assert uses(root) > used  # the oracle can tell: a slice does count


def test_layout_is_deterministic_and_rings_round_a_focus() -> None:
    nodes = [f"t{i}" for i in range(30)]
    edges = [(f"t{i}", f"t{(i * 7) % 30}") for i in range(30)]
    first = layout(nodes, edges)
    assert first == layout(list(reversed(nodes)), list(reversed(edges)))
    assert len(set(first.values())) == 30
    rings = layout(["a", "b", "c", "d"], [("a", "b"), ("b", "c")], focus="a")
    assert rings["a"] == (SIZE / 2, SIZE / 2)
    dist = {n: ((x - SIZE / 2) ** 2 + (y - SIZE / 2) ** 2) ** 0.5 for n, (x, y) in rings.items()}
    assert dist["a"] < dist["b"] < dist["c"] <= dist["d"] + 1e-6  # d is not reached: the outermost ring
    assert layout([], []) == {} and layout(["x"], []) == {"x": (SIZE / 2, SIZE / 2)}
