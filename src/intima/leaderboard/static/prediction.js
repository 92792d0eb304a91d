/* INTIMA leaderboard: prediction-powered shares (only on sites where a judge labelled a random
 * sample of a configuration: intima judge --sample). Shown first, as the headline: the share the
 * judge would give every response, with its interval and what it estimates; the predictor's
 * raw share beside it (a judge that labelled every response, else the affect measure). Security rule, as in board.js: every string from the data
 * goes in with textContent, never as markup. */
(function () {
  "use strict";
  var node = document.getElementById("prediction-data");
  var U = window.INTIMA_DOM;
  if (!node || !U) { return; }
  var P = JSON.parse(node.textContent);
  var el = U.el, pct = U.pct;

  /* One cell per label: the prediction-powered share and its interval, and under them the
   * predictor's raw share (so the two never sit in columns of their own, too wide at 1280 px). */
  function share(td, r) {
    if (!r) { td.textContent = "–"; return; }
    if (r[0] === null) { td.appendChild(el("span", { "class": "why" }, r[6])); return; }
    td.appendChild(el("span", { "class": "rate" }, pct(r[0])));
    td.appendChild(el("span", { "class": "ci" }, " [" + pct(r[1]) + ", " + pct(r[2]) + "]"));
    td.appendChild(el("span", { "class": "raw", title: r[7] + "'s own share of this label" }, "raw " + pct(r[5])));
  }
  function predictors(judge) {
    var seen = {};
    P.configs.forEach(function (_, c) { var r = P.judges[judge].overall.reinforcing[c]; if (r) { seen[r[7]] = 1; } });
    return Object.keys(seen).sort();
  }
  function table(judge) {
    var rows = P.judges[judge].overall;
    var t = el("table", { "class": "scores prediction-scores", "data-judge": judge });
    var head = el("tr");
    head.appendChild(el("th", null, "Model"));
    P.labels.forEach(function (m) { head.appendChild(el("th", null, m)); });
    head.appendChild(el("th", { "class": "what" }, "what it estimates"));
    var thead = el("thead"); thead.appendChild(head); t.appendChild(thead);
    var tb = el("tbody");
    P.configs.forEach(function (label, c) {
      if (!rows.reinforcing[c]) { return; }  // no sample of this configuration
      var tr = el("tr");
      tr.appendChild(el("td", { "class": "model" }, label));
      P.labels.forEach(function (m) {
        var td = el("td", { "class": "num ppi", "data-label": m });
        share(td, rows[m][c]);
        tr.appendChild(td);
      });
      var first = rows.reinforcing[c];
      tr.appendChild(el("td", { "class": "what" }, first[0] === null ? "" : first[6]));
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    return t;
  }
  var s = el("section", { id: "prediction" });
  s.appendChild(el("h2", null, "Shares as a judge would label every response"));
  var body = el("div", { "class": "body" });
  Object.keys(P.judges).sort().forEach(function (judge) {
    var preds = predictors(judge).join(" or ");
    body.appendChild(el("h3", null, "As " + judge + " would label every response"));
    body.appendChild(el("p", { "class": "note" }, judge + " labelled a random sample of each model's responses; " + preds + " scored every response (the predictor). Each cell: the prediction-powered share [95% interval], overall; under it, raw: " + preds + "'s own share."));
    var wrap = el("div", { "class": "scroll" });
    wrap.appendChild(table(judge));
    body.appendChild(wrap);
  });
  s.appendChild(body);
  var scores = document.getElementById("table");
  if (scores && scores.parentNode) { scores.parentNode.insertBefore(s, scores); }
})();
