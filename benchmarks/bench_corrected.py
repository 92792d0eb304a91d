"""Error-corrected reinforcing shares against the labels' own, on the dev set's 8 configurations.

    .venv/bin/python benchmarks/bench_corrected.py [--dev PATH] [--no-cache] [--bootstrap B]

The dev set has 4 models x 2 variants (plain, boundary-aware system) = 8 configurations. For
each model m, everything is fitted without m's rows:

* the scorer: parameters fitted on the other three models (``fit_params``, as
  ``bench_lomo.py``; with the whole graded set when the version's fit uses it), then m's rows
  scored: the **raw share** of each of m's two configurations is the share whose primary label
  is reinforcing, and every quantifier reads m's continuous reinforcing measure;
* the validation: the other three models' rows, each of them scored by parameters fitted on
  the remaining two (so the error rates, thresholds and calibrations are out of sample, as
  they are for a new model on the board).

Methods (``_quantify.py``): the board's **corrected share** (``corrected_share``: Rogan-Gladen
of the primary label, adjusted-Wald interval), ACC at Forman's thresholds on the measure (MAX,
X, T50), Median Sweep, PCC and PACC with a logistic or isotonic calibration of the measure,
HDy and SLD. Truth: the labels' reinforcing share. Printed: per configuration the truth, raw and
corrected shares, then per method MAE, Spearman and the worst per-model MAE over the 8, and
the **nested-LOMO selection** (the pre-stated rule): in outer fold m, each method is scored by
inner LOMO on the other three models only (each held out in turn with the remaining two as
validation, all scores fitted without m); the method with the smallest worst per-model MAE
(ties: mean MAE) is applied to m. Targets: MAE <= 0.03 and Spearman >= 0.90, judged on that
pipeline. ``--bootstrap B`` adds 95% intervals of every method's MAE and Spearman (responses
and validation rows drawn again). The LOMO predictions are cached (numbers only) under
~/.cache/intima/bench.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _lomo
import _quantify as q

from intima.results.corrected import corrected_share, error_rates
from intima.validate import metrics

LABELS = ["reinforcing", "boundary", "neutral"]
Pred = tuple[np.ndarray, np.ndarray]  # (measure, primary) of a model's rows, in their order


def _key(dev: _lomo.Dev) -> str:
    """Cache key: the dev file, the scorer version and the affect package's source."""
    src = Path(_lomo.__file__).resolve().parents[1] / "src" / "intima" / "affect"
    h = hashlib.sha256(b"v2" + dev.sha256.encode() + _lomo.version().encode())
    for f in sorted(src.glob("*.py")) + sorted((src.parent / "data").glob("affect_params*")):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def predictions(dev: _lomo.Dev, use_cache: bool) -> dict[tuple[str, ...], Pred]:
    """(m,) -> m's rows scored by parameters fitted on the other models; (m, m2) -> m2's rows
    fitted without m and m2; (m, m2, m3) -> m3's rows fitted without m, m2 and m3 (on the
    fourth model alone). Cached by :func:`_key`."""
    path = _lomo.CACHE / f"corrected-{_key(dev)}.npz"
    ms = dev.models
    if use_cache and path.is_file():
        z = np.load(path)
        keys = {k.rsplit("|", 1)[0] for k in z.files}
        return {tuple(k.split("|")): (z[k + "|s"], z[k + "|p"]) for k in keys}
    out: dict[tuple[str, ...], Pred] = {}

    def run(excluded: tuple[str, ...]) -> None:
        kept = [x for x in ms if x not in excluded]
        for held, p in _lomo.leave_one_model_out(dev, kept).items():
            out[(*excluded, held)] = (np.asarray(p.measure), np.asarray(p.primary))

    run(())
    for m in ms:
        run((m,))
        for m2 in ms:
            if m2 != m:
                run((m, m2))
    flat = {}
    for k, (s, p) in out.items():
        flat["|".join(k) + "|s"], flat["|".join(k) + "|p"] = s, p
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **flat)  # type: ignore[arg-type]
    return out


class Folds:
    """Rows, truth and variants of each model, in the order of its predictions."""

    def __init__(self, dev: _lomo.Dev) -> None:
        of = dev.data.models
        truth = np.asarray(dev.truth)
        variants = np.asarray(dev.variants)
        self.rows = {m: np.flatnonzero(np.asarray(of) == m) for m in dev.models}
        self.pos = {m: truth[r] == "reinforcing" for m, r in self.rows.items()}
        self.truth = {m: truth[r] for m, r in self.rows.items()}
        self.variant = {m: variants[r] for m, r in self.rows.items()}
        self.variants = sorted(set(dev.variants))


Estimator = Callable[[np.ndarray, np.ndarray, q.Validation, list[str], list[str]], float]


def _estimators() -> dict[str, Estimator]:
    """name -> f(scores, primaries of the configuration, validation, validation truth,
    validation primaries)."""

    def rg(s: np.ndarray, p: np.ndarray, v: q.Validation, vt: list[str], vp: list[str]) -> float:
        names, conf = metrics.confusion(vt, vp, LABELS)
        rates = error_rates(names, conf.tolist(), "reinforcing")
        assert rates is not None
        fix = corrected_share(float(np.mean(p == "reinforcing")), len(p), rates)
        return float("nan") if fix.rate is None else fix.rate

    out: dict[str, Estimator] = {
        "raw share (primary label)": lambda s, p, v, vt, vp: float(np.mean(p == "reinforcing")),
        "ACC primary label (board today)": rg,
    }
    for name, f in q.methods().items():
        out[name] = lambda s, p, v, vt, vp, f=f: f(s, v)
    return out


def evaluate(
    f: Estimator,
    folds: Folds,
    preds: dict[tuple[str, ...], Pred],
    models: Sequence[str],
    excluded: tuple[str, ...] = (),
    rng: np.random.Generator | None = None,
) -> list[tuple[str, str, float, float]]:
    """LOMO over ``models`` (every model in ``excluded`` already left out of every fit): model
    m's configurations scored without m, its validation the other ``models``' rows each scored
    by parameters fitted without m and itself. (model, variant, truth, estimate) per
    configuration. With ``rng``: one bootstrap replicate, each configuration's responses and
    each validation drawn again with replacement (the truth is the drawn rows' share)."""
    out = []
    for m in models:
        others = [x for x in models if x != m]
        val = [preds[(*excluded, m, x)] for x in others]
        vs = np.concatenate([x[0] for x in val])
        vpos = np.concatenate([folds.pos[x] for x in others])
        vt = np.asarray([str(t) for x in others for t in folds.truth[x]])
        vp = np.asarray([str(p) for x in val for p in x[1]])
        if rng is not None:
            k = rng.integers(0, len(vs), len(vs))
            vs, vpos, vt, vp = vs[k], vpos[k], vt[k], vp[k]
        v = q.Validation(vs, vpos)
        s, p = preds[(*excluded, m)]
        for variant in folds.variants:
            idx = np.flatnonzero(folds.variant[m] == variant)
            if rng is not None:
                idx = idx[rng.integers(0, len(idx), len(idx))]
            if len(idx):
                truth = float(folds.pos[m][idx].mean())
                out.append((m, variant, truth, f(s[idx], p[idx], v, vt.tolist(), vp.tolist())))
    return out


def intervals(
    ests: dict[str, Estimator],
    folds: Folds,
    preds: dict[tuple[str, ...], Pred],
    models: Sequence[str],
    b: int,
    seed: int,
) -> None:
    """95% percentile intervals of each method's MAE and Spearman over ``b`` replicates (every
    method sees the same draws): how far apart the methods' figures are beyond chance."""
    got: dict[str, list[tuple[float, float, float]]] = {k: [] for k in ests}
    for r in range(b):
        for k, f in ests.items():
            rows = evaluate(f, folds, preds, models, rng=np.random.default_rng([seed, r]))
            got[k].append(summary(rows))
    print(f"\n{b} bootstrap replicates (responses and validation rows drawn again, seed {seed})")
    print(f"{'method':34s} {'MAE [95%]':>20s} {'Spearman [95%]':>22s}")
    for k, v in got.items():
        a = np.asarray(v)
        mae = np.nanpercentile(a[:, 0], [2.5, 97.5])
        rho = np.nanpercentile(a[:, 1], [2.5, 97.5])
        print(f"{k:34s} [{mae[0]:.4f}, {mae[1]:.4f}]   [{rho[0]:.3f}, {rho[1]:.3f}]")


def summary(rows: Sequence[tuple[str, str, float, float]]) -> tuple[float, float, float]:
    """MAE, Spearman and the worst per-model MAE (a missing estimate counts as error 1)."""
    from scipy.stats import spearmanr

    t = np.array([r[2] for r in rows])
    e = np.array([r[3] for r in rows])
    err = np.where(np.isnan(e), 1.0, np.abs(e - t))
    per_model: dict[str, list[float]] = {}
    for r, x in zip(rows, err, strict=True):
        per_model.setdefault(r[0], []).append(float(x))
    rho = spearmanr(np.nan_to_num(e, nan=-1.0), t).statistic
    return float(err.mean()), float(rho), max(float(np.mean(v)) for v in per_model.values())


def nested(folds: Folds, preds: dict[tuple[str, ...], Pred], models: Sequence[str]) -> None:
    ests = {k: f for k, f in _estimators().items() if not k.startswith("raw")}
    rows = []
    for m in models:
        others = [x for x in models if x != m]
        score = {k: summary(evaluate(f, folds, preds, others, (m,))) for k, f in ests.items()}
        best = min(score, key=lambda k: (score[k][2], score[k][0]))
        got = [r for r in evaluate(ests[best], folds, preds, models) if r[0] == m]
        rows += got
        print(
            f"  fold {m[:28]:28s} chose {best:32s} (inner worst per-model MAE {score[best][2]:.4f})"
        )
    mae, rho, worst = summary(rows)
    print(
        f"nested-LOMO selection: MAE {mae:.4f}   Spearman {rho:.3f}   worst per-model MAE "
        f"{worst:.4f}   (targets: MAE <= 0.03, Spearman >= 0.90)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dev", type=Path, default=_lomo.DEV)
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--bootstrap", type=int, default=0, help="replicates for intervals (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    dev = _lomo.load(args.dev)
    folds = Folds(dev)
    preds = predictions(dev, not args.no_cache)
    models = dev.models
    print(f"affect {_lomo.version()} on {args.dev.name} (sha256 {dev.sha256[:12]})")
    ests = _estimators()
    table = {k: evaluate(f, folds, preds, models) for k, f in ests.items()}
    print(f"\n{'configuration':40s} {'truth':>6s} {'raw':>6s} {'board':>6s}")
    for a, b in zip(
        table["raw share (primary label)"], table["ACC primary label (board today)"], strict=True
    ):
        print(f"{a[0][:22] + ' / ' + a[1][:14]:40s} {a[2]:6.3f} {a[3]:6.3f} {b[3]:6.3f}")
    print(f"\n{'method':34s} {'MAE':>7s} {'Spearman':>9s} {'worst model MAE':>16s}  estimates")
    for k, rows in table.items():
        mae, rho, worst = summary(rows)
        est = " ".join(f"{r[3]:.3f}" for r in rows)
        print(f"{k:34s} {mae:7.4f} {rho:9.3f} {worst:16.4f}  {est}")
    print(
        "truth".ljust(34),
        " " * 34,
        " ".join(f"{r[2]:.3f}" for r in table["raw share (primary label)"]),
    )
    print()
    nested(folds, preds, models)
    if args.bootstrap:
        intervals(ests, folds, preds, models, args.bootstrap, args.seed)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
