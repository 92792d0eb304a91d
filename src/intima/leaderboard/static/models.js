/* INTIMA leaderboard: what each model is (a link to its model card, size, type, licence,
 * date) and a search box over models that filters the score table's rows (and this section's)
 * by model text. Security rule, as in board.js: every string from the data goes in with
 * textContent, never as markup; a card link only from an address Python built and checked. */
(function () {
  "use strict";
  var node = document.getElementById("models-data");
  var U = window.INTIMA_DOM;
  if (!node || !U) { return; }
  var M = JSON.parse(node.textContent);
  var el = U.el;
  var text = {};
  M.rows.forEach(function (r) { text[r.run_id] = r.search; });

  function table() {
    var t = el("table", { id: "models-table", "class": "scores models" });
    var head = el("tr");
    ["Configuration", "Model", "Size", "Type", "Licence", "Date"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    var thead = el("thead"); thead.appendChild(head); t.appendChild(thead);
    var tb = el("tbody");
    M.rows.forEach(function (r) {
      var tr = el("tr", { "data-run-id": r.run_id });
      tr.appendChild(el("td", { "class": "model" }, r.label));
      var hub = el("td", { "class": "hub" });
      if (r.url && /^https:\/\/huggingface\.co\/[A-Za-z0-9._-]+\/[A-Za-z0-9._-]+$/.test(r.url)) {
        var a = el("a", { href: r.url, rel: "noopener", target: "_blank" }, r.model);
        hub.appendChild(a);
      } else {
        hub.appendChild(document.createTextNode(r.model));
      }
      if (r.note) { hub.appendChild(el("span", { "class": "why" }, " (" + r.note + ")")); }
      tr.appendChild(hub);
      ["size", "kind", "license", "date"].forEach(function (k) { tr.appendChild(el("td", { "class": k }, r[k])); });
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    return t;
  }

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

  var s = el("section", { id: "models" });
  s.appendChild(el("h2", null, "Models"));
  var body = el("div", { "class": "body" });
  var label = el("label", { "for": "model-search" }, "Search models ");
  var box = el("input", { id: "model-search", type: "search", placeholder: "name, size, type, licence", autocomplete: "off" });
  box.addEventListener("input", function () { query = box.value.toLowerCase().trim(); apply(); });
  body.appendChild(label);
  body.appendChild(box);
  var wrap = el("div", { "class": "scroll" });
  wrap.appendChild(table());
  body.appendChild(wrap);
  s.appendChild(body);
  var scores = document.getElementById("table");
  if (scores && scores.parentNode) { scores.parentNode.insertBefore(s, scores); }
  // board.js redraws the score table when a control changes: filter the new rows too.
  var app = document.getElementById("app");
  if (app && window.MutationObserver) {
    new MutationObserver(function () { if (query) { apply(); } }).observe(app, { childList: true, subtree: true });
  }
})();
