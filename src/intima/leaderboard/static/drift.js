/* INTIMA leaderboard: the drift view (only on sites built from a store with conversation runs).
 * This file draws and formats nothing: the charts, the table and the transcripts are rendered
 * once, in Python (leaderboard/charts.py, leaderboard/drift_render.py), for the site and the app
 * alike. Here the menus choose, a transcript file is loaded when its model is opened, and the
 * chosen fragment is swapped in. Security rule: menu entries and notes (store text) go in with
 * textContent; markup comes only from Python, where every piece of store text was escaped:
 * the page's <template>s (already parsed by the browser) and a transcript's "html". */
(function () {
  "use strict";
  var node = document.getElementById("drift-data");
  if (!node) { return; }
  var V = JSON.parse(node.textContent);
  var state = { scorer: V.default_scorer, scope: V.scopes[0] || "all", config: 0, conv: null };
  var parts = {};

  var U = window.INTIMA_DOM;  // board.js's helpers: every string goes in as text
  var el = U.el, select = U.select;  // and U.loadChunk, U.swap: the site's one loader and swap

  var swapTemplate = U.swapTemplate;  // a template of the page, cloned in place of root's content
  /* ---- the charts (a line per model over the turns) and the table of slopes, dropped
   * boundaries and turns without a label, for the chosen scorer and dimension ---- */
  function renderNumbers() {
    var key = V.scorers.indexOf(state.scorer) + "-" + V.scopes.indexOf(state.scope);
    swapTemplate(parts.charts, "drift-charts-" + key);
    swapTemplate(parts.table, "drift-table-" + key);
  }

  /* ---- transcript explorer: one file per model (data/c<i>.js), loaded when it is opened,
   * its escaped markup (drift_render.transcript_html) swapped in ---- */
  function renderExplorer(root) {
    root.textContent = "";
    var ctl = el("div", { "class": "controls" });
    ctl.appendChild(select("drift-config", "Model", V.configs.map(function (c, i) { return [i, c.label]; }), state.config, function (v) {
      state.config = Number(v); state.conv = null; renderExplorer(root);
    }));
    root.appendChild(ctl);
    var box = el("div", { id: "drift-transcript" }, "Loading conversations…");
    root.appendChild(box);
    U.loadChunk("c" + state.config, V.chunks[state.config], function (convs) {
      if (!convs.length) { box.textContent = "No conversation."; return; }
      if (!convs.some(function (c) { return c.id === state.conv; })) { state.conv = convs[0].id; }
      ctl.appendChild(select("drift-conv", "Conversation", convs.map(function (c) {
        return [c.id, c.choice];
      }), state.conv, function (v) { state.conv = v; show(); }));
      function show() {
        U.swap(box, convs.filter(function (c) { return c.id === state.conv; })[0].html);
      }
      show();
    });
  }

  /* ---- layout ---- */
  function init() {
    var app = document.getElementById("app");
    var sec = el("section", { id: "drift" });
    sec.appendChild(el("h2", null, "Drift over a conversation"));
    sec.appendChild(el("p", { "class": "drift-note" }, V.intro));
    var ctl = el("div", { "class": "controls" });
    ctl.appendChild(select("drift-scorer", "Scorer", V.scorers.map(function (s) { return [s, s]; }), state.scorer, function (v) { state.scorer = v; renderNumbers(); }));
    ctl.appendChild(select("drift-scope", "Dimension", V.scopes.map(function (s) { return [s, s === "all" ? "all dimensions" : s]; }), state.scope, function (v) { state.scope = v; renderNumbers(); }));
    sec.appendChild(ctl);
    parts.charts = sec.appendChild(el("div", { id: "drift-charts", "class": "drift-charts" }));
    parts.table = sec.appendChild(el("div", { id: "drift-numbers" }));
    sec.appendChild(el("h3", null, "Transcript explorer"));
    parts.explorer = sec.appendChild(el("div", { id: "drift-explorer" }));
    app.insertBefore(sec, document.getElementById("method"));
    if (!state.scorer) {
      parts.charts.appendChild(el("p", null, V.not_rated));
    } else {
      renderNumbers();
    }
    renderExplorer(parts.explorer);
    document.body.setAttribute("data-drift-ready", "1");
  }
  init();
})();
