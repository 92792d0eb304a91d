"""The dev-set check of ``bench_ppi.py --dev``: prediction-powered shares of the dev set's 8
configurations, its own labels as the judge, the affect measure (fitted without the
configuration's model) as the scorer. Only numbers are cached, never the set's text."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import _lomo
import numpy as np

from intima.core.taxonomy import dimension_of
from intima.judges.samples import stratum_sequence
from intima.results.ppi import prediction_powered_share, stratified_prediction_powered_share

LABELS = ("reinforcing", "boundary", "neutral")
NS = (30, 60, 120)


def _cache_key(dev: _lomo.Dev) -> str:
    src = Path(_lomo.__file__).resolve().parents[1] / "src" / "intima" / "affect"
    h = hashlib.sha256(b"ppi-v1" + dev.sha256.encode() + _lomo.version().encode())
    for f in sorted(src.glob("*.py")) + sorted((src.parent / "data").glob("affect_params*")):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


Config = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _dimensions(path: Path) -> np.ndarray:
    """Each row's dimension, from its INTIMA code (the strata of a stratified sample)."""
    with path.open(encoding="utf-8") as fh:
        codes = [str(json.loads(line).get("code", "")) for line in fh if line.strip()]
    return np.asarray([str(dimension_of(c).value) for c in codes])


def configurations() -> dict[str, Config]:
    """'model / variant' -> (truth labels, held-out measure, held-out primary label,
    dimension)."""
    dev = _lomo.load()
    dims = _dimensions(dev.path)
    path = _lomo.CACHE / f"ppi-{_cache_key(dev)}.npz"
    truth, variants, of = (
        np.asarray(dev.truth),
        np.asarray(dev.variants),
        np.asarray(dev.data.models),
    )
    if path.is_file():
        z = np.load(path)
        measure, primary = z["measure"], z["primary"]
    else:
        measure = np.full(len(truth), np.nan)
        primary = np.empty(len(truth), dtype=object)
        for _m, p in _lomo.leave_one_model_out(dev).items():
            measure[p.rows] = p.measure
            primary[p.rows] = p.primary
        primary = primary.astype(str)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, measure=measure, primary=primary)
    out = {}
    for m in dev.models:
        for v in sorted(set(variants)):
            rows = np.flatnonzero((of == m) & (variants == v))
            out[f"{m} / {v}"] = (truth[rows], measure[rows], primary[rows], dims[rows])
    return out


def report(draws: int, seed: int) -> None:
    configs = configurations()
    for stratified in (False, True):
        design = "stratified by dimension" if stratified else "simple random"
        print(f"\n## Dev set, {design} samples: {len(configs)} configurations, {draws} draws per n")
        for label in LABELS:
            preds = ("label",) if label != "reinforcing" else ("measure", "label")
            for pred in preds:
                what = "continuous reinforcing measure" if pred == "measure" else "primary label"
                print(f"\n### {label} share, predictor: the affect measure's {what}")
                print("| n | coverage (all) | worst configuration | width | judge-alone width "
                      "| MAE | judge-alone MAE |")  # fmt: skip
                print("|---|---|---|---|---|---|---|")
                for n in NS:
                    cells, errs = _cells(configs, label, pred, n, draws, seed, stratified)
                    print(f"| {n} | " + " | ".join(f"{x:.3f}" for x in cells)
                          + f" | {errs[0]:.4f} | {errs[1]:.4f} |")  # fmt: skip
    print("\nconfigurations (rows, reinforcing share by the labels):")
    for name, (truth, *_rest) in sorted(configs.items()):
        print(f"  {name}: {len(truth)} rows, {np.mean(truth == 'reinforcing'):.3f}")


def _cells(
    configs: dict[str, Config], label: str, pred: str, n: int, draws: int, seed: int,
    stratified: bool,
) -> tuple[tuple[float, ...], tuple[float, float]]:  # fmt: skip
    """(mean coverage, worst configuration's, width, the judge alone's width), (MAE, the
    judge alone's MAE). The judge alone is the same estimator with a constant scorer: Wilson's
    interval with the same finite-population and continuity corrections (and, stratified,
    the same weights)."""
    covs, widths, wwidths, errs, jerrs = [], [], [], [], []
    for i, (_name, (truth, measure, primary, dims)) in enumerate(sorted(configs.items())):
        y = (truth == label).astype(np.float64)
        f = measure if pred == "measure" else (primary == label).astype(np.float64)
        target = float(y.mean())
        zero = np.zeros(len(y))
        rng = np.random.default_rng([seed, n, i])
        sizes = {h: int((dims == h).sum()) for h in sorted(set(dims))}
        per = Counter(stratum_sequence(sizes)[:n])
        hit = 0
        for _ in range(draws):
            if stratified:
                s = np.concatenate([
                    rng.choice(np.flatnonzero(dims == h), size=k, replace=False)
                    for h, k in per.items()
                ])  # fmt: skip
                rest = np.setdiff1d(np.arange(len(y)), s)
                by = (list(dims[s]), list(dims[rest]))
                r = stratified_prediction_powered_share(y[s], f[s], f[rest], *by, populations=sizes)
                alone = stratified_prediction_powered_share(
                    y[s], zero[s], zero[rest], *by, populations=sizes
                )
            else:
                order = rng.permutation(len(y))
                s, rest = order[:n], order[n:]
                r = prediction_powered_share(y[s], f[s], f[rest])
                alone = prediction_powered_share(y[s], zero[s], zero[rest])
            hit += r.lo <= target <= r.hi
            widths.append(r.hi - r.lo)
            wwidths.append(alone.hi - alone.lo)
            errs.append(abs(r.estimate - target))
            jerrs.append(abs(alone.estimate - target))
        covs.append(hit / draws)
    cells = (float(np.mean(covs)), min(covs), float(np.mean(widths)), float(np.mean(wwidths)))
    return cells, (float(np.mean(errs)), float(np.mean(jerrs)))
