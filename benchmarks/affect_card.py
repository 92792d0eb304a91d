"""Write the shipped affect version's validation card (src/intima/data/affect_validation.json).

    .venv/bin/python benchmarks/affect_card.py [--dev PATH] [--graded PATH] [--out PATH]

One entry per scorer version (this package's ``SCORER_VERSION``; other versions' entries are
kept as they are). Every number is computed here, never typed:

* leave-one-model-out on the dev set (``_lomo.leave_one_model_out``: each model's rows scored
  by parameters fitted on the other three): AUROC of the reinforcing measure per held-out model
  and pooled (with a bootstrap interval), macro-F1 and kappa of the primary label, and the
  pooled out-of-fold confusion counts (rows truth, columns predicted) that the leaderboard uses
  to correct its shares;
* Spearman of the reinforcing measure with the graded set's 1-10 grades: held out by setting
  when the version's fit uses the graded set, else with the shipped parameters.

The dev set's and the graded set's text is read to score them and never written.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _lomo

from intima.affect.config import AffectConfig
from intima.affect.fit import fit_params
from intima.affect.measure import AffectInput, AffectScorer
from intima.affect.params import default_params
from intima.core.version import __version__
from intima.judges.stats import cohen_kappa
from intima.results.cards import METHOD_DOCS, Card
from intima.validate import metrics

OUT = Path(__file__).resolve().parents[1] / "src" / "intima" / "data" / "affect_validation.json"
LABELS = ["reinforcing", "boundary", "neutral"]
PROTOCOL = "leave-one-model-out"


def dev_figures(dev: _lomo.Dev, b: int, seed: int) -> dict[str, object]:
    folds = _lomo.leave_one_model_out(dev)
    truth_all = dev.truth
    truth, pred, measure, by_model = [], [], [], {}
    for model, p in folds.items():
        t = [truth_all[i] for i in p.rows]
        truth += t
        pred += p.primary
        measure += p.measure
        pair = [k for k, x in enumerate(t) if x in ("reinforcing", "boundary")]
        by_model[model] = metrics.auroc(
            [p.measure[k] for k in pair], [t[k] == "reinforcing" for k in pair]
        )
    pair = [k for k, x in enumerate(truth) if x in ("reinforcing", "boundary")]
    scores = np.array([measure[k] for k in pair])
    positives = np.array([truth[k] == "reinforcing" for k in pair])
    lo_hi = metrics.auroc_interval(scores, positives, b=b, seed=seed)
    names, confusion = metrics.confusion(truth, pred, LABELS)
    return {
        "auroc": metrics.auroc(scores, positives),
        "auroc_lo": None if lo_hi is None else lo_hi[0],
        "auroc_hi": None if lo_hi is None else lo_hi[1],
        "auroc_by_group": by_model,
        "macro_f1": metrics.macro_f1(
            [truth[k] for k in pair], [pred[k] for k in pair], ["reinforcing", "boundary"]
        ),
        "kappa": cohen_kappa(truth, pred),
        "confusion_labels": names,
        "confusion": confusion.tolist(),
    }


def graded_figures(dev: _lomo.Dev, path: Path) -> dict[str, object]:
    """Spearman of the reinforcing measure with the grades. A version fitted on the graded set
    is held out by setting (each setting scored by parameters fitted without its rows, as
    bench_lomo.py); any other is scored with the shipped parameters (the set is unseen)."""
    from scipy.stats import spearmanr

    cfg = AffectConfig()
    if dev.graded is not None:
        g = dev.graded
        settings = np.array(g.settings)
        measure = np.zeros(len(settings))
        for s in sorted(set(g.settings)):
            tr, te = np.flatnonzero(settings != s), np.flatnonzero(settings == s)
            params = fit_params(
                dev.data, _lomo._centroids(cfg), cfg, graded=g.subset(tr), cut_points=False
            )
            held = g.subset(te)
            scored = AffectScorer(cfg, params=params).score_computed(
                held.items, held.feats, held.emb
            )
            measure[te] = [x.scores["companionship_reinforcing"].measure for x in scored]
        grades, protocol = list(g.grades), "held out by setting"
    else:
        with path.open(encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        items = [
            AffectInput(
                response_id=str(i), prompt=r["messages"][-1]["content"], response=r["response"]
            )
            for i, r in enumerate(rows)
        ]
        scored = AffectScorer(cfg).score(items)
        measure = np.array([x.scores["companionship_reinforcing"].measure for x in scored])
        grades, protocol = [float(r["score"]) for r in rows], "unseen by the fit"
    rho = spearmanr(measure, grades).statistic
    return {
        "set_name": f"{path.name} ({protocol})",
        "set_sha256": _lomo.sha256(path),
        "n": len(grades),
        "spearman": float(rho),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dev", type=Path, default=_lomo.DEV)
    ap.add_argument("--graded", type=Path, default=_lomo.GRADED)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    dev = _lomo.load(args.dev, graded=args.graded)
    version = _lomo.version()
    card = Card(
        scorer="affect",
        version=version,
        source="shipped",
        set_name=args.dev.name,
        set_sha256=dev.sha256,
        n=len(dev.truth),
        protocol=f"{PROTOCOL} ({len(dev.models)} models)",
        **dev_figures(dev, args.bootstrap, args.seed),  # type: ignore[arg-type]
        graded=graded_figures(dev, args.graded),  # type: ignore[arg-type]
        method=METHOD_DOCS["affect"],
    )
    entry = card.model_dump(mode="json", exclude={"source"})
    entry["made_by"] = {
        "script": "benchmarks/affect_card.py",
        "intima": __version__,
        "params_digest": default_params().digest,
    }
    old = json.loads(args.out.read_text()) if args.out.is_file() else {}
    old[version] = entry
    args.out.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
    print(card.summary())
    print(f"wrote {args.out} ({version}) in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
