"""Leave-one-model-out predictions of the affect measure on the dev set, shared by
``affect_card.py`` and ``bench_corrected.py``.

Every prediction of a row comes from parameters fitted (:func:`intima.affect.fit.fit_params`,
as ``bench_lomo.py`` does) on rows of *other* models only (and, for a version fitted on the
graded set too, on the whole graded set, as its own fit is). The dev set's text stays in memory;
only numbers are written (the optional embedding cache, keyed by the file's hash and the
settings).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from intima.affect.config import SCORER_VERSION, AffectConfig
from intima.affect.fit import (
    BOUND,
    NEUTRAL,
    REINF,
    DevData,
    exemplar_centroids,
    fit_params,
    load_dev,
)
from intima.affect.measure import AffectScorer

SHARED = Path(__file__).resolve().parents[2] / "shared" / "validation"
DEV = SHARED / "companion-responses-dev.jsonl"
GRADED = SHARED / "relationship-graded-dev.jsonl"
CACHE = Path.home() / ".cache" / "intima" / "bench"
TRUTH = {REINF: "reinforcing", BOUND: "boundary", NEUTRAL: "neutral"}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Dev:
    data: DevData
    variants: list[str]
    sha256: str
    path: Path
    graded: Any = None  # the graded set, when the version's fit uses it

    @property
    def models(self) -> list[str]:
        return sorted(set(self.data.models))

    @property
    def truth(self) -> list[str]:
        return [TRUTH[b] for b in self.data.labels]


def _cached(path: Path, loader: Any, cfg: AffectConfig) -> Any:
    """``loader(path, cfg, emb=...)`` with the embeddings cached by the file's hash."""
    cache = CACHE / f"{sha256(path)[:16]}-{cfg.embed_max_tokens}.npy"
    emb = np.load(cache) if cache.is_file() else None
    data = loader(path, cfg, emb=emb)
    if emb is None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.save(cache, data.emb)
    return data


def load(path: Path = DEV, cfg: AffectConfig | None = None, graded: Path = GRADED) -> Dev:
    """The dev set with its embeddings (cached under ~/.cache/intima/bench by hash), and the
    graded set when this version's fit uses one (``fit_params(..., graded=...)``)."""
    cfg = cfg or AffectConfig()
    data = _cached(path, load_dev, cfg)
    with path.open(encoding="utf-8") as fh:
        variants = [str(json.loads(line).get("variant", "")) for line in fh if line.strip()]
    dev = Dev(data, variants, sha256(path), path)
    if uses_graded():
        from intima.affect.graded import load_graded

        dev.graded = _cached(graded, load_graded, cfg)
    return dev


def uses_graded() -> bool:
    """Whether this version's parameters are fitted on the graded set too (affect-3.0 on)."""
    return "graded" in inspect.signature(fit_params).parameters


@dataclass
class Predictions:
    """Out-of-fold predictions of some rows: primary label and reinforcing measure."""

    rows: list[int]
    primary: list[str]
    measure: list[float]


def predict(
    dev: Dev, fit_rows: Sequence[int], rows: Sequence[int], cfg: AffectConfig | None = None
) -> Predictions:
    """Fit on ``fit_rows``, score ``rows``."""
    cfg = cfg or AffectConfig()
    extra = {"graded": dev.graded} if dev.graded is not None else {}
    params = fit_params(dev.data.subset(list(fit_rows)), _centroids(cfg), cfg, **extra)
    held = dev.data.subset(list(rows))
    scores = AffectScorer(cfg, params=params).score_computed(held.items, held.feats, held.emb)
    return Predictions(
        list(rows),
        [_label(str(s.primary)) for s in scores],
        [float(s.scores[REINF].measure) for s in scores],
    )


def _label(primary: str) -> str:
    return {"companionship_reinforcing": "reinforcing", "boundary_maintaining": "boundary"}.get(
        primary, primary
    )


_CENTROIDS: dict[str, dict[str, list[float]]] = {}


def _centroids(cfg: AffectConfig) -> dict[str, list[float]]:
    if cfg.key not in _CENTROIDS:
        _CENTROIDS[cfg.key] = exemplar_centroids(cfg)
    return _CENTROIDS[cfg.key]


def leave_one_model_out(
    dev: Dev, models: Sequence[str] | None = None, cfg: AffectConfig | None = None
) -> dict[str, Predictions]:
    """model -> its rows scored by parameters fitted on the other ``models``' rows (default:
    every model of the set); rows of models outside ``models`` are never used."""
    names = list(models or dev.models)
    of = dev.data.models
    out = {}
    for m in names:
        fit = [i for i, x in enumerate(of) if x in names and x != m]
        out[m] = predict(dev, fit, [i for i, x in enumerate(of) if x == m], cfg)
    return out


def version() -> str:
    return str(SCORER_VERSION)
