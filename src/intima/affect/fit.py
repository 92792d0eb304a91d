"""Fit every parameter of the affect measure from a labelled dev set; write the params file.

    python -m intima.affect.fit --dev PATH --graded PATH --out src/intima/data/affect_params.json

What is fitted (deterministic: L-BFGS from zeros, no random initialisation, float64):

* per behaviour b, a logistic model P(b | response) = sigmoid(z_b - r_b) with the SSL head
  z_b = emb . w + log1p(head families) . v + c and the retracting evidence
  r_b = log1p(NF families) . lambda, lambda >= 0; class-balanced maximum likelihood with L2 on
  w (``--l2``) and a light L2 on v. sigmoid(z_b) becomes SSL(b), the rest (1 - NF(b)).
  Positives are the rows labelled b; the families are those of :mod:`intima.affect.phrases`.
  v3: the reinforcing head also fits the graded set's rows, target (grade - 1) / 9, weight
  ``GRADED_WEIGHT`` each.
* the intensity head (v3): ridge regression of (grade - 1) / 9 on the relational features of
  the graded set (:mod:`intima.affect.graded`); it becomes the reinforcing ELS.
* sub-behaviour centroids: the normalised mean embedding of each sub-behaviour's description and
  exemplars in :mod:`intima.affect.categories` (project text, stored as numbers).
* cut points per behaviour: a grid over quantiles of the measures maximising the macro-F1 of the
  primary label (intima's rule) over the reinforcing and boundary rows.

The dev set's text is read to compute features and is never written anywhere: the output holds
numbers, the family names and the dev file's hash.
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from intima.affect import factors as fx
from intima.affect.categories import CATEGORY_SPECS
from intima.affect.config import AffectConfig
from intima.affect.embed import Embedder, default_embedder
from intima.affect.features import TextFeatures, text_features
from intima.affect.graded import (
    GradedData,
    fit_intensity,
    intensity_inputs,
    load_graded,
    read_rows,
)
from intima.affect.intensity import FEATURE_NAMES as INTENSITY_FEATURES
from intima.affect.measure import AffectInput, AffectScorer
from intima.affect.params import PARAMS_VERSION, PREVIOUS_VERSION, AffectParams
from intima.affect.phrases import BOUND, FAMILY_NAMES, HEAD_FAMILIES, NEUTRAL, NF_FAMILIES, REINF
from intima.affect.phrases import columns as family_columns

#: dev-set label -> behaviour
LABELS = {"companionship_reinforcing": REINF, "boundary_maintaining": BOUND, "neutral": NEUTRAL}
BEHAVIOURS = (REINF, BOUND, NEUTRAL)
#: Weight of one graded row in the reinforcing head's fit (a dev row weighs n/(2 n_class)).
GRADED_WEIGHT = 3.0
#: Ridge strength of the intensity head (on standardised features).
INTENSITY_L2 = 10.0


@dataclass
class DevData:
    """What fitting needs of a labelled set; the text stays in memory only."""

    items: list[AffectInput]
    labels: list[str]  # behaviour of each row
    models: list[str]  # the model that wrote each response
    feats: list[TextFeatures]
    emb: NDArray[np.float32]

    def subset(self, idx: Sequence[int]) -> DevData:
        return DevData(
            [self.items[i] for i in idx],
            [self.labels[i] for i in idx],
            [self.models[i] for i in idx],
            [self.feats[i] for i in idx],
            self.emb[list(idx)],
        )


def load_dev(
    path: Path,
    config: AffectConfig | None = None,
    embedder: Embedder | None = None,
    limit: int | None = None,
    emb: NDArray[np.float32] | None = None,
) -> DevData:
    """Read the dev set (JSONL: messages, response, label, model) and compute its features
    (``emb``: its embeddings, if already computed with the same settings)."""
    rows, items, emb = read_rows(path, config, embedder, limit, emb)
    return DevData(
        items=items,
        labels=[LABELS[r["label"]] for r in rows],
        models=[str(r.get("model", "")) for r in rows],
        feats=[text_features(it.response) for it in items],
        emb=emb,
    )


@dataclass
class SoftRows:
    """Rows with soft targets joining a head's fit (v3: graded responses, target (g-1)/9)."""

    emb: NDArray[np.float32]
    fam: NDArray[np.float64]
    targets: NDArray[np.float64]
    weight: float


def fit_head(
    emb: NDArray[np.float32],
    fam: NDArray[np.float64],
    y: NDArray[np.float64],
    head_cols: Sequence[int],
    nf_cols: Sequence[int],
    l2: float,
    l2_fam: float = 0.1,
    soft: SoftRows | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, NDArray[np.float64]]:
    """Class-balanced L2 logistic P = sigmoid(emb.w + fam_h.v + c - fam_n.lambda), lambda >= 0
    (as softplus(theta)); returns w, v, c, lambda. ``soft``: extra rows with targets in [0, 1]
    and one weight each (v3: the graded set for the reinforcing head)."""
    import torch

    torch.manual_seed(0)
    pos = float(y.sum())
    sw_np = np.where(y == 1, len(y) / (2 * pos), len(y) / (2 * (len(y) - pos)))
    if soft is not None:
        emb = np.vstack([emb, soft.emb])
        fam = np.vstack([fam, soft.fam])
        y = np.concatenate([y, soft.targets])
        sw_np = np.concatenate([sw_np, np.full(len(soft.targets), soft.weight)])
    e = torch.tensor(emb, dtype=torch.float64)
    h = torch.tensor(fam[:, list(head_cols)], dtype=torch.float64)
    n = torch.tensor(fam[:, list(nf_cols)], dtype=torch.float64)
    yt = torch.tensor(y, dtype=torch.float64)
    sw = torch.tensor(sw_np, dtype=torch.float64)
    w = torch.zeros(e.shape[1], dtype=torch.float64, requires_grad=True)
    v = torch.zeros(h.shape[1], dtype=torch.float64, requires_grad=True)
    c = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    theta = torch.full((n.shape[1],), -1.0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, v, c, theta], lr=1, max_iter=500, line_search_fn="strong_wolfe")
    softplus, logsig = torch.nn.functional.softplus, torch.nn.functional.logsigmoid

    def loss_fn() -> torch.Tensor:
        opt.zero_grad()
        z = e @ w + h @ v + c - n @ softplus(theta)
        nll = -(sw * (yt * logsig(z) + (1 - yt) * logsig(-z))).sum() / len(y)
        loss = nll + (l2 * (w @ w) / 2 + l2_fam * (v @ v) / 2) / len(y)
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(loss_fn)
    lam = softplus(theta).detach().numpy()
    return w.detach().numpy(), v.detach().numpy(), float(c.item()), lam


def exemplar_centroids(
    config: AffectConfig | None = None, embedder: Embedder | None = None
) -> dict[str, list[float]]:
    """Unit mean embedding of each sub-behaviour's description and exemplars."""
    cfg, enc = config or AffectConfig(), embedder or default_embedder()
    out: dict[str, list[float]] = {}
    for key, spec in CATEGORY_SPECS.items():
        vecs = enc.encode([spec.description, *spec.exemplars], max_tokens=cfg.embed_max_tokens)
        m = vecs.astype(np.float64).mean(axis=0)
        out[str(key)] = (m / np.linalg.norm(m)).round(6).tolist()
    return out


def _levels(x: NDArray[np.float64], medium: float, high: float) -> NDArray[np.int64]:
    return (x >= medium).astype(np.int64) + (x >= high).astype(np.int64)


def primary_f1(
    lr: NDArray[np.int64], lb: NDArray[np.int64], ln: NDArray[np.int64], y_r: NDArray[np.bool_]
) -> float:
    """Macro-F1 (reinforcing, boundary) of intima's primary-label rule on levels: the strictly
    highest non-low behaviour wins; reinforcing and boundary tied is "mixed"; neutral alone
    leading, or all low, is "neutral" (neither class)."""
    pred_r = (lr > lb) & (lr >= ln) & (lr > 0)
    pred_b = (lb > lr) & (lb >= ln) & (lb > 0)
    f1s = []
    for pred, actual in ((pred_r, y_r), (pred_b, ~y_r)):
        tp = int((pred & actual).sum())
        f1s.append(2 * tp / max(1, int(pred.sum()) + int(actual.sum())))
    return sum(f1s) / 2


def fit_thresholds(
    measures: dict[str, NDArray[np.float64]],
    labels: Sequence[str],
    groups: Sequence[str] | None = None,
    n_grid: int = 14,
) -> dict[str, tuple[float, float]]:
    """(medium, high) per behaviour by a grid over quantiles maximising the primary label's
    macro-F1 on the reinforcing and boundary rows; with ``groups``, the mean macro-F1 over the
    groups (e.g. models), so each group counts alike. Neutral's cuts: its 97th/99th percentiles."""
    lab = np.asarray(labels)
    rb = (lab == REINF) | (lab == BOUND)
    y_r = lab[rb] == REINF
    grp = np.asarray(groups)[rb] if groups is not None else np.zeros(int(rb.sum()), dtype=int)
    masks = [grp == g for g in np.unique(grp)]
    r, b, n = (measures[k][rb] for k in BEHAVIOURS)
    mn, hn = (float(q) for q in np.quantile(measures[NEUTRAL], [0.97, 0.99]))
    ln = _levels(n, mn, hn)
    qs = np.linspace(0.0, 1.0, n_grid + 2)[1:-1]
    qr = np.unique(np.quantile(measures[REINF], np.concatenate([qs, 1 - (1 - qs) / 10])))
    qb = np.unique(np.quantile(measures[BOUND], qs))
    pairs_b = [(mb, hb, _levels(b, mb, hb)) for j, mb in enumerate(qb) for hb in qb[j:]]
    best, cuts = -1.0, (0.0, 0.0, 0.0, 0.0)
    for i, mr in enumerate(qr):
        for hr in qr[i:]:
            lr = _levels(r, mr, hr)
            for mb, hb, lb in pairs_b:
                f = float(np.mean([primary_f1(lr[m], lb[m], ln[m], y_r[m]) for m in masks]))
                if f > best + 1e-12:
                    best, cuts = f, (float(mr), float(hr), float(mb), float(hb))
    rd = lambda x: round(float(x), 6)  # noqa: E731
    return {
        REINF: (rd(cuts[0]), rd(cuts[1])),
        BOUND: (rd(cuts[2]), rd(cuts[3])),
        NEUTRAL: (rd(mn), rd(hn)),
    }


def behaviour_measures(
    data: DevData, params: AffectParams, cfg: AffectConfig
) -> dict[str, NDArray[np.float64]]:
    """The three behaviours' measures of every row under ``params``."""
    scores = AffectScorer(cfg, params=params).score_computed(data.items, data.feats, data.emb)
    return {b: np.array([s.scores[b].measure for s in scores]) for b in BEHAVIOURS}


def fit_params(
    data: DevData,
    centroids: dict[str, list[float]],
    config: AffectConfig | None = None,
    l2: float = 3.0,
    per_group_thresholds: bool = False,
    graded: GradedData | None = None,
    graded_weight: float = GRADED_WEIGHT,
    intensity_l2: float = INTENSITY_L2,
    cut_points: bool = True,
) -> AffectParams:
    """Every fitted number from ``data`` (and, for v3, ``graded``); thresholds last, on the
    measures the heads give. Without ``graded`` this is the previous version's fit (no
    intensity head, ELS as in v2), which the benchmarks show side by side. ``cut_points=False``
    skips the threshold search (all cuts 0), for evaluations that only rank."""
    cfg = config or AffectConfig()
    fam = fx.family_matrix(data.feats)
    lab = np.asarray(data.labels)
    soft = None
    if graded is not None:
        soft = SoftRows(graded.emb, fx.family_matrix(graded.feats), graded.targets, graded_weight)
    head_w, head_v, head_b, nf_lambda = {}, {}, {}, {}
    for b in BEHAVIOURS:
        y = (lab == b).astype(np.float64)
        hc, nc = family_columns(HEAD_FAMILIES[b]), family_columns(NF_FAMILIES[b])
        w, v, c, lam = fit_head(data.emb, fam, y, hc, nc, l2, soft=soft if b == REINF else None)
        head_w[b], head_v[b] = w.round(6).tolist(), v.round(6).tolist()
        head_b[b], nf_lambda[b] = round(c, 6), lam.round(6).tolist()
    iw: list[float] = []
    ib = 0.0
    if graded is not None:
        w_i, ib = fit_intensity(intensity_inputs(graded), graded.targets, intensity_l2)
        iw, ib = w_i.round(6).tolist(), round(ib, 6)
    params = AffectParams(
        version=PARAMS_VERSION if graded is not None else PREVIOUS_VERSION,
        head_w=head_w,
        head_v=head_v,
        head_b=head_b,
        nf_lambda=nf_lambda,
        centroids=centroids,
        thresholds={b: (0.0, 0.0) for b in BEHAVIOURS},
        intensity_w=iw,
        intensity_b=ib,
    )
    groups = data.models if per_group_thresholds else None
    cuts = params.thresholds
    if cut_points:
        cuts = fit_thresholds(behaviour_measures(data, params, cfg), data.labels, groups)
    notes: dict[str, str | int | float | list[str]] = {
        "n_fit": len(data.labels),
        "l2": l2,
        "families": list(FAMILY_NAMES),
        "thresholds": "mean per-model macro-F1" if per_group_thresholds else "pooled macro-F1",
    }
    if graded is not None:
        notes |= {
            "n_graded": len(graded.grades),
            "graded_weight": graded_weight,
            "intensity_l2": intensity_l2,
            "intensity_features": list(INTENSITY_FEATURES),
        }
    return params.model_copy(update={"thresholds": cuts, "notes": notes})


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Fit the affect measure's parameters.")
    ap.add_argument("--dev", type=Path, required=True, help="labelled dev set (JSONL)")
    ap.add_argument("--graded", type=Path, required=True, help="graded dev set (JSONL)")
    ap.add_argument("--out", type=Path, required=True, help="params file to write")
    ap.add_argument("--l2", type=float, default=3.0)
    args = ap.parse_args(argv)
    cfg = AffectConfig()
    data, graded = load_dev(args.dev, cfg), load_graded(args.graded, cfg)
    params = fit_params(data, exemplar_centroids(cfg), cfg, l2=args.l2, graded=graded)
    params.model_copy(update={"notes": params.notes | file_hashes(args.dev, args.graded)}).dump(
        args.out
    )
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


def file_hashes(dev: Path, graded: Path) -> dict[str, str | int | float | list[str]]:
    """The sha256 of the two dev files, as the params file's notes carry them."""
    return {
        "dev_sha256": hashlib.sha256(dev.read_bytes()).hexdigest(),
        "graded_sha256": hashlib.sha256(graded.read_bytes()).hexdigest(),
    }


if __name__ == "__main__":
    main()
