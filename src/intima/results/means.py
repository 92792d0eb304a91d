"""The continuous column beside the board's raw shares: each configuration's mean reinforcing
score, overall and per dimension, with a 95% interval.

The score is the affect measure's continuous reinforcing measure for ``affect`` and the
reinforcing level (0 low, 1 medium, 2 high) for judges, panels and people. The interval is
normal, with the larger of two standard errors: the table's own seeded cluster bootstrap
(prompts resampled within codes, the same replicates as
:func:`~intima.results.table.score_table` with the same ``bootstrap`` and ``seed``) and the
plain one (never more information than n independent responses).

It is a plain summary of the scorer's output, not a share corrected for its errors: the board
shows no error-corrected share (``docs/leaderboard.md``, What the numbers mean).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Final, NamedTuple

import numpy as np
from numpy.typing import NDArray

from intima.core.ratings import RatingSet
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.results.intervals import CONFIDENCE, bootstrap_variance
from intima.results.table import OVERALL, Placed, bootstrap_weights, dims_in

#: The category whose level or measure is the continuous column.
REINFORCING_CATEGORY: Final = "companionship_reinforcing"


class ContinuousRow(NamedTuple):
    scorer: str
    run_id: str
    scope: str
    mean: float | None
    lo: float | None
    hi: float | None
    n: int


@dataclass(frozen=True)
class Means:
    rows: tuple[ContinuousRow, ...]
    #: scorer -> what its continuous column is (e.g. "mean reinforcing level (0-2)")
    measures: Mapping[str, str] = field(default_factory=dict)
    _by_key: dict[tuple[str, str, str], ContinuousRow] = field(default_factory=dict, repr=False)

    def mean(self, scorer: str, run_id: str, scope: str) -> ContinuousRow | None:
        if not self._by_key:
            self._by_key.update({(r.scorer, r.run_id, r.scope): r for r in self.rows})
        return self._by_key.get((scorer, run_id, scope))

    @property
    def scopes(self) -> set[str]:
        return {r.scope for r in self.rows}


def continuous_values(
    rating_sets: Sequence[RatingSet], affect: Mapping[str, Sequence[Sequence[object]]]
) -> dict[str, dict[str, float]]:
    """scorer -> response -> its continuous reinforcing score: the affect measure for
    ``affect`` (from the factor breakdown), the reinforcing level for every other scorer."""
    out: dict[str, dict[str, float]] = {}
    for rs in rating_sets:
        if rs.scorer == "affect":
            rows = affect.get(rs.response_id, ())
            value = next((r[2] for r in rows if r[0] == REINFORCING_CATEGORY), None)
        else:
            value = rs.levels.get(REINFORCING_CATEGORY) if rs.scored else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            out.setdefault(rs.scorer, {}).setdefault(rs.response_id, float(value))
    return out


def measure_name(scorer: str) -> str:
    if scorer == "affect":
        return "mean reinforcing measure (affect, continuous)"
    return "mean reinforcing level (0 low, 1 medium, 2 high)"


def mean_scores(
    responses: Sequence[Placed],
    values: Mapping[str, Mapping[str, float]],
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> Means:
    """Every scorer's mean score per configuration, overall and per dimension (``values``:
    :func:`continuous_values`)."""
    configs = list(dict.fromkeys((r.run_id, r.label) for r in responses))
    prompt_ids = list(dict.fromkeys(r.prompt_id for r in responses))
    names = [s for s, v in values.items() if v]
    if not configs or not names:
        return Means(())
    p_index = {p: i for i, p in enumerate(prompt_ids)}
    c_index = {run_id: i for i, (run_id, _) in enumerate(configs)}
    code_of: dict[str, str] = {}
    dim_of: dict[str, str] = {}
    for r in responses:
        code_of.setdefault(r.prompt_id, r.code)
        dim_of.setdefault(r.prompt_id, r.dimension)
    n_c = len(configs)
    # x[p, scorer, c, :] = (value, value^2, 1) of configuration c's response to prompt p.
    x = np.zeros((len(prompt_ids), len(names), n_c, 3))
    for k, scorer in enumerate(names):
        own = values[scorer]
        for r in responses:
            v = own.get(r.response_id)
            if v is not None:
                x[p_index[r.prompt_id], k, c_index[r.run_id]] += (v, v * v, 1.0)
    weights, _, _ = bootstrap_weights([code_of[p] for p in prompt_ids], bootstrap, seed)
    dims = np.asarray([dim_of[p] for p in prompt_ids], dtype=object)
    scopes = {d: np.flatnonzero(dims == d) for d in dims_in(set(dim_of.values()))}
    flat = x.reshape(len(prompt_ids), -1)
    boot = {s: weights[:, idx].astype(np.float64) @ flat[idx] for s, idx in scopes.items()}
    point = {s: flat[idx].sum(axis=0) for s, idx in scopes.items()}
    # The dimensions partition the prompts: overall is their sum.
    boot = {OVERALL: np.sum(list(boot.values()), axis=0), **boot}
    point = {OVERALL: np.sum(list(point.values()), axis=0), **point}
    rows: list[ContinuousRow] = []
    for k, scorer in enumerate(names):
        for scope in boot:
            b = boot[scope].reshape(bootstrap, len(names), n_c, 3)[:, k]
            pt = point[scope].reshape(len(names), n_c, 3)[k]
            rows += continuous_rows(scorer, scope, configs, b, pt)
    return Means(tuple(rows), {s: measure_name(s) for s in names})


def continuous_rows(
    scorer: str,
    scope: str,
    configs: Sequence[tuple[str, str]],
    boot: NDArray[np.float64],
    point: NDArray[np.float64],
) -> list[ContinuousRow]:
    """Rows from summed (value, value^2, count) in the last three columns of ``boot``
    (replicate, configuration, column) and ``point`` (configuration, column)."""
    z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = boot[:, :, -3] / boot[:, :, -1]
    var_boot = bootstrap_variance(reps)
    out = []
    for c, (run_id, _) in enumerate(configs):
        n = int(point[c, -1])
        if n == 0:
            out.append(ContinuousRow(scorer, run_id, scope, None, None, None, 0))
            continue
        mean = float(point[c, -3] / n)
        plain = max(0.0, float(point[c, -2] / n - mean * mean)) / max(n - 1, 1)
        vb = float(var_boot[c])
        se = math.sqrt(max(plain, vb if vb == vb else 0.0))  # vb != vb: NaN
        lo, hi = mean - z * se, mean + z * se
        bottom, top = scale_of(scorer)
        # The normal interval can leave the scale (a few responses far apart); no mean can.
        lo, hi = max(lo, bottom), hi if top is None else min(hi, top)
        out.append(ContinuousRow(scorer, run_id, scope, mean, lo, hi, n))
    return out


def scale_of(scorer: str) -> tuple[float, float | None]:
    """The range a mean score can take: a level is 0 (low) to 2 (high); the affect measure,
    a product of non-negative factors plus a non-negative context term, is at least 0 and
    has no fixed top."""
    return (0.0, None) if scorer == "affect" else (0.0, 2.0)
