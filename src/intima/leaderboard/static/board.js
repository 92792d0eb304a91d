/* INTIMA leaderboard: a small, dependency-free page that selects, loads and swaps.
 * Every view the app shows too (the score table and its direction note, the validation card,
 * the mean scores, the side-by-side numbers, the response detail, the methodology) is rendered
 * once, in Python, with every store string escaped (leaderboard/render.py, validity_view.py,
 * compare_view.py, method_view.py); this
 * script only picks the fragment for the chosen scorer, dimension and metric, loads the data
 * file that holds it and puts it in place. The charts are charts.py's SVG, cloned from the
 * page's <template>s. The few strings it writes itself (the explorer's list, the menus, the
 * side-by-side's two names) go in with textContent, never as markup. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("board-data").textContent);
  var DIM_SHORT = { "overall": "Overall" };
  var state = { scorer: D.scorers[0] || null, scope: "overall", rankBy: "reinforcing",
                reversed: false, metric: "reinforcing", exploreConfig: 0, exploreCode: "",
                exploreId: null, cmpA: 0, cmpB: D.configs.length > 1 ? 1 : 0, cmpPrompt: null };

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) { for (var k in attrs) { e.setAttribute(k, attrs[k]); } }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function short(scope) { return DIM_SHORT[scope] || scope; }

  /* ---- the one loader: every data/*.js file calls window.intimaChunk(key, packed), packed
   * being its JSON gzipped and in base64 (render.chunk_file): a script, not a fetch, so the
   * site works from file:// too; the browser's DecompressionStream inflates it ---- */
  var chunks = {};
  var waiters = {};
  /* The file the page opens on (the first scorer's overall table) is embedded in the page too
   * (site._write_views): the table is in place as soon as this script runs. */
  if (D.first) { chunks[D.first.key] = D.first.body; }
  function inflate(packed) {
    var bin = atob(packed), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }
  window.intimaChunk = function (key, packed) {
    inflate(packed).then(function (text) {
      var body = JSON.parse(text);
      chunks[key] = body;
      (waiters[key] || []).forEach(function (f) { f(body); });
      delete waiters[key];
    });
  };
  function loadChunk(key, src, cb) {
    if (chunks[key]) { cb(chunks[key]); return; }
    if (waiters[key]) { waiters[key].push(cb); return; }
    waiters[key] = [cb];
    var sc = document.createElement("script");
    sc.src = src;
    document.body.appendChild(sc);
  }
  /* Put a Python-rendered, already escaped fragment in place of root's content. DOMParser
   * makes an inert document (its scripts never run); its nodes are then moved in. */
  function swap(root, html) {
    root.textContent = "";
    var doc = new DOMParser().parseFromString(html, "text/html");
    Array.from(doc.body.childNodes).forEach(function (n) { root.appendChild(document.adoptNode(n)); });
  }

  /* Clone the page's <template id=id> (Python-rendered, already escaped) in place of root's
   * content. */
  function swapTemplate(root, id) {
    root.textContent = "";
    var t = document.getElementById(id);
    if (t) { root.appendChild(document.importNode(t.content, true)); }
  }

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

  /* ---- the scorer's card, score table and mean scores: data/t<s>_<scope>.js ---- */
  function renderTable(done) {
    var root = sections["table"], means = sections["means"];
    if (!state.scorer) {
      root.textContent = ""; means.textContent = "";
      root.appendChild(el("p", null, "No scores yet: score the runs with a judge or the affect measure, then rebuild."));
      if (done) { done(); }
      return;
    }
    var scorer = state.scorer, k = D.scopes.indexOf(state.scope);
    loadChunk("t" + D.scorers.indexOf(scorer) + "_" + k, D.views[scorer][k], function (v) {
      if (scorer !== state.scorer || D.scopes[k] !== state.scope) { return; }  // a later choice has its own call
      swap(root, v.card + v.table[state.rankBy]);
      swap(means, v.means[state.rankBy]);
      if (state.reversed) { reverseRows(); }
      if (done) { done(); }
    });
  }
  function rowsOf() { return document.querySelector("#table table.intima-score-table tbody"); }
  function reverseRows() {
    var tb = rowsOf();
    Array.from(tb.rows).reverse().forEach(function (tr) { tb.appendChild(tr); });
  }
  function sortBy(key) {
    if (key === "label") {
      var tb = rowsOf();
      Array.from(tb.rows).sort(function (a, b) {
        return a.querySelector("td.model").textContent.localeCompare(b.querySelector("td.model").textContent);
      }).forEach(function (tr) { tb.appendChild(tr); });
      return;
    }
    if (key === state.rankBy) { state.reversed = !state.reversed; reverseRows(); return; }
    state.rankBy = key; state.reversed = false;
    document.getElementById("rank-by").value = key;
    renderTable();
  }
  function onHeader(e) {
    var th = e.target.closest ? e.target.closest("th[data-sort]") : null;
    if (th && (e.type === "click" || e.key === "Enter")) { sortBy(th.getAttribute("data-sort")); }
  }

  /* ---- charts: drawn once, in Python (leaderboard/charts.py); each scorer's SVG waits in a
   * <template> of index.html, already escaped, and is cloned in as it is ---- */
  function showChart(root, kind) {
    if (!state.scorer) { root.textContent = ""; return; }
    swapTemplate(root, "chart-" + kind + "-" + D.scorers.indexOf(state.scorer));
  }

  /* ---- response explorer: the list from data/r<i>.js, the detail its rendered fragment ---- */
  function responses(i, cb) { loadChunk("r" + i, D.chunks[i], cb); }
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
    responses(state.exploreConfig, function (rows) {
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
        li.appendChild(el("span", null, " " + r.prompt));  // cut at a word, with "…", in Python
        li.addEventListener("click", function () { state.exploreId = r.id; showDetail(detail, r); });
        list.appendChild(li);
        if (state.exploreId === r.id) { showDetail(detail, r); }
      });
    });
  }
  function showDetail(root, r) {
    swap(root, r.html);
    root.setAttribute("data-response-id", r.id);
  }

  /* ---- side by side: two configurations ---- */
  function renderCompare(root) {
    root.textContent = "";
    if (D.configs.length < 2) { root.appendChild(el("p", null, "A comparison needs two configurations.")); return; }
    var ctl = el("div", { "class": "controls" });
    var opts = D.configs.map(function (c, i) { return [i, c.label]; });
    ctl.appendChild(select("cmp-a", "Model A", opts, state.cmpA, function (v) { state.cmpA = Number(v); renderCompare(root); }));
    ctl.appendChild(select("cmp-b", "Model B", opts, state.cmpB, function (v) { state.cmpB = Number(v); renderCompare(root); }));
    ctl.appendChild(select("metric", "Rate of", D.metrics.map(function (m) { return [m, m.replace(/_/g, " ")]; }), state.metric, function (v) { state.metric = v; renderCompare(root); }));
    root.appendChild(ctl);
    if (state.scorer) { root.appendChild(compareTable(state.cmpA, state.cmpB)); }
    var pick = el("div", { "class": "controls" });
    var pair = el("div", { "class": "pair" });
    var left = el("div", { id: "cmp-a-detail", "class": "detail" });
    var right = el("div", { id: "cmp-b-detail", "class": "detail" });
    pair.appendChild(left); pair.appendChild(right);
    root.appendChild(pick); root.appendChild(pair);
    left.appendChild(el("p", null, "Loading responses…"));
    responses(state.cmpA, function (rowsA) {
      responses(state.cmpB, function (rowsB) {
        var byPrompt = {};
        rowsB.forEach(function (r) { byPrompt[r.prompt_id] = r; });
        var shared = rowsA.filter(function (r) { return byPrompt[r.prompt_id]; });
        left.textContent = "";
        if (!shared.length) { left.appendChild(el("p", null, "The two configurations share no prompt.")); return; }
        if (!shared.some(function (r) { return r.prompt_id === state.cmpPrompt; })) { state.cmpPrompt = shared[0].prompt_id; }
        pick.appendChild(select("cmp-prompt", "Prompt", shared.map(function (r) {
          return [r.prompt_id, r.code + " · " + r.prompt];
        }), state.cmpPrompt, function (v) { state.cmpPrompt = v; show(); }));
        function show() {
          var a = shared.filter(function (r) { return r.prompt_id === state.cmpPrompt; })[0];
          showDetail(left, a);
          showDetail(right, byPrompt[state.cmpPrompt]);
        }
        show();
      });
    });
  }
  /* Put the chosen pair's fragments of part (the chunk, or its headline) into box's frame.
   * A pair's entry: B - A, its interval, the smallest detectable difference (the headline:
   * the judged responses), the verdict (an index into the chunk's verdicts), the judged
   * pairs. */
  function fill(box, part, verdicts, withMde) {
    var a = state.cmpA, b = state.cmpB, n = D.configs.length;
    box.querySelector(".label-a").textContent = D.configs[a].label;
    box.querySelector(".label-b").textContent = D.configs[b].label;
    Array.from(box.querySelectorAll("tr[data-scope]")).forEach(function (tr) {
      var scope = tr.getAttribute("data-scope"), p = part.pairs[scope][a * n + b];
      swap(tr.querySelector(".rate-a"), part.rates[scope][a]);
      swap(tr.querySelector(".rate-b"), part.rates[scope][b]);
      tr.querySelector(".diff .pp").textContent = p[0];
      tr.querySelector(".diff .ci").textContent = p[1];
      if (withMde) { tr.querySelector(".mde").textContent = p[2]; }
      swap(tr.querySelector(".verdict"), verdicts[p[3]]);
      tr.querySelector(".pairs").textContent = withMde ? p[4] : p[2];
    });
  }
  /* The side-by-side numbers come rendered per (scorer, metric) in data/p<s>_<m>.js
   * (compare_view.compare_chunk, the app's very functions): the table's frame, each
   * configuration's rate and each ordered pair's texts and verdict. This only picks the
   * pair's and puts them into the frame's slots (text as text, the verdict's markup swapped). */
  function compareTable(a, b) {
    var box = el("div", { id: "cmp-scores" }, "Loading…");
    var scorer = state.scorer, metric = state.metric;
    var key = "p" + D.scorers.indexOf(scorer) + "_" + D.metrics.indexOf(metric);
    loadChunk(key, D.pairs.files[scorer][metric], function (c) {
      if (scorer !== state.scorer || metric !== state.metric || a !== state.cmpA || b !== state.cmpB) { return; }
      swap(box, c.frame);
      fill(box, c, c.verdicts, true);
      if (c.headline) {  // a judge on a sample: its headline shares compared
        var h = el("div", { id: "cmp-headline" });
        box.appendChild(h);
        swap(h, c.headline.frame);
        fill(h, c.headline, c.verdicts, false);
      }
      box.setAttribute("data-ready", "1");
    });
    return box;
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
  function renderAll(done) {
    showChart(sections["radar"], "radar");
    showChart(sections["bars"], "bars");
    showChart(sections["heatmap"], "heatmap");
    renderCompare(sections["compare"]);
    // Last: on the page's first view its data is at hand, so done runs now, the rest in place.
    renderTable(done);
  }
  function init() {
    var app = document.getElementById("app");
    app.textContent = "";
    var ctl = el("div", { "class": "controls", id: "controls" });
    ctl.appendChild(select("scorer", "Scorer", D.scorers.map(function (s) { return [s, s]; }), state.scorer, function (v) { state.scorer = v; renderAll(); }));
    ctl.appendChild(select("scope", "Dimension", D.scopes.map(function (s) { return [s, short(s)]; }), state.scope, function (v) { state.scope = v; renderTable(); }));
    ctl.appendChild(select("rank-by", "Rank by", D.label_metrics.map(function (m) { return [m, m.replace(/_/g, " ")]; }), state.rankBy, function (v) { state.rankBy = v; state.reversed = false; renderTable(); }));
    app.appendChild(ctl);
    app.appendChild(section("table", "Scores"));
    sections["table"].addEventListener("click", onHeader);
    sections["table"].addEventListener("keydown", onHeader);
    app.appendChild(section("means", "Raw share and mean score"));
    app.appendChild(section("radar", "Reinforcing (red) and boundary (blue): % of scored responses by dimension"));
    app.appendChild(section("bars", "Primary labels: share of scored responses"));
    app.appendChild(section("heatmap", "Behaviours and sub-behaviours: % of scored responses rated medium or high"));
    app.appendChild(section("explorer", "Response explorer"));
    app.appendChild(section("compare", "Side by side"));
    app.appendChild(section("method", "Methodology"));
    renderExplorer(sections["explorer"]);
    sections["method"].appendChild(document.importNode(document.getElementById("methodology").content, true));
    renderAll(function () {
      document.body.setAttribute("data-ready", "1");
      window.intimaReadyAt = performance.now();
    });
  }
  // The drift, prediction and models views (loaded after this file) use the same helpers.
  window.INTIMA_DOM = { el: el, select: select, loadChunk: loadChunk, swap: swap,
                        swapTemplate: swapTemplate };
  init();
})();
