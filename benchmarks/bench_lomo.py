"""Leave-one-model-out evaluation of the affect measure on the dev set; prints the table.

For each of the dev set's models: fit every parameter of the measure (heads, NF weights, cut
points; :func:`intima.affect.fit.fit_params`) on the other models' rows, score the held-out
model's rows, and report on its reinforcing and boundary rows:

* AUROC of the reinforcing measure (reinforcing rows positive) and macro-F1 (reinforcing,
  boundary) of the primary label (intima's rule on the three behaviours' levels);
* the same for the keyword baseline of ``intima validate`` (score -count of boundary phrases;
  label boundary when any appears).

Then ``--check-params``: refit on the whole dev set and compare with the shipped params file.

    .venv/bin/python benchmarks/bench_lomo.py [--dev PATH] [--per-model-thresholds] [--check-params]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from intima.affect.config import AffectConfig
from intima.affect.fit import BOUND, REINF, exemplar_centroids, fit_params, load_dev
from intima.affect.measure import AffectScorer
from intima.affect.params import default_params
from intima.store import StoredResponse
from intima.validate.metrics import auroc, macro_f1
from intima.validate.scorers import keyword_scores

DEV = (
    Path(__file__).resolve().parents[2] / "shared" / "validation" / "companion-responses-dev.jsonl"
)
CLASSES = ("reinforcing", "boundary")
PRIMARY = {REINF: "reinforcing", BOUND: "boundary"}


def _stored(rid: str, prompt: str, text: str) -> StoredResponse:
    return StoredResponse(
        response_id=rid, run_id="dev", label="dev", model_spec="dev", prompt_id=rid, code="",
        dimension="", prompt=prompt, response=text,
    )  # fmt: skip


def compare_params(fitted: dict[str, object], shipped: dict[str, object], tol: float) -> float:
    """Largest absolute difference between two params dumps (numbers only)."""
    worst = 0.0
    for key in ("head_w", "head_v", "head_b", "nf_lambda", "centroids", "thresholds"):
        a, b = fitted[key], shipped[key]
        assert isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys(), key
        for k in a:
            diff = np.abs(np.subtract(a[k], b[k], dtype=np.float64))
            worst = max(worst, float(diff.max(initial=0.0)))
    print(f"refit vs shipped params: max |difference| {worst:.2e} (tolerance {tol:g})")
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dev", type=Path, default=DEV)
    ap.add_argument(
        "--per-model-thresholds",
        action="store_true",
        help="cut points maximise the mean per-model macro-F1 of the fitting rows",
    )
    ap.add_argument("--check-params", action="store_true")
    ap.add_argument(
        "--emb-cache",
        type=Path,
        default=None,
        help=".npy of the dev embeddings (numbers only): read if present, else written",
    )
    args = ap.parse_args()  # fmt: skip
    cfg = AffectConfig()
    t0 = time.perf_counter()
    cached = args.emb_cache is not None and args.emb_cache.is_file()
    data = load_dev(args.dev, cfg, emb=np.load(args.emb_cache) if cached else None)
    if args.emb_cache is not None and not cached:
        np.save(args.emb_cache, data.emb)
    cents = exemplar_centroids(cfg)
    print(
        f"dev set: {len(data.items)} rows, features and embeddings {time.perf_counter() - t0:.1f} s"
    )
    models = np.array(data.models)
    labels = np.array(data.labels)
    kw = keyword_scores([_stored(i.response_id, i.prompt, i.response) for i in data.items])
    head = f"{'held-out model':24s} {'nR':>3s} {'nB':>4s} {'AUROC':>6s} {'kw AUROC':>8s} " \
        f"{'macro-F1':>8s} {'kw F1':>6s}"  # fmt: skip
    print(head)
    summary = []
    for m in sorted(set(data.models)):
        tr, te = np.flatnonzero(models != m), np.flatnonzero(models == m)
        params = fit_params(
            data.subset(tr), cents, cfg, per_group_thresholds=args.per_model_thresholds
        )
        held = data.subset(te)
        scores = AffectScorer(cfg, params=params).score_computed(held.items, held.feats, held.emb)
        lab = labels[te]
        rb = np.flatnonzero((lab == REINF) | (lab == BOUND))
        truth = [PRIMARY[lab[i]] for i in rb]
        pos = [lab[i] == REINF for i in rb]
        measure = [scores[i].scores[REINF].measure for i in rb]
        pred = [str(scores[i].primary) for i in rb]
        kwr = [kw[held.items[i].response_id] for i in rb]
        row = (
            auroc(measure, pos), auroc([k.direction for k in kwr], pos),
            macro_f1(truth, pred, CLASSES), macro_f1(truth, [k.primary for k in kwr], CLASSES),
        )  # fmt: skip
        summary.append(row)
        print(f"{m:24s} {sum(pos):3d} {len(pos) - sum(pos):4d} {row[0]:6.4f} {row[1]:8.3f} "
              f"{row[2]:8.3f} {row[3]:6.3f}")  # fmt: skip
    s = np.array(summary, dtype=float)
    for name, f in (("min", np.min), ("mean", np.mean)):
        print(f"{name:24s} {'':3s} {'':4s} {f(s[:, 0]):6.4f} {f(s[:, 1]):8.3f} "
              f"{f(s[:, 2]):8.3f} {f(s[:, 3]):6.3f}")  # fmt: skip
    print(f"total {time.perf_counter() - t0:.1f} s")
    if args.check_params:
        full = fit_params(data, cents, cfg).model_dump(mode="json")
        worst = compare_params(full, default_params().model_dump(mode="json"), 1e-3)
        print("params reproduced" if worst <= 1e-3 else "PARAMS DIFFER from the shipped file")


if __name__ == "__main__":
    main()
