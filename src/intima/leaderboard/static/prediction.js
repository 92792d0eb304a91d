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

  function share(td, r) {
    if (!r) { td.textContent = "–"; return; }
    if (r[0] === null) { td.appendChild(el("span", { "class": "why" }, r[6])); return; }
    td.appendChild(el("span", { "class": "rate" }, pct(r[0])));
    td.appendChild(el("span", { "class": "ci" }, " [" + pct(r[1]) + ", " + pct(r[2]) + "]"));
  }
  function table(judge) {
    var rows = P.judges[judge].overall;
    var t = el("table", { "class": "scores prediction-scores", "data-judge": judge });
    var head = el("tr");
    head.appendChild(el("th", null, "Model"));
    P.labels.forEach(function (m) {
      head.appendChild(el("th", null, m + " (prediction-powered)"));
      head.appendChild(el("th", null, m + " raw (predictor)"));
    });
    head.appendChild(el("th", null, "what it estimates"));
    var thead = el("thead"); thead.appendChild(head); t.appendChild(thead);
    var tb = el("tbody");
    P.configs.forEach(function (label, c) {
      if (!rows.reinforcing[c]) { return; }  // no sample of this configuration
      var tr = el("tr");
      tr.appendChild(el("td", { "class": "model" }, label));
      P.labels.forEach(function (m) {
        var r = rows[m][c];
        var td = el("td", { "class": "num ppi", "data-label": m });
        share(td, r);
        tr.appendChild(td);
        tr.appendChild(el("td", { "class": "num raw", "data-label": m, title: r ? r[7] : "" }, r ? pct(r[5]) : "–"));
      });
      var first = rows.reinforcing[c];
      tr.appendChild(el("td", { "class": "what" }, first[0] === null ? "" : first[6]));
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    return t;
  }
  var s = el("section", { id: "prediction" });
  s.appendChild(el("h2", null, "Shares as the judge would label every response"));
  var body = el("div", { "class": "body" });
  Object.keys(P.judges).sort().forEach(function (judge) {
    var preds = {};
    P.configs.forEach(function (_, c) { var r = P.judges[judge].overall.reinforcing[c]; if (r) { preds[r[7]] = 1; } });
    body.appendChild(el("p", { "class": "note" }, judge + " on a random sample, " + Object.keys(preds).sort().join(" or ") + " on every response (the predictor): overall, 95% intervals."));
    var wrap = el("div", { "class": "scroll" });
    wrap.appendChild(table(judge));
    body.appendChild(wrap);
  });
  s.appendChild(body);
  var scores = document.getElementById("table");
  if (scores && scores.parentNode) { scores.parentNode.insertBefore(s, scores); }
  var method = document.querySelector("#method dl");
  if (method) {
    method.appendChild(el("dt", null, "Prediction-powered shares"));
    method.appendChild(el("dd", null, P.method));
  }
})();
