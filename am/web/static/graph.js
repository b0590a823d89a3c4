/* am: draw a topic graph as SVG. Plain JavaScript, no library; part of am (MIT licence).
 * Used by `am serve` and inlined into the file `am graph --format html` writes.
 * amGraph.draw(svg, graph, onSelect) draws graph = {nodes: [{id, kind, title, colour, facts, x, y}],
 * edges: [{from, to, rel}]} (positions in [0, 1000], computed by am), with pan (drag) and zoom (wheel).
 */
(function (global) {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg"; // the SVG namespace name, never fetched

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG_NS, name);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (parent) { parent.appendChild(node); }
    return node;
  }

  var scale = 1;
  // Smaller nodes when there are many: a thousand topics must still fit side by side.
  function radius(node) { return (6 + Math.min(3 * Math.sqrt(node.facts || 0), 14)) * scale; }

  function draw(svg, graph, onSelect) {
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    scale = Math.min(1, 12 / Math.sqrt(Math.max(graph.nodes.length, 1)));
    var many = graph.nodes.length > 300, dense = graph.edges.length > 2000;
    svg.classList.toggle("am-many", many);
    var view = { x: -40, y: -40, w: 1080, h: 1080 };
    function applyView() { svg.setAttribute("viewBox", [view.x, view.y, view.w, view.h].join(" ")); }
    applyView();
    var defs = el("defs", {}, svg);
    var marker = el("marker", { id: "am-arrow", viewBox: "0 0 10 10", refX: "10", refY: "5",
      markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, defs);
    el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#777" }, marker);
    var layer = el("g", { "class": "am-layer" }, svg);
    var byId = {};
    graph.nodes.forEach(function (n) { byId[n.id] = n; });
    var edgeEls = [];
    graph.edges.forEach(function (e) {
      var a = byId[e.from], b = byId[e.to];
      if (!a || !b) { return; }
      var dx = b.x - a.x, dy = b.y - a.y, len = Math.sqrt(dx * dx + dy * dy) || 1;
      var ra = radius(a), rb = radius(b) + 3;
      var line = el("line", {
        x1: a.x + dx * ra / len, y1: a.y + dy * ra / len, x2: b.x - dx * rb / len, y2: b.y - dy * rb / len,
        "class": "am-edge" + (e.rel === "links-to" ? " am-link" : ""), "marker-end": "url(#am-arrow)",
        "data-from": e.from, "data-to": e.to
      }, layer);
      if (!dense) { el("title", {}, line).textContent = e.from + " " + e.rel + " " + e.to; }
      edgeEls.push({ line: line, e: e, a: a, b: b });
    });
    // Edge labels are drawn for the selected topic's edges only: a vault of a thousand topics has tens of
    // thousands of links, and a label each would double the page's elements.
    var labels = el("g", { "class": "am-labels" }, layer);
    var nodeEls = {};
    graph.nodes.forEach(function (n) {
      var g = el("g", { "class": "am-node", transform: "translate(" + n.x + "," + n.y + ")", tabindex: "0",
        "data-id": n.id, role: "button" }, layer);
      var circle = el("circle", { r: radius(n), fill: n.colour }, g);
      if (n.contested || n.stale) { circle.setAttribute("class", "am-flagged"); }
      el("title", {}, g).textContent = n.id + " (" + n.kind + "): " + n.title + "\n" + n.facts + " fact(s) hold here" +
        (n.contested ? ", " + n.contested + " contested" : "") + (n.stale ? ", " + n.stale + " stale" : "");
      var text = el("text", { y: radius(n) + 13, "class": "am-node-label" }, g);
      text.textContent = n.title || n.id;
      function choose() { select(n.id); if (onSelect) { onSelect(n); } }
      g.addEventListener("click", function (ev) { ev.stopPropagation(); choose(); });
      g.addEventListener("keydown", function (ev) { if (ev.key === "Enter" || ev.key === " ") { choose(); } });
      nodeEls[n.id] = g;
    });

    function select(id) {
      var near = {};
      near[id] = true;
      while (labels.firstChild) { labels.removeChild(labels.firstChild); }
      edgeEls.forEach(function (x) {
        var on = x.e.from === id || x.e.to === id;
        if (on) {
          near[x.e.from] = true;
          near[x.e.to] = true;
          el("text", { x: (x.a.x + x.b.x) / 2, y: (x.a.y + x.b.y) / 2 - 3, "class": "am-edge-label am-on" },
            labels).textContent = x.e.rel;
        }
        x.line.classList.toggle("am-on", on);
      });
      Object.keys(nodeEls).forEach(function (key) {
        nodeEls[key].classList.toggle("am-selected", key === id);
        nodeEls[key].classList.toggle("am-dim", !near[key]);
      });
    }

    // Pan by dragging the background, zoom with the wheel around the pointer.
    var drag = null;
    function point(ev) {
      var box = svg.getBoundingClientRect();
      return { x: view.x + (ev.clientX - box.left) / box.width * view.w,
               y: view.y + (ev.clientY - box.top) / box.height * view.h };
    }
    svg.onmousedown = function (ev) { drag = { x: ev.clientX, y: ev.clientY, vx: view.x, vy: view.y }; };
    svg.onmousemove = function (ev) {
      if (!drag) { return; }
      var box = svg.getBoundingClientRect();
      view.x = drag.vx - (ev.clientX - drag.x) / box.width * view.w;
      view.y = drag.vy - (ev.clientY - drag.y) / box.height * view.h;
      applyView();
    };
    svg.onmouseup = svg.onmouseleave = function () { drag = null; };
    svg.onwheel = function (ev) {
      ev.preventDefault();
      var at = point(ev), k = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
      view.x = at.x - (at.x - view.x) * k;
      view.y = at.y - (at.y - view.y) * k;
      view.w *= k;
      view.h *= k;
      applyView();
    };
    return { select: select };
  }

  function legend(container, kinds) {
    while (container.firstChild) { container.removeChild(container.firstChild); }
    Object.keys(kinds).forEach(function (kind) {
      var item = document.createElement("span");
      item.className = "am-legend-item";
      var dot = document.createElement("span");
      dot.className = "am-dot";
      dot.style.background = kinds[kind];
      item.appendChild(dot);
      item.appendChild(document.createTextNode(kind));
      container.appendChild(item);
    });
  }

  function html(tag, cls, text, parent) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  // Show a slice's JSON (am slice --topic ID --format json, or the same shape embedded in graph.html).
  function facts(aside, data, topicId) {
    while (aside.firstChild) { aside.removeChild(aside.firstChild); }
    var topic = (data.topics || []).filter(function (t) { return t.id === topicId; })[0];
    html("h2", "", topic ? topic.title + " (" + topic.id + ")" : topicId, aside);
    if (topic) {
      html("div", "meta", topic.kind + (topic.aliases && topic.aliases.length ? "; also " + topic.aliases.join(", ") : ""), aside);
      if (topic.summary) { html("p", "", topic.summary, aside); }
    }
    if (data.world) {
      var w = data.world;
      html("div", "meta", "world: " + (w.repo || "no repo") + (w.branch ? " @ " + w.branch : "") +
        (w.commit ? " (" + w.commit.slice(0, 10) + ")" : "") + "; at " + (w.at || "now"), aside);
    }
    var unreadable = (data.vault && data.vault.unreadable) || [];
    if (unreadable.length) {  // as am slice says it: a fact of this topic may be missing from what follows
      html("div", "meta bad", unreadable.length + " record file" + (unreadable.length > 1 ? "s" : "") +
        " unreadable, not shown (am check says why): " + unreadable.join(", "), aside);
    }
    var groups = [["pinned", data.pinned], ["facts", topic ? topic.facts : []], ["stale", data.stale],
      ["contested", data.contested], ["pending review", data.pending]];
    var shown = 0;
    groups.forEach(function (group) {
      var list = (group[1] || []).filter(function (f) { return !f.topics || f.topics.indexOf(topicId) >= 0; });
      if (!list.length) { return; }
      html("h3", "", group[0] + " (" + list.length + ")", aside);
      list.forEach(function (f) {
        shown += 1;
        var box = html("div", "fact " + (f.stale ? "stale " : "") + (f.status || ""), null, aside);
        html("div", "", f.text, box);
        var where = [f.repo, f.branch, f.commit ? f.commit.slice(0, 10) : null].filter(Boolean).join(" @ ");
        html("div", "meta", f.id + " · " + f.status + " · " + f.confidence + " · " + f.provenance +
          (where ? " · " + where : "") + (f.stale ? " · stale: " + JSON.stringify(f.stale) : ""), box);
      });
    });
    if (!shown) { html("p", "meta", "No fact of this topic holds in this world.", aside); }
    if (data.command) {
      html("div", "meta", "the same from the command line:", aside);
      html("span", "cmd", data.command, aside);
    }
  }

  global.amGraph = { draw: draw, legend: legend, facts: facts, html: html };
})(window);
