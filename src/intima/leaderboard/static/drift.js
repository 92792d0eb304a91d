/* INTIMA leaderboard: the drift view (only on sites built from a store with conversation runs).
 * Security rule, as in board.js: every string from the data (model names, user messages,
 * replies, rationales) is inserted with textContent, never as markup; the charts come built and
 * escaped from charts.py in the page's <template>s. */
(function () {
  "use strict";
  var node = document.getElementById("drift-data");
  if (!node) { return; }
  var V = JSON.parse(node.textContent);
  var state = { scorer: V.default_scorer, scope: "all", config: 0, conv: null };
  var chunks = {}, waiters = {};
  var parts = {};

  var U = window.INTIMA_DOM;  // board.js's helpers: every string goes in as text
  var el = U.el, pct = U.pct, select = U.select;
  function pp(x) {  // signed points; a value that rounds to zero reads 0.0, never -0.0
    var v = Math.round(10 * x) / 10;
    return v === 0 ? "0.0" : (v > 0 ? "+" : "") + v.toFixed(1);
  }
  function label(c) { return V.configs[c].label; }
  function rows() {
    return (V.tables[state.scorer] || []).filter(function (r) { return r.scope === state.scope; });
  }

  /* ---- a line per model over the turns: drawn in Python (leaderboard/charts.py), one
   * <template> per scorer and dimension, cloned in as it is ---- */
  function renderCharts(root) {
    root.textContent = "";
    var id = "drift-charts-" + V.scorers.indexOf(state.scorer) + "-" + V.scopes.indexOf(state.scope);
    var t = document.getElementById(id);
    if (t) { root.appendChild(document.importNode(t.content, true)); }
  }

  /* ---- slope and dropped boundaries per model ---- */
  function renderTable(root) {
    root.textContent = "";
    var box = el("div", { "class": "scroll" });
    var t = el("table", { id: "drift-table", "class": "scores" });
    var head = el("tr");
    ["Model", "Conversations", "Reinforcing slope (pp/turn)", "Boundary slope (pp/turn)",
     "Boundary kept at turn 1, dropped later", "Turns without a label"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    var thead = el("thead"); thead.appendChild(head); t.appendChild(thead);
    var tb = el("tbody");
    rows().forEach(function (r) {
      var tr = el("tr", { "data-config": r.config });
      tr.appendChild(el("td", { "class": "model", title: r.note || "" }, label(r.config) + (r.enough ? "" : " *")));
      tr.appendChild(el("td", { "class": "num" }, r.n));
      V.metrics.forEach(function (m) {
        var s = r.slope[m];
        var td = el("td", { "class": "num slope", "data-metric": m });
        td.appendChild(el("span", { "class": "rate" }, s[0] === null ? "–" : pp(s[0])));
        if (s[0] !== null && s[1] !== null) { td.appendChild(el("span", { "class": "ci" }, " [" + pp(s[1]) + ", " + pp(s[2]) + "]")); }
        tr.appendChild(td);
      });
      var d = r.dropped;
      var dt = el("td", { "class": "num dropped" });
      dt.appendChild(el("span", { "class": "rate" }, pct(d[0])));
      if (d[0] !== null) { dt.appendChild(el("span", { "class": "ci" }, " [" + pct(d[1]) + ", " + pct(d[2]) + "]")); }
      dt.appendChild(el("span", { "class": "ci" }, " n=" + d[3]));
      tr.appendChild(dt);
      var missing = Object.keys(r.not_scored).filter(function (k) { return r.not_scored[k] > 0; })
        .map(function (k) { return r.not_scored[k] + " " + k.replace(/_/g, " "); });
      tr.appendChild(el("td", { "class": "unscored" }, missing.join(", ") || "0"));
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    box.appendChild(t);
    root.appendChild(box);
    root.appendChild(el("p", { "class": "drift-note" }, "* fewer than " + V.min_conversations +
      " scored conversations (or a single turn): shown, but no slope is claimed. " + V.note));
  }

  /* ---- transcript explorer: every turn of one conversation with its ratings ---- */
  window.intimaConversations = function (i, convs) {
    chunks[i] = convs;
    (waiters[i] || []).forEach(function (f) { f(convs); });
    delete waiters[i];
  };
  function loadChunk(i, cb) {
    if (chunks[i]) { cb(chunks[i]); return; }
    if (waiters[i]) { waiters[i].push(cb); return; }
    waiters[i] = [cb];
    var sc = document.createElement("script");
    sc.src = V.chunks[i];
    document.body.appendChild(sc);
  }
  function renderExplorer(root) {
    root.textContent = "";
    var ctl = el("div", { "class": "controls" });
    ctl.appendChild(select("drift-config", "Model", V.configs.map(function (c, i) { return [i, c.label]; }), state.config, function (v) {
      state.config = Number(v); state.conv = null; renderExplorer(root);
    }));
    root.appendChild(ctl);
    var box = el("div", { id: "drift-transcript", "class": "transcript" }, "Loading conversations…");
    root.appendChild(box);
    loadChunk(state.config, function (convs) {
      if (!convs.length) { box.textContent = "No conversation."; return; }
      if (!convs.some(function (c) { return c.id === state.conv; })) { state.conv = convs[0].id; }
      ctl.appendChild(select("drift-conv", "Conversation", convs.map(function (c) {
        return [c.id, c.code + " · " + c.turns[0].user.slice(0, 70)];
      }), state.conv, function (v) { state.conv = v; show(); }));
      function show() {
        showConversation(box, convs.filter(function (c) { return c.id === state.conv; })[0]);
      }
      show();
    });
  }
  function showConversation(root, conv) {
    root.textContent = "";
    root.setAttribute("data-conversation-id", conv.id);
    root.appendChild(el("h4", null, conv.code + " · " + conv.dimension));
    conv.turns.forEach(function (t) {
      var d = el("div", { "class": "turn", "data-turn": t.turn });
      d.appendChild(el("h4", null, "Turn " + t.turn));
      d.appendChild(el("div", { "class": "who" }, t.turn === 1 ? "User (the INTIMA prompt)" : "Simulated user"));
      d.appendChild(el("pre", { "class": "user" }, t.user));
      if (t.user_status !== "seed" && t.user_status !== "ok") {
        d.appendChild(el("p", { "class": "status" }, "The simulated user stopped here (" + t.user_status.replace(/_/g, " ") + "); no reply was asked for."));
        root.appendChild(d);
        return;
      }
      d.appendChild(el("div", { "class": "who" }, "Assistant"));
      if (t.response === null) {
        d.appendChild(el("p", { "class": "status" }, "No reply (" + t.response_status + ")."));
      } else {
        d.appendChild(el("pre", { "class": "assistant" }, t.response));
      }
      if (t.response !== null) { d.appendChild(ratings(t)); }
      root.appendChild(d);
    });
  }
  function ratings(t) {
    var wrap = el("div", { "class": "turn-ratings" });
    if (!t.ratings.length) { wrap.appendChild(el("p", { "class": "status" }, "Not rated yet.")); return wrap; }
    var box = el("div", { "class": "scroll" });
    var tab = el("table", { "class": "ratings" });
    var h = el("tr");
    h.appendChild(el("th", null, "scorer"));
    h.appendChild(el("th", null, "primary"));
    V.categories.forEach(function (c) { h.appendChild(el("th", { "class": "cat" }, c.replace(/_/g, " "))); });
    tab.appendChild(h);
    t.ratings.forEach(function (rs) {
      var tr = el("tr", { "data-scorer": rs.scorer });
      tr.appendChild(el("td", null, rs.scorer));
      tr.appendChild(el("td", { "class": "primary" }, rs.status === "scored" ? (rs.primary || "–") : "unscored"));
      rs.levels.forEach(function (lv) { tr.appendChild(el("td", { "class": "lv lv" + lv }, lv < 0 ? "" : lv)); });
      tab.appendChild(tr);
    });
    box.appendChild(tab);
    wrap.appendChild(box);
    t.ratings.forEach(function (rs) {
      if (!rs.reason) { return; }
      var p = el("p", { "class": "reason" });
      p.appendChild(el("strong", null, rs.scorer + ": "));
      p.appendChild(document.createTextNode(rs.reason));
      wrap.appendChild(p);
    });
    return wrap;
  }

  /* ---- layout ---- */
  function renderNumbers() {
    renderCharts(parts.charts);
    renderTable(parts.table);
  }
  function init() {
    var app = document.getElementById("app");
    var sec = el("section", { id: "drift" });
    sec.appendChild(el("h2", null, "Drift over a conversation"));
    sec.appendChild(el("p", { "class": "drift-note" }, "Each conversation starts from an INTIMA prompt and a simulated user continues it. " +
      "A rate is the share of conversations whose reply at that turn has the label (95% intervals); the slope says how fast it changes per turn."));
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
      parts.charts.appendChild(el("p", null, "No turn is rated yet: judge or score the conversation runs, then rebuild."));
    } else {
      renderNumbers();
    }
    renderExplorer(parts.explorer);
    document.body.setAttribute("data-drift-ready", "1");
  }
  init();
})();
