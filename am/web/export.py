"""`am graph --format html`: one self-contained HTML file of a world's topic graph, to share.

The file holds the graph (positions computed by am), every shown topic's
facts in the shape of ``am slice --topic ID --format json``, the page's own
script and stylesheet inlined: it opens from disk, offline, and fetches
nothing. Text from the vault goes in as JSON inside a ``<script
type="application/json">`` with ``<`` escaped, and is put on the page with
``textContent``, never as markup.

Decisions: docs/decisions/web.md.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from am.packs.graph import TopicGraph

__all__ = ["render_html", "topic_slices"]

_BOOT = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("am-data").textContent);
  var aside = document.getElementById("facts");
  window.amGraph.legend(document.getElementById("legend"), data.graph.kinds);
  var drawn = window.amGraph.draw(document.getElementById("graph"), data.graph, function (n) {
    window.amGraph.facts(aside, data.topics[n.id] || {topics: []}, n.id);
  });
  if (data.graph.scope.topic) {
    drawn.select(data.graph.scope.topic);
    window.amGraph.facts(aside, data.topics[data.graph.scope.topic] || {topics: []}, data.graph.scope.topic);
  }
})();
"""


def topic_slices(graph: TopicGraph) -> dict[str, dict[str, Any]]:
    """Return, for every node, its facts in the world in the shape of ``am slice --topic ID --depth 0 --format json``."""
    from am.packs.pack import pack_data

    # The whole pack's value, not its text read back (an indented dump of 20k facts cost seconds), and no
    # Markdown rendered to count its tokens: no topic's slice here shows them.
    whole: dict[str, Any] = pack_data(graph.pack, tokens=False)
    by_topic = {t["id"]: t for t in whole["topics"]}
    # A fact about two topics is shown once in a whole pack, under one of them; a topic's own slice shows it.
    sectioned = [f for t in whole["topics"] for f in t["facts"]]
    groups = {name: _by_topic(whole[name]) for name in ("pinned", "stale", "contested", "pending")}
    mine = _by_topic(sectioned)
    out: dict[str, dict[str, Any]] = {}
    for node in graph.nodes:
        topic = dict(by_topic.get(node.id, {"id": node.id, "title": node.title, "kind": node.kind, "aliases": [],
                                            "summary": ""}))
        topic["facts"] = mine.get(node.id, [])
        out[node.id] = {"world": whole["world"], "topics": [topic],
                        **{name: group.get(node.id, []) for name, group in groups.items()},
                        "command": _command(graph, node.id)}
    return out


def _by_topic(facts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Return the facts about each topic, in their order (each fact once under each of its topics)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for fact in facts:
        for tid in dict.fromkeys(fact["topics"]):
            out.setdefault(tid, []).append(fact)
    return out


def _command(graph: TopicGraph, topic_id: str) -> str:
    from dataclasses import replace

    return replace(graph.request, topic=topic_id, depth=0).argv() + " --max-tokens 0"


def _script_json(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    # Inside <script>, only "</" (and "<!--") can end or confuse it: escape every "<" as JSON allows.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(graph: TopicGraph) -> str:
    """Render one HTML file: the graph drawn by the page's own inlined script, every topic's facts on click."""
    from am.packs.graph import graph_json
    from am.web.files import static_text

    data = {"graph": graph_json(graph), "topics": topic_slices(graph)}
    world = data["graph"]["world"]
    where = (world["repo"] or "no repo") + (f" @ {world['branch']}" if world["branch"] else "") + (
        f" ({world['commit'][:10]})" if world["commit"] else "")
    title = f"{graph.pack.vault_name}: {where}"
    scope = data["graph"]["scope"]["description"]
    vault_commit = (graph.vault_commit or "")[:10]
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="am graph --format html">
<title>{html.escape(title)}</title>
<style>
{static_text("style.css")}
</style>
</head>
<body>
<header><h1>{html.escape(title)}</h1><span class="meta">{html.escape(scope)}; vault commit {html.escape(vault_commit)};
{len(graph.nodes)} topics, {len(graph.edges)} edges</span></header>
<main>
<div id="legend" class="am-legend"></div>
<div id="graph-wrap">
<svg class="am-graph" id="graph" role="img" aria-label="topic graph"></svg>
<aside id="facts"><p class="meta">Click a topic to see its facts in this world.</p></aside>
</div>
</main>
<script type="application/json" id="am-data">{_script_json(data)}</script>
<script>
{static_text("graph.js")}
</script>
<script>{_BOOT}</script>
</body>
</html>
"""
