"""The graded dev set (responses graded 1-10 for relationship-seeking) and the v3 fits on it.

Two things are fitted on it (``python -m intima.affect.fit --graded PATH``):

* the **intensity head** behind the reinforcing ELS: ridge regression of (grade - 1) / 9 on the
  standardised relational features (:mod:`intima.affect.intensity`), each weight held to its
  sign, stored in raw feature units (``w = beta / sd``, ``b = mean(t) - sum(beta * mu / sd)``);
* the graded rows also join the reinforcing SSL head's logistic fit as **soft targets**
  (``fit.fit_head``), so that a cold, impersonal answer, which the INTIMA dev set barely has,
  is not mistaken for a reinforcing one.

Like the INTIMA dev set, the text is read to compute features and never written anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from intima.affect import factors as fx
from intima.affect.config import AffectConfig
from intima.affect.embed import Embedder, default_embedder
from intima.affect.features import TextFeatures, text_features
from intima.affect.intensity import SIGNS
from intima.affect.measure import AffectInput

#: The grade scale of the graded set.
GRADE_MIN, GRADE_MAX = 1.0, 10.0


@dataclass
class GradedData:
    """What the v3 fits need of the graded set; the text stays in memory only."""

    items: list[AffectInput]
    grades: NDArray[np.float64]
    settings: list[str]  # "single-turn" or "multi-turn <theme>"
    conversations: list[str]  # a multi-turn row's conversation ("" for single-turn rows)
    feats: list[TextFeatures]
    emb: NDArray[np.float32]

    @property
    def targets(self) -> NDArray[np.float64]:
        """Grades mapped to [0, 1]: the soft targets of the fits."""
        return (self.grades - GRADE_MIN) / (GRADE_MAX - GRADE_MIN)

    def subset(self, idx: Sequence[int]) -> GradedData:
        ix = list(idx)
        return GradedData(
            [self.items[i] for i in ix],
            self.grades[ix],
            [self.settings[i] for i in ix],
            [self.conversations[i] for i in ix],
            [self.feats[i] for i in ix],
            self.emb[ix],
        )


def _conversation(row: dict[str, object]) -> str:
    if str(row.get("setting", "")).startswith("single"):
        return ""
    return str(row["id"]).rsplit("/", 1)[0]  # multi-turn ids end in the turn number


def read_rows(
    path: Path,
    config: AffectConfig | None,
    embedder: Embedder | None,
    limit: int | None,
    emb: NDArray[np.float32] | None,
) -> tuple[list[dict[str, Any]], list[AffectInput], NDArray[np.float32]]:
    """A dev set's rows (JSONL with ``messages`` and ``response``), one input per row (prompt:
    the last message), and their embeddings (``emb``, if already computed with these settings)."""
    cfg = config or AffectConfig()
    with path.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()][:limit]
    items = [
        AffectInput(response_id=str(i), prompt=r["messages"][-1]["content"], response=r["response"])
        for i, r in enumerate(rows)
    ]
    if emb is None:
        units = [it.response.strip() or "." for it in items]
        emb = (embedder or default_embedder()).encode(units, max_tokens=cfg.embed_max_tokens)
    return rows, items, emb


def load_graded(
    path: Path,
    config: AffectConfig | None = None,
    embedder: Embedder | None = None,
    limit: int | None = None,
    emb: NDArray[np.float32] | None = None,
) -> GradedData:
    """Read the graded set (JSONL: id, setting, messages, response, score) and compute its
    features (``emb``: its embeddings, if already computed with the same settings)."""
    rows, items, emb = read_rows(path, config, embedder, limit, emb)
    return GradedData(
        items=items,
        grades=np.array([float(r["score"]) for r in rows]),
        settings=[str(r["setting"]) for r in rows],
        conversations=[_conversation(r) for r in rows],
        feats=[text_features(it.response) for it in items],
        emb=emb,
    )


def fit_intensity(
    x: NDArray[np.float64], t: NDArray[np.float64], l2: float, signs: Sequence[float] = SIGNS
) -> tuple[NDArray[np.float64], float]:
    """Ridge regression of t on standardised x (intercept unpenalised), each weight held to the
    sign of ``signs`` (bounded least squares on the ridge-augmented system, exact and
    deterministic); returned in raw units: (w, b)."""
    from scipy.optimize import lsq_linear

    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd = np.where(sd > 1e-12, sd, 1.0)
    z = (x - mu) / sd
    k = x.shape[1]
    a = np.vstack([z, np.sqrt(l2) * np.eye(k)])
    rhs = np.concatenate([t - t.mean(), np.zeros(k)])
    sg = np.asarray(signs, dtype=np.float64)
    lower, upper = np.where(sg > 0, 0.0, -np.inf), np.where(sg > 0, np.inf, 0.0)
    beta = lsq_linear(a, rhs, bounds=(lower, upper), method="bvls", tol=1e-12).x
    w = beta / sd
    return w, float(t.mean() - w @ mu)


def intensity_inputs(data: GradedData) -> NDArray[np.float64]:
    return fx.intensity_matrix(data.feats)
