/* INTIMA leaderboard: prediction-powered shares (only on sites where a judge labelled a random
 * sample of a configuration: intima judge --sample), shown first, as the headline. This file
 * formats nothing: the shares are rendered once, in Python (leaderboard/prediction_view.py),
 * for the app and the site alike, one <template id="prediction-<k>"> per entry k of the
 * "Dimension" menu; here the chosen one is cloned in. */
(function () {
  "use strict";
  var U = window.INTIMA_DOM, scope = document.getElementById("scope");
  if (!U || !scope || !document.getElementById("prediction-0")) { return; }
  var s = U.el("section", { id: "prediction" });
  s.appendChild(U.el("h2", null, "Shares as a judge would label every response"));
  var body = s.appendChild(U.el("div", { "class": "body" }));
  function show() { U.swapTemplate(body, "prediction-" + scope.selectedIndex); }
  scope.addEventListener("change", show);
  show();
  var scores = document.getElementById("table");
  if (scores && scores.parentNode) { scores.parentNode.insertBefore(s, scores); }
})();
