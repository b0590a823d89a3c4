/* am serve: the page. Plain JavaScript, no library; every request is a GET to this server. Part of am (MIT). */
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var h = window.amGraph.html;
  var worlds = { repos: [] };
  var current = "graph";

  function params() {
    var q = new URLSearchParams();
    ["repo", "branch", "commit", "at"].forEach(function (k) { if ($(k).value) { q.set(k, $(k).value); } });
    if ($("pending").checked) { q.set("pending", "1"); }
    return q;
  }

  function graphParams() {
    var q = params();
    if ($("topic").value) { q.set("topic", $("topic").value); q.set("depth", $("depth").value); }
    return q;
  }

  function showError(err) {
    var box = $("message");
    while (box.firstChild) { box.removeChild(box.firstChild); }
    if (err) { h("div", "error", err, box); }
  }

  function get(path, q) {
    var url = path + (q && String(q) ? "?" + q : "");
    return fetch(url, { headers: { accept: "application/json" } }).then(function (r) {
      return r.json().then(function (data) {
        if (!r.ok) { throw new Error(data.error + (data.hint ? " (" + data.hint + ")" : "")); }
        return data;
      });
    });
  }

  function copyButton(text, parent) {
    var b = h("button", "copy", "copy", parent);
    b.type = "button";
    b.addEventListener("click", function () {
      if (navigator.clipboard) { navigator.clipboard.writeText(text); }
      b.textContent = "copied";
    });
    return b;
  }

  function command(text, parent) {
    var wrap = h("span", "", null, parent);
    h("span", "cmd", text, wrap);
    copyButton(text, wrap);
    return wrap;
  }

  function fillBranches() {
    var repo = worlds.repos.filter(function (r) { return r.name === $("repo").value; })[0];
    var select = $("branch"), keep = select.value;
    while (select.options.length > 1) { select.remove(1); }
    (repo ? repo.branches : []).forEach(function (b) { select.add(new Option(b, b)); });
    select.value = keep;
  }

  // A value the address gives that a list lacks (an unknown repo, a depth of 99) is kept, not dropped for the
  // default: the server answers it, or names what is wrong with it, as its routes do.
  function choose(select, value) {
    var known = Array.prototype.some.call(select.options, function (o) { return o.value === value; });
    if (value && !known) { select.add(new Option(value, value)); }
    select.value = value;
  }

  // ------------------------------------------------------------ graph
  function loadGraph() {
    $("export").href = "/export/graph.html?" + graphParams();
    return get("/api/graph", graphParams()).then(function (g) {
      showError(null);
      var w = g.world;
      $("scope").textContent = g.vault.name + ": " + (w.repo || "no repo") + (w.branch ? " @ " + w.branch : "") +
        (w.commit ? " (" + w.commit.slice(0, 10) + ")" : "") + "; " + g.scope.description + "; " +
        g.nodes.length + " topics, " + g.edges.length + " edges";
      window.amGraph.legend($("legend"), g.kinds);
      var list = $("topics");
      while (list.firstChild) { list.removeChild(list.firstChild); }
      g.nodes.forEach(function (n) { list.appendChild(new Option(n.title, n.id)); });
      var drawn = window.amGraph.draw($("graph"), g, function (n) { loadTopic(n.id); });
      if (g.scope.topic) { drawn.select(g.scope.topic); return loadTopic(g.scope.topic); }
    }).catch(function (e) { showError(e.message); });
  }

  function loadTopic(id) {
    var aside = $("facts");
    return get("/api/topic/" + encodeURIComponent(id), params()).then(function (data) {
      window.amGraph.facts(aside, data, id);
      aside.setAttribute("data-topic", id);
    }).catch(function (e) { showError(e.message); });
  }

  // ------------------------------------------------------------ activity
  function loadLog() {
    var q = new URLSearchParams();
    if ($("actor").value) { q.set("actor", $("actor").value); }
    if ($("op").value) { q.set("op", $("op").value); }
    return get("/api/log", q).then(function (data) {
      var select = $("actor"), keep = select.value;
      while (select.options.length > 1) { select.remove(1); }
      Object.keys(data.actors).forEach(function (a) { select.add(new Option(a + " (" + data.actors[a] + ")", a)); });
      select.value = keep;
      timeline(data.entries);
      var body = $("log").tBodies[0];
      while (body.firstChild) { body.removeChild(body.firstChild); }
      data.entries.forEach(function (e) {
        var row = body.insertRow();
        row.setAttribute("data-commit", e.commit);
        h("td", "meta", e.time.replace("T", " "), row);
        h("td", "", e.actor, row);
        h("td", "", e.op, row);
        h("td", "meta", e.records.slice(0, 4).join(", ") + (e.records.length > 4 ? " +" + (e.records.length - 4) : ""), row);
        h("td", "", e.subject, row);
        var undo = h("td", "", null, row);
        if (e.undo) { command(e.undo, undo); }
      });
    }).catch(function (e) { showError(e.message); });
  }

  function timeline(entries) {
    var svg = $("timeline"), NS = "http://www.w3.org/2000/svg"; // the SVG namespace name, never fetched
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    if (!entries.length) { svg.setAttribute("height", "0"); return; }
    var actors = [], ops = [];
    entries.forEach(function (e) {
      if (actors.indexOf(e.actor) < 0) { actors.push(e.actor); }
      var kind = e.op.split(".")[0];
      if (ops.indexOf(kind) < 0) { ops.push(kind); }
    });
    actors.sort();
    var times = entries.map(function (e) { return Date.parse(e.time); });
    var lo = Math.min.apply(null, times), hi = Math.max.apply(null, times), span = (hi - lo) || 1;
    var width = 1000, left = 130, row = 22, height = actors.length * row + 30;
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("height", String(height));
    var colours = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"];
    function add(name, attrs) {
      var node = document.createElementNS(NS, name);
      Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
      svg.appendChild(node);
      return node;
    }
    actors.forEach(function (a, i) {
      add("text", { x: 4, y: 18 + i * row }).textContent = a;
      add("line", { x1: left, x2: width - 10, y1: 14 + i * row, y2: 14 + i * row, stroke: "#eee" });
    });
    entries.forEach(function (e, k) {
      var x = left + (times[k] - lo) / span * (width - left - 20);
      var dot = add("circle", { cx: x, cy: 14 + actors.indexOf(e.actor) * row, r: 5,
        fill: colours[ops.indexOf(e.op.split(".")[0]) % colours.length] });
      var t = document.createElementNS(NS, "title");
      t.textContent = e.time + " " + e.actor + " " + e.op + ": " + e.subject;
      dot.appendChild(t);
    });
    ops.forEach(function (op, i) {
      add("circle", { cx: left + i * 110, cy: height - 8, r: 5, fill: colours[i % colours.length] });
      add("text", { x: left + 8 + i * 110, y: height - 4 }).textContent = op;
    });
    add("text", { x: left, y: height - 18 }).textContent = new Date(lo).toISOString().slice(0, 10);
    add("text", { x: width - 90, y: height - 18 }).textContent = new Date(hi).toISOString().slice(0, 10);
  }

  // ------------------------------------------------------------ review
  function factBox(f, parent) {
    var box = h("div", "fact " + (f.status || ""), null, parent);
    h("div", "", f.text, box);
    h("div", "meta", f.id + " · " + f.status + " · " + f.confidence + " · " + f.provenance + " · topics " +
      f.topics.join(", ") + (f.reason ? " · reason: " + f.reason : ""), box);
    (f.commands || []).forEach(function (c) { command(c, h("div", "", null, box)); });
    return box;
  }

  function loadReview() {
    return get("/api/review", params()).then(function (data) {
      var root = $("review");
      while (root.firstChild) { root.removeChild(root.firstChild); }
      var sections = [
        ["Stale in this world", data.stale, function (f, box) {
          h("div", "meta", f.evidence, box);
          if (f.note) { h("div", "meta", f.note, box); }
        }],
        ["Contested", data.contested, null],
        ["Pending review", data.pending, null],
      ];
      sections.forEach(function (s) {
        var card = h("section", "card", null, root);
        h("h2", "", s[0] + " (" + s[1].length + ")", card);
        if (!s[1].length) { h("p", "meta", "nothing", card); }
        s[1].forEach(function (f) { var box = factBox(f, card); if (s[2]) { s[2](f, box); } });
      });
      var pairs = h("section", "card", null, root);
      h("h2", "", "Conflicting pairs (conflicts-with) (" + data.pairs.length + ")", pairs);
      if (!data.pairs.length) { h("p", "meta", "nothing", pairs); }
      data.pairs.forEach(function (p) {
        var box = h("div", "fact contested", null, pairs);
        h("div", "", p.from + ": " + (p.texts[p.from] || "?"), box);
        h("div", "", p.to + ": " + (p.texts[p.to] || "?"), box);
        h("div", "meta", p.id + (p.note ? " · " + p.note : ""), box);
      });
      var proposals = h("section", "card", null, root);
      h("h2", "", "Proposals (" + data.proposals.length + ")", proposals);
      if (!data.proposals.length) { h("p", "meta", "nothing", proposals); }
      data.proposals.forEach(function (p) { h("pre", "", JSON.stringify(p, null, 2), proposals); });
    }).catch(function (e) { showError(e.message); });
  }

  // ------------------------------------------------------------ numbers
  function bars(title, counts, parent) {
    var card = h("section", "card bars", null, parent);
    h("h2", "", title, card);
    var keys = Object.keys(counts), top = Math.max.apply(null, keys.map(function (k) { return counts[k]; }).concat([1]));
    if (!keys.length) { h("p", "meta", "nothing", card); }
    keys.forEach(function (k) {
      var bar = h("div", "bar", null, card);
      h("span", "name", k, bar);
      var fill = h("span", "fill", null, bar);
      fill.style.width = Math.round(200 * counts[k] / top) + "px";
      h("span", "meta", counts[k], bar);
    });
  }

  function loadNumbers() {
    return get("/api/numbers", params()).then(function (data) {
      var root = $("numbers");
      while (root.firstChild) { root.removeChild(root.firstChild); }
      bars("Facts by status (" + data.facts + ")", data.by_status, root);
      bars("Facts written by actor", data.by_actor, root);
      bars("Facts by week created", data.by_week, root);
      var p = data.pack, packCard = h("section", "card", null, root);
      h("h2", "", "Full pack of this world", packCard);
      h("p", "", (p.repo || "no repo") + (p.branch ? " @ " + p.branch : "") + (p.commit ? " (" + p.commit.slice(0, 10) + ")" : "") +
        ": " + p.facts + " facts, " + p.tokens + " tokens, " + p.bytes + " bytes", packCard);
      command(p.command, packCard);
      var card = h("section", "card", null, root);
      h("h2", "", "Facts that hold per branch", card);
      var table = h("table", "", null, card), head = table.insertRow();
      ["repo", "branch", "facts"].forEach(function (c) { h("th", "", c, head); });
      data.worlds.forEach(function (w) {
        var row = table.insertRow();
        [w.repo, w.branch || "", w.facts].forEach(function (c) { h("td", "", c, row); });
      });
      data.worlds_left_out.forEach(function (o) {
        h("p", "meta", o.branches + " more branches of " + o.repo + " not counted (the first 20 by name are)", card);
      });
      var cache = h("section", "card", null, root), c = data.cache;
      h("h2", "", "Cache health", cache);
      h("p", c.ok ? "ok" : "bad", c.ok ? "healthy" : "needs a look", cache);
      if (c.error) { h("p", "bad", c.error, cache); }
      if (c.records) {
        h("div", "meta", "records: " + Object.keys(c.records).map(function (k) { return c.records[k] + " " + k; }).join(", "), cache);
        h("div", "meta", "reflects commit " + (c.head || "none").slice(0, 10) + (c.fresh ? " (the vault's head)" : " (behind)") +
          "; " + (c.bytes / 1048576).toFixed(1) + " MiB; schema " + c.schema, cache);
        h("div", "meta", c.uncommitted.length + " uncommitted, " + c.invalid.length + " unreadable, " +
          c.duplicate_ids.length + " duplicate ids", cache);
      }
    }).catch(function (e) { showError(e.message); });
  }

  // ------------------------------------------------------------ wiring
  var loaders = { graph: loadGraph, activity: loadLog, review: loadReview, numbers: loadNumbers };

  function show(tab) {
    if (!Object.prototype.hasOwnProperty.call(loaders, tab)) { tab = "graph"; }  // an unknown ?tab=: the graph
    current = tab;
    document.querySelectorAll("header nav button").forEach(function (b) {
      b.classList.toggle("active", b.getAttribute("data-tab") === tab);
    });
    document.querySelectorAll(".tab").forEach(function (t) { t.classList.toggle("active", t.id === "tab-" + tab); });
    return loaders[tab]();
  }

  document.querySelectorAll("header nav button").forEach(function (b) {
    b.addEventListener("click", function () { show(b.getAttribute("data-tab")); });
  });
  $("world").addEventListener("submit", function (ev) { ev.preventDefault(); show(current); });
  $("repo").addEventListener("change", function () { fillBranches(); });
  $("log-show").addEventListener("click", loadLog);

  get("/api/worlds").then(function (data) {
    worlds = data;
    $("title").textContent = "am · " + data.vault;
    $("vault-commit").textContent = data.commit ? "vault commit " + data.commit.slice(0, 10) : "";
    data.repos.forEach(function (r) { $("repo").add(new Option(r.name, r.name)); });
    var start = new URLSearchParams(location.search), d = data["default"] || {};
    choose($("repo"), start.get("repo") || d.repo || (data.repos.length === 1 ? data.repos[0].name : ""));
    fillBranches();
    choose($("branch"), start.get("branch") || d.branch || "");
    $("commit").value = start.get("commit") || d.commit || "";
    $("at").value = start.get("at") || "";
    $("pending").checked = /^(1|true|yes|on)$/i.test(start.get("pending") || "");  // the server's reading
    $("topic").value = start.get("topic") || "";
    if (start.get("depth")) { choose($("depth"), start.get("depth")); }
    document.body.setAttribute("data-ready", "1");
    return show(start.get("tab") || "graph");
  }).then(function () { document.body.setAttribute("data-loaded", "1"); })
    .catch(function (e) { showError(e.message); });
})();
