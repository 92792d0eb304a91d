/* INTIMA leaderboard: what each model is (a link to its model card, size, type, licence,
 * date) and a search box over models that filters the score table's rows (and this section's)
 * by model text. This file formats nothing: the table is rendered once, in Python
 * (leaderboard/models_view.py), for the app and the site alike, and waits in the page's
 * <template id="models-view">; here it is cloned in, and rows are shown or hidden by the model text
 * Python put on each of its rows (data-search). */
(function () {
  "use strict";
  var U = window.INTIMA_DOM;
  if (!U || !document.getElementById("models-view")) { return; }
  var s = U.el("section", { id: "models" });
  s.appendChild(U.el("h2", null, "Models"));
  var body = U.el("div", { "class": "body" });
  body.appendChild(U.el("label", { "for": "model-search" }, "Search models "));
  var box = body.appendChild(U.el("input", { id: "model-search", type: "search", placeholder: "name, size, type, licence", autocomplete: "off" }));
  var wrap = body.appendChild(U.el("div"));
  U.swapTemplate(wrap, "models-view");
  s.appendChild(body);
  var text = {};
  Array.from(wrap.querySelectorAll("tr[data-run-id]")).forEach(function (tr) {
    text[tr.getAttribute("data-run-id")] = tr.getAttribute("data-search");
  });

  var query = "";
  function matches(tr) {
    var id = tr.getAttribute("data-run-id");
    var hay = (text[id] || tr.textContent || "").toLowerCase();
    return query.split(/\s+/).every(function (w) { return !w || hay.indexOf(w) >= 0; });
  }
  function apply() {
    var rows = document.querySelectorAll("#app tr[data-run-id]");
    for (var i = 0; i < rows.length; i++) { rows[i].style.display = matches(rows[i]) ? "" : "none"; }
  }
  box.addEventListener("input", function () { query = box.value.toLowerCase().trim(); apply(); });
  var scores = document.getElementById("table");
  if (scores && scores.parentNode) { scores.parentNode.insertBefore(s, scores); }
  // board.js redraws the score table when a control changes: filter the new rows too.
  var app = document.getElementById("app");
  if (app && window.MutationObserver) {
    new MutationObserver(function () { if (query) { apply(); } }).observe(app, { childList: true, subtree: true });
  }
})();
