"""Error-corrected reinforcing shares against the labels' own, on the dev set's 8 configurations.

    .venv/bin/python benchmarks/bench_corrected.py [--dev PATH]

The dev set has 4 models x 2 variants (plain, boundary-aware system) = 8 configurations. For
each model m, everything is fitted without m's rows:

* the scorer: parameters fitted on the other three models (``fit_params``, as
  ``bench_lomo.py``; with the whole graded set when the version's fit uses it), then m's rows
  scored: the **raw share** of each of m's two configurations
  is the share whose primary label is reinforcing;
* the validation: the confusion of the scorer on the other three models' rows, each of them
  scored by parameters fitted on the remaining two (so the error rates are out-of-sample, as
  they are for a new model on the board).

The **corrected share** is ``intima.results.corrected.corrected_share`` (Rogan-Gladen with the
adjusted-Wald interval; n_eff = n, one response per prompt) of the raw share with those error
rates. The truth is the labels' reinforcing share of the configuration. Printed: per
configuration the truth, raw and corrected shares (with the interval), and over the 8: mean
absolute error, Spearman, and how many intervals hold the truth. Targets: corrected MAE <= 0.03
and Spearman >= 0.90. For a new scorer version, refit its parameters and run this again: it
uses whatever ``intima.affect`` ships.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _lomo

from intima.results.corrected import corrected_share, error_rates
from intima.validate import metrics

LABELS = ["reinforcing", "boundary", "neutral"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dev", type=Path, default=_lomo.DEV)
    args = ap.parse_args()
    from scipy.stats import spearmanr

    t0 = time.perf_counter()
    dev = _lomo.load(args.dev)
    truth = dev.truth
    held = _lomo.leave_one_model_out(dev)
    print(f"affect {_lomo.version()} on {args.dev.name} (sha256 {dev.sha256[:12]})")
    print(
        f"{'configuration':44s} {'n':>4s} {'truth':>6s} {'raw':>6s} {'corrected [95%]':>22s}  "
        f"recall  fpr"
    )
    rows = []
    for m in dev.models:
        others = [x for x in dev.models if x != m]
        inner = _lomo.leave_one_model_out(dev, others)
        v_truth = [truth[i] for p in inner.values() for i in p.rows]
        v_pred = [x for p in inner.values() for x in p.primary]
        names, conf = metrics.confusion(v_truth, v_pred, LABELS)
        rates = error_rates(names, conf.tolist(), "reinforcing")
        assert rates is not None
        pred = dict(zip(held[m].rows, held[m].primary, strict=True))
        for variant in sorted({dev.variants[i] for i in held[m].rows}):
            idx = [i for i in held[m].rows if dev.variants[i] == variant]
            t = float(np.mean([truth[i] == "reinforcing" for i in idx]))
            raw = float(np.mean([pred[i] == "reinforcing" for i in idx]))
            fix = corrected_share(raw, len(idx), rates)
            rows.append((t, raw, fix))
            shown = (
                f"{fix.rate:6.3f} [{fix.lo:.3f}, {fix.hi:.3f}]"
                if fix.rate is not None and fix.lo is not None and fix.hi is not None
                else fix.note[:22]
            )
            print(
                f"{m + ' / ' + variant:44s} {len(idx):4d} {t:6.3f} {raw:6.3f} {shown:>22s}  "
                f"{rates.recall:.3f}  {rates.fpr:.3f}"
            )
    truths = np.array([r[0] for r in rows])
    raws = np.array([r[1] for r in rows])
    fixed = [r[2] for r in rows]
    ok = np.array([f.rate is not None for f in fixed])
    corr = np.array([f.rate if f.rate is not None else np.nan for f in fixed])
    covered = sum(
        1
        for t, f in zip(truths, fixed, strict=True)
        if f.lo is not None and f.hi is not None and f.lo <= t <= f.hi
    )
    print(f"\n{len(rows)} configurations ({int(ok.sum())} corrected)")
    print(
        f"raw share:       MAE {np.mean(np.abs(raws - truths)):.4f}   Spearman "
        f"{spearmanr(raws, truths).statistic:.3f}"
    )
    if ok.any():
        print(
            f"corrected share: MAE {np.mean(np.abs(corr[ok] - truths[ok])):.4f}   Spearman "
            f"{spearmanr(corr[ok], truths[ok]).statistic:.3f}   intervals holding the truth "
            f"{covered}/{int(ok.sum())}   (targets: MAE <= 0.03, Spearman >= 0.90)"
        )
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
