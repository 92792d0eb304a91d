/* INTIMA leaderboard: a small, dependency-free renderer.
 * Security rule: every string that comes from the data (model names, prompts, responses,
 * rationales) is inserted with textContent, never parsed as markup. The charts are not drawn
 * here: charts.py built them, escaped, into the page's <template>s, which this only clones. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("board-data").textContent);
  var DIM_SHORT = {
    "overall": "Overall", "Assistant Traits": "Assistant Traits",
    "User Vulnerabilities": "User Vulnerabilities",
    "Relationship & Intimacy": "Relationship & Intimacy",
    "Emotional Investment": "Emotional Investment"
  };
  var state = { scorer: D.scorers[0] || null, metric: "reinforcing", sortKey: "overall",
                sortDir: -1, exploreConfig: 0, exploreCode: "", exploreId: null,
                cmpA: 0, cmpB: D.configs.length > 1 ? 1 : 0, cmpPrompt: null };
  var chunks = {};
  var chunkWaiters = {};

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) { for (var k in attrs) { e.setAttribute(k, attrs[k]); } }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function pct(x) { return x === null ? "–" : (100 * x).toFixed(1) + "%"; }
  function cell(scope, metric, c) {
    if (!state.scorer) { return null; }
    return D.scores[state.scorer][scope][metric][c];
  }
  function short(scope) { return DIM_SHORT[scope] || scope; }

  /* ---- controls ---- */
  function select(id, label, options, value, onChange) {
    var wrap = el("label", { "class": "ctl" }, label + " ");
    var s = el("select", { id: id });
    options.forEach(function (o) {
      var opt = el("option", { value: o[0] }, o[1]);
      if (String(o[0]) === String(value)) { opt.selected = true; }
      s.appendChild(opt);
    });
    s.addEventListener("change", function () { onChange(s.value); });
    wrap.appendChild(s);
    return wrap;
  }

  /* ---- the sortable table ---- */
  function renderTable(root) {
    root.textContent = "";
    if (!state.scorer) { root.appendChild(el("p", null, "No scores yet: score the runs with a judge or the affect measure, then rebuild.")); return; }
    var metric = state.metric;
    var order = D.configs.map(function (_, i) { return i; });
    order.sort(function (a, b) {
      var va = sortValue(a), vb = sortValue(b);
      if (va === null && vb === null) { return a - b; }
      if (va === null) { return 1; }
      if (vb === null) { return -1; }
      return state.sortDir * (va - vb) || a - b;
    });
    root.appendChild(validityBlock(state.scorer));
    root.appendChild(directionBlock(metric));
    var t = el("table", { id: "scores", "class": "scores" });
    var head = el("tr");
    head.appendChild(el("th", { "class": "rank-head", title: "Rank on the sorted column, highest rate first, then [its 95% rank interval]; " + D.methodology.ties + "; '–': not ranked (fewer than 30 scored responses, or under half of the prompts scored)." }, "Rank (1 = most " + metric.replace(/_/g, " ") + ")"));
    head.appendChild(sortHeader("label", "Model"));
    D.scopes.forEach(function (scope) { head.appendChild(sortHeader(scope, short(scope))); });
    head.appendChild(el("th", { title: "scored responses (overall)" }, "n scored"));
    head.appendChild(el("th", { title: "judgments the scorer could not score; not counted as zeros" }, "unscored"));
    var thead = el("thead"); thead.appendChild(head); t.appendChild(thead);
    var tb = el("tbody");
    var rankScope = state.sortKey === "label" ? "overall" : state.sortKey;
    order.forEach(function (c) {
      var tr = el("tr", { "data-run-id": D.configs[c].run_id });
      var rk = el("td", { "class": "rank" });
      rk.appendChild(el("span", { "class": "rank-value" }, D.ranks[state.scorer][rankScope][metric][c]));
      var ri = D.rank_intervals ? D.rank_intervals[state.scorer][rankScope][metric][c] : null;
      if (ri) { rk.appendChild(el("span", { "class": "ci rank-interval", title: "95% rank interval over the bootstrap replicates" }, " [" + (ri[0] === ri[1] ? ri[0] : ri[0] + "–" + ri[1]) + "]")); }
      tr.appendChild(rk);
      var name = el("td", { "class": "model", title: D.configs[c].title || D.configs[c].model_spec || "" }, D.configs[c].label);
      tr.appendChild(name);
      D.scopes.forEach(function (scope) {
        var v = cell(scope, metric, c);
        var td = el("td", { "class": "num", "data-scope": scope });
        td.appendChild(el("span", { "class": "rate" }, pct(v[0])));
        if (v[0] !== null) { td.appendChild(el("span", { "class": "ci" }, " [" + pct(v[1]) + ", " + pct(v[2]) + "]")); }
        tr.appendChild(td);
      });
      var ov = cell("overall", metric, c);
      tr.appendChild(el("td", { "class": "num" }, ov[3]));
      tr.appendChild(el("td", { "class": ov[4] > 0 ? "num unscored some" : "num unscored" }, ov[4]));
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    root.appendChild(t);
  }
  /* Which way the ranks run and what each number counts, above the table. */
  function directionBlock(metric) {
    var box = el("div", { id: "direction", "class": "direction" });
    var p = el("p", { id: "direction-rank" });
    p.appendChild(el("strong", null, D.notes.direction[metric] + " "));
    p.appendChild(document.createTextNode(D.notes.not_a_verdict));
    box.appendChild(p);
    box.appendChild(el("p", { id: "metric-note", "class": "note" }, "Each cell: " + D.notes.metric[metric] + ", then its 95% interval [low, high]. n scored: responses the scorer rated (overall); unscored: ratings it could not make, not counted as zeros."));
    return box;
  }
  function sortValue(c) {
    if (state.sortKey === "label") { return null; }
    return cell(state.sortKey, state.metric, c)[0];
  }
  function sortHeader(key, text) {
    var th = el("th", { "class": "sortable", "data-sort": key, tabindex: "0", role: "button" }, text);
    if (state.sortKey === key) { th.appendChild(el("span", { "class": "arrow" }, state.sortDir < 0 ? " ▼" : " ▲")); }
    function go() {
      if (key === "label") {
        sortByLabel();
        return;
      }
      if (state.sortKey === key) { state.sortDir = -state.sortDir; } else { state.sortKey = key; state.sortDir = -1; }
      renderTable(sections["table"]);  // sorting changes only the table
    }
    th.addEventListener("click", go);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { go(); } });
    return th;
  }
  function sortByLabel() {
    var idx = D.configs.map(function (_, i) { return i; });
    idx.sort(function (a, b) { return D.configs[a].label.localeCompare(D.configs[b].label); });
    var tb = document.querySelector("#scores tbody");
    idx.forEach(function (c) { tb.appendChild(tb.querySelector('tr[data-run-id="' + cssEscape(D.configs[c].run_id) + '"]')); });
  }
  function cssEscape(s) { return window.CSS && CSS.escape ? CSS.escape(s) : s.replace(/["\\]/g, "\\$&"); }

  /* ---- validity: the scorer's validation cards, raw share and mean score ---- */
  function validity(scorer) { return (D.validity && D.validity.scorers[scorer]) || null; }
  function num3(x) { return x === null || x === undefined ? "–" : Number(x).toFixed(3); }
  function validityBlock(scorer) {
    var v = validity(scorer);
    var cards = v ? v.cards : [];
    if (!cards.length) {
      var p = el("p", { id: "validity", "class": "validity unvalidated", "data-scorer": scorer });
      p.appendChild(el("strong", null, "Not validated. "));
      p.appendChild(document.createTextNode(scorer + ": " + (D.validity ? D.validity.unvalidated : "") + "."));
      return p;
    }
    // Green only when a card passes: a card below the keyword baseline, or too small for an
    // AUROC interval narrower than 0.2, says so (results/cards.py grade).
    var passed = cards.some(function (c) { return c.grade === "validated"; });
    var box = el("div", { id: "validity", "class": "validity " + (passed ? "validated" : "failed-validation"), "data-scorer": scorer });
    var words = { "validated": "Validated", "failed": "Failed", "too small": "Too small" };
    cards.forEach(function (c) {
      var d = el("details", { "class": "card", "data-source": c.source, "data-grade": c.grade });
      d.appendChild(el("summary", null, (words[c.grade] || "Validated") + " (" + c.source + "): " + c.scorer + " " + c.version + " on " + c.name + " · " + c.grade_reason));
      var dl = el("dl");
      function row(k, val) { dl.appendChild(el("dt", null, k)); dl.appendChild(el("dd", null, val)); }
      row("Set", c.set_name + " (sha256 " + c.set_sha256 + ", n = " + c.n + ")");
      row("Labels", c.labels_source);
      row("Protocol", c.protocol);
      if (c.auroc !== null) { row("AUROC reinforcing vs boundary", num3(c.auroc) + (c.auroc_lo !== null ? " [" + num3(c.auroc_lo) + ", " + num3(c.auroc_hi) + "]" : "")); }
      var groups = Object.keys(c.auroc_by_group || {}).sort();
      if (groups.length) { row(c.groups_title || "AUROC per held-out model", groups.map(function (g) { return g + " " + num3(c.auroc_by_group[g]); }).join("; ")); }
      if (c.macro_f1 !== null) { row("macro-F1 (reinforcing, boundary)", num3(c.macro_f1)); }
      if (c.kappa !== null) { row("Cohen's kappa", num3(c.kappa)); }
      Object.keys(c.error_rates || {}).forEach(function (k) {
        var e = c.error_rates[k];
        row("Error rates: " + k, "recall " + num3(e.recall) + " (" + e.tp + "/" + e.n_pos + "), false positives " + num3(e.fpr) + " (" + e.fp + "/" + e.n_neg + ")");
      });
      if (c.graded) { row("Graded set", "Spearman " + num3(c.graded.spearman) + " on " + c.graded.set_name + " (sha256 " + c.graded.set_sha256 + ", n = " + c.graded.n + ")"); }
      var how = el("dd");
      how.appendChild(document.createTextNode(c.method + " · "));
      how.appendChild(el("a", { href: "#method" }, "methodology"));
      dl.appendChild(el("dt", null, "Method")); dl.appendChild(how);
      d.appendChild(dl);
      box.appendChild(d);
    });
    return box;
  }
  /* The scorer's own output per configuration: raw share and mean score (no corrected share:
   * a correction fitted on other models' answers was worse than raw on the dev set). */
  function renderMeans(root) {
    root.textContent = "";
    var v = state.scorer ? validity(state.scorer) : null;
    if (!v) { return; }
    var metric = ["reinforcing", "boundary", "neutral"].indexOf(state.metric) >= 0 ? state.metric : "reinforcing";
    root.appendChild(el("p", { "class": "note" }, "Raw " + metric + " share and " + (v.measure || "no continuous score") + ": " + state.scorer + "'s own output, overall, 95% intervals."));
    var t = el("table", { id: "mean-scores", "class": "scores" });
    var head = el("tr");
    ["Model", "raw share", "mean score"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    var thead = el("thead"); thead.appendChild(head); t.appendChild(thead);
    var tb = el("tbody");
    D.configs.forEach(function (cfg, c) {
      var tr = el("tr", { "data-run-id": cfg.run_id });
      tr.appendChild(el("td", { "class": "model" }, cfg.label));
      var raw = D.scores[state.scorer].overall[metric][c];
      var td = el("td", { "class": "num raw" });
      td.appendChild(el("span", { "class": "rate" }, pct(raw[0])));
      if (raw[0] !== null) { td.appendChild(el("span", { "class": "ci" }, " [" + pct(raw[1]) + ", " + pct(raw[2]) + "]")); }
      tr.appendChild(td);
      var mn = v.continuous.overall[c];
      var tdm = el("td", { "class": "num mean" });
      if (mn && mn[0] !== null) {
        tdm.appendChild(el("span", { "class": "rate" }, num3(mn[0])));
        tdm.appendChild(el("span", { "class": "ci" }, " [" + num3(mn[1]) + ", " + num3(mn[2]) + "]"));
      } else { tdm.textContent = "–"; }
      tr.appendChild(tdm);
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    root.appendChild(t);
  }

  /* ---- charts: drawn once, in Python (leaderboard/charts.py); each scorer's SVG waits in a
   * <template> of index.html, already escaped, and is cloned in as it is ---- */
  function showChart(root, kind) {
    root.textContent = "";
    if (!state.scorer) { return; }
    var t = document.getElementById("chart-" + kind + "-" + D.scorers.indexOf(state.scorer));
    if (t) { root.appendChild(document.importNode(t.content, true)); }
  }

  /* ---- response explorer ---- */
  window.intimaChunk = function (i, rows) {
    chunks[i] = rows;
    (chunkWaiters[i] || []).forEach(function (f) { f(rows); });
    delete chunkWaiters[i];
  };
  function loadChunk(i, cb) {
    if (chunks[i]) { cb(chunks[i]); return; }
    if (chunkWaiters[i]) { chunkWaiters[i].push(cb); return; }
    chunkWaiters[i] = [cb];
    var sc = document.createElement("script");
    sc.src = D.chunks[i];
    document.body.appendChild(sc);
  }
  function renderExplorer(root) {
    root.textContent = "";
    if (!D.configs.length) { root.appendChild(el("p", null, "No responses.")); return; }
    var ctl = el("div", { "class": "controls" });
    ctl.appendChild(select("explore-config", "Model", D.configs.map(function (c, i) { return [i, c.label]; }), state.exploreConfig, function (v) {
      state.exploreConfig = Number(v); state.exploreId = null; renderExplorer(root);
    }));
    root.appendChild(ctl);
    var list = el("ol", { id: "explore-list", "class": "explore-list" });
    var detail = el("div", { id: "explore-detail", "class": "detail" });
    var body = el("div", { "class": "explore" });
    body.appendChild(list); body.appendChild(detail);
    root.appendChild(body);
    list.appendChild(el("li", null, "Loading responses…"));
    loadChunk(state.exploreConfig, function (rows) {
      var codes = Array.from(new Set(rows.map(function (r) { return r.code; }))).sort();
      ctl.appendChild(select("explore-code", "Code", [["", "all codes"]].concat(codes.map(function (c) { return [c, c]; })), state.exploreCode, function (v) {
        state.exploreCode = v; renderExplorer(root);
      }));
      list.textContent = "";
      rows.forEach(function (r) {
        if (state.exploreCode && r.code !== state.exploreCode) { return; }
        var li = el("li", { "data-response-id": r.id, tabindex: "0" });
        li.appendChild(el("span", { "class": "code" }, r.code));
        li.appendChild(el("code", { "class": "rid", title: "response id (intima explain " + r.id + ")" }, " " + r.id.slice(0, 10)));
        li.appendChild(el("span", null, " " + r.prompt.slice(0, 90)));
        li.addEventListener("click", function () { state.exploreId = r.id; showDetail(detail, r); });
        list.appendChild(li);
        if (state.exploreId === r.id) { showDetail(detail, r); }
      });
    });
  }
  function showDetail(root, r, prefix) {
    prefix = prefix || "explore";
    root.textContent = "";
    root.setAttribute("data-response-id", r.id);
    root.appendChild(el("h3", null, r.code + " · " + r.dimension));
    var idp = el("p", { "class": "rid-line" }, "Response id: ");
    idp.appendChild(el("code", { "class": "rid", id: prefix + "-rid" }, r.id));
    idp.appendChild(document.createTextNode(" (explain its affect score: intima explain " + r.id.slice(0, 12) + ")"));
    root.appendChild(idp);
    root.appendChild(el("h4", null, "Prompt"));
    root.appendChild(el("pre", { "class": "prompt" }, r.prompt));
    root.appendChild(el("h4", null, "Response"));
    root.appendChild(el("pre", { "class": "response", id: prefix + "-response" }, r.response));
    root.appendChild(el("h4", null, "Ratings (0 low, 1 medium, 2 high; blank: not rated)"));
    var t = el("table", { "class": "ratings" });
    var h = el("tr");
    h.appendChild(el("th", null, "scorer"));
    h.appendChild(el("th", null, "primary"));
    D.categories.forEach(function (c) { h.appendChild(el("th", { "class": "cat" }, c.replace(/_/g, " "))); });
    t.appendChild(h);
    r.ratings.forEach(function (rs) {
      var tr = el("tr");
      tr.appendChild(el("td", null, rs.scorer));
      tr.appendChild(el("td", null, rs.status === "scored" ? (rs.primary || "–") : "unscored"));
      rs.levels.forEach(function (lv) { tr.appendChild(el("td", { "class": "lv lv" + lv }, lv < 0 ? "" : lv)); });
      t.appendChild(tr);
    });
    root.appendChild(t);
    if (r.affect && r.affect.length) {
      root.appendChild(el("h4", null, "Affect measure breakdown (per category: the driver sentence's factors)"));
      var at = el("table", { "class": "ratings affect", id: prefix + "-affect" });
      var ah = el("tr");
      D.affect_factors.forEach(function (f) { ah.appendChild(el("th", null, f)); });
      at.appendChild(ah);
      r.affect.forEach(function (row) {
        var tr = el("tr");
        row.forEach(function (v) {
          tr.appendChild(el("td", null, typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : v));
        });
        at.appendChild(tr);
      });
      root.appendChild(at);
    }
    r.ratings.forEach(function (rs) {
      if (!rs.reason) { return; }
      var p = el("p", { "class": "reason" });
      p.appendChild(el("strong", null, rs.scorer + ": "));
      p.appendChild(document.createTextNode(rs.reason));
      root.appendChild(p);
    });
  }

  /* ---- side by side: two configurations ---- */
  function renderCompare(root) {
    root.textContent = "";
    if (D.configs.length < 2) { root.appendChild(el("p", null, "A comparison needs two configurations.")); return; }
    var ctl = el("div", { "class": "controls" });
    var opts = D.configs.map(function (c, i) { return [i, c.label]; });
    ctl.appendChild(select("cmp-a", "Model A", opts, state.cmpA, function (v) { state.cmpA = Number(v); renderCompare(root); }));
    ctl.appendChild(select("cmp-b", "Model B", opts, state.cmpB, function (v) { state.cmpB = Number(v); renderCompare(root); }));
    root.appendChild(ctl);
    if (state.scorer) {
      root.appendChild(compareTable(state.cmpA, state.cmpB));
      root.appendChild(el("p", { "class": "note", id: "cmp-note" }, "B − A over the prompts both answered, with its paired 95% interval (the same prompts drawn for both); different only when it excludes 0; the smallest difference detectable with 80% power at alpha 0.05. See Methodology."));
    }
    var pick = el("div", { "class": "controls" });
    var pair = el("div", { "class": "pair" });
    var left = el("div", { id: "cmp-a-detail", "class": "detail" });
    var right = el("div", { id: "cmp-b-detail", "class": "detail" });
    pair.appendChild(left); pair.appendChild(right);
    root.appendChild(pick); root.appendChild(pair);
    left.appendChild(el("p", null, "Loading responses…"));
    loadChunk(state.cmpA, function (rowsA) {
      loadChunk(state.cmpB, function (rowsB) {
        var byPrompt = {};
        rowsB.forEach(function (r) { byPrompt[r.prompt_id] = r; });
        var shared = rowsA.filter(function (r) { return byPrompt[r.prompt_id]; });
        left.textContent = "";
        if (!shared.length) { left.appendChild(el("p", null, "The two configurations share no prompt.")); return; }
        if (!shared.some(function (r) { return r.prompt_id === state.cmpPrompt; })) { state.cmpPrompt = shared[0].prompt_id; }
        pick.appendChild(select("cmp-prompt", "Prompt", shared.map(function (r) {
          return [r.prompt_id, r.code + " · " + r.prompt.slice(0, 80)];
        }), state.cmpPrompt, function (v) { state.cmpPrompt = v; show(); }));
        function show() {
          var a = shared.filter(function (r) { return r.prompt_id === state.cmpPrompt; })[0];
          showDetail(left, a, "cmp-a");
          showDetail(right, byPrompt[state.cmpPrompt], "cmp-b");
          left.insertBefore(el("h3", { "class": "side" }, "A: " + D.configs[state.cmpA].label), left.firstChild);
          right.insertBefore(el("h3", { "class": "side" }, "B: " + D.configs[state.cmpB].label), right.firstChild);
        }
        show();
      });
    });
  }
  /* B − A comes precomputed per (scorer, metric) in data/p<s>_<m>.js (site.py _write_pairs):
   * this only picks the pair and shows it. Stored for i < j as B = j, A = i; the reverse
   * order is the same interval, negated. */
  var pairFiles = {};
  var pairWaiters = {};
  window.intimaPairs = function (key, data) {
    pairFiles[key] = data;
    (pairWaiters[key] || []).forEach(function (f) { f(data); });
    delete pairWaiters[key];
  };
  function loadPairs(cb) {
    var s = D.scorers.indexOf(state.scorer), m = D.metrics.indexOf(state.metric);
    var key = s + "_" + m;
    if (pairFiles[key]) { cb(pairFiles[key]); return; }
    if (pairWaiters[key]) { pairWaiters[key].push(cb); return; }
    pairWaiters[key] = [cb];
    var sc = document.createElement("script");
    sc.src = D.pairs.files[state.scorer][state.metric];
    document.body.appendChild(sc);
  }
  function pairOf(data, scope, a, b) {
    var n = D.configs.length, i = Math.min(a, b), j = Math.max(a, b);
    var k = i * (2 * n - i - 1) / 2 + (j - i - 1), c = data[scope];
    var v = [c.d[k], c.lo[k], c.hi[k], c.mde[k], c.different[k], c.n[k]];
    if (a < b || v[0] === null) { return v; }
    return [-v[0], v[2] === null ? null : -v[2], v[1] === null ? null : -v[1], v[3], v[4], v[5]];
  }
  /* Ten-thousandths as points to one decimal, half away from zero, in integers: the very text
   * compare_view.tenths writes in the app. */
  function tenths(n, signed) {
    var m = Math.floor((Math.abs(n) + 5) / 10);
    var sign = n < 0 && m ? "-" : (signed && n > 0 && m ? "+" : "");
    return sign + Math.floor(m / 10) + "." + (m % 10);
  }
  function pp(n) { return tenths(n, true); }
  function compareTable(a, b) {
    var t = el("table", { id: "cmp-scores", "class": "scores" });
    var head = el("tr");
    [state.metric.replace(/_/g, " ") + " rate", "A: " + D.configs[a].label, "B: " + D.configs[b].label].forEach(function (h) { head.appendChild(el("th", null, h)); });
    head.appendChild(el("th", { title: "B − A over the prompts both answered, with its paired 95% interval (the same prompts drawn for both)" }, "B − A [95%], points"));
    head.appendChild(el("th", { title: "The smallest difference this board detects for this pair with 80% power at alpha 0.05" }, "smallest detectable, points"));
    head.appendChild(el("th", { title: "'different' only when the paired interval excludes 0" }, "paired test"));
    var thead = el("thead"); thead.appendChild(head); t.appendChild(thead);
    var tb = el("tbody");
    var rows = [];
    D.scopes.forEach(function (scope) {
      var va = cell(scope, state.metric, a), vb = cell(scope, state.metric, b);
      var tr = el("tr", { "data-scope": scope });
      tr.appendChild(el("td", null, short(scope)));
      [va, vb].forEach(function (v) {
        var td = el("td", { "class": "num" });
        td.appendChild(el("span", { "class": "rate" }, pct(v[0])));
        if (v[0] !== null) { td.appendChild(el("span", { "class": "ci" }, " [" + pct(v[1]) + ", " + pct(v[2]) + "]")); }
        tr.appendChild(td);
      });
      var diff = el("td", { "class": "num diff" }, "…"), mde = el("td", { "class": "num mde" }, "…"), verdict = el("td", { "class": "verdict" }, "…");
      tr.appendChild(diff); tr.appendChild(mde); tr.appendChild(verdict);
      rows.push([scope, diff, mde, verdict]);
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    if (a === b) { rows.forEach(function (r) { r[1].textContent = r[2].textContent = "–"; r[3].textContent = "the same configuration"; }); return t; }
    loadPairs(function (data) {
      rows.forEach(function (r) {
        var v = pairOf(data, r[0], a, b);
        if (v[0] === null) { r[1].textContent = r[2].textContent = r[3].textContent = "–"; return; }
        r[1].textContent = pp(v[0]);
        if (v[1] !== null) { r[1].appendChild(el("span", { "class": "ci" }, " [" + pp(v[1]) + ", " + pp(v[2]) + "]")); }
        r[2].textContent = v[3] === null ? "–" : tenths(v[3], false);
        r[3].textContent = v[4] ? "different" : "no detectable difference";
        r[3].className = v[4] ? "verdict different" : "verdict same";
        r[3].setAttribute("title", "over " + v[5] + " prompts both answered");
      });
      t.setAttribute("data-ready", "1");
    });
    return t;
  }

  /* ---- methodology ---- */
  function renderMethod(root) {
    root.textContent = "";
    var m = D.methodology;
    var dl = el("dl");
    [["Rating protocol", m.rating_protocol_version], ["Taxonomy", m.taxonomy_version],
     ["Judge prompt", m.judge_prompt_version], ["Affect measure", m.affect_version],
     ["Datasets", (m.datasets || []).join("; ")], ["Number mapping", m.number_mapping],
     ["Intervals", m.intervals], ["Ranks", "Rank 1 = the highest rate of the chosen column: a measurement, not a verdict (not the best model). [low–high]: the rank interval; " + m.ties + "; '–': " + m.ranks],
     ["Side by side", m.paired],
     ["Validation", (D.validity && D.validity.all_cards.length ? D.validity.all_cards : (m.validation || [])).join(" | ") || "no scorer validated yet"],
     ["Mean score", D.validity ? D.validity.method : null],
     ["Built", D.generated_at + " by intima " + D.package_version]].forEach(function (kv) {
      dl.appendChild(el("dt", null, kv[0])); dl.appendChild(el("dd", null, kv[1] === null ? "–" : kv[1]));
    });
    root.appendChild(dl);
  }

  /* ---- layout ---- */
  var sections = {};
  function section(id, title) {
    var s = el("section", { id: id });
    s.appendChild(el("h2", null, title));
    var body = el("div", { "class": "body" });
    s.appendChild(body);
    sections[id] = body;
    return s;
  }
  function renderAll() {
    renderTable(sections["table"]);
    renderMeans(sections["means"]);
    showChart(sections["radar"], "radar");
    showChart(sections["bars"], "bars");
    showChart(sections["heatmap"], "heatmap");
    renderCompare(sections["compare"]);
  }
  function init() {
    var app = document.getElementById("app");
    app.textContent = "";
    var ctl = el("div", { "class": "controls", id: "controls" });
    ctl.appendChild(select("scorer", "Scorer", D.scorers.map(function (s) { return [s, s]; }), state.scorer, function (v) { state.scorer = v; renderAll(); }));
    ctl.appendChild(select("metric", "Rate of", D.metrics.map(function (m) { return [m, m.replace(/_/g, " ")]; }), state.metric, function (v) { state.metric = v; renderAll(); }));
    app.appendChild(ctl);
    app.appendChild(section("table", "Scores"));
    app.appendChild(section("means", "Raw share and mean score"));
    app.appendChild(section("radar", "Reinforcing (red) and boundary (blue): % of scored responses by dimension"));
    app.appendChild(section("bars", "Primary labels: share of scored responses"));
    app.appendChild(section("heatmap", "Behaviours and sub-behaviours: % of scored responses rated medium or high"));
    app.appendChild(section("explorer", "Response explorer"));
    app.appendChild(section("compare", "Side by side"));
    app.appendChild(section("method", "Methodology"));
    renderAll();
    renderExplorer(sections["explorer"]);
    renderMethod(sections["method"]);
    document.body.setAttribute("data-ready", "1");
    window.intimaReadyAt = performance.now();
  }
  // The drift view (drift.js, loaded after this file) builds its DOM with the same helpers.
  window.INTIMA_DOM = { el: el, pct: pct, select: select };
  init();
})();
