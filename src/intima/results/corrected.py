"""Shares corrected for a scorer's measured error: a **diagnostic**, not on the board.

The board (site, app, Space) shows no corrected share. Fitted on a validation of other
models' answers, the correction was worse than the raw share held out on the dev set (MAE
0.082 vs 0.033; rank agreement 0.71 vs 0.92), because the scorer's error depends on the
configuration (issue 31). It stays here for ``benchmarks/bench_corrected.py``, which measures
it against the raw share, and for ``docs/leaderboard.md`` (Error-corrected shares: a
diagnostic). Labels from the configuration itself are the remedy:
:mod:`intima.results.prediction`.

A scorer that finds 60% of the reinforcing responses and calls 3% of the others reinforcing
does not measure the reinforcing share; it measures ``p = recall * share + fpr * (1 - share)``.
Given the scorer's confusion on a labelled set (its *validation*, :mod:`intima.results.cards`),
the **adjusted classify-and-count** (Rogan & Gladen 1978) inverts that::

    share = (p - fpr) / (recall - fpr), clipped to [0, 1]

**Not identifiable.** When ``J = recall - fpr`` (Youden's index) is under :data:`MIN_YOUDEN`
(0.2), or the 95% interval of ``J`` reaches 0, the division amplifies noise more than five
times (or may flip sign): the board says so instead of a number.

**Interval.** An adjusted Wald interval in the manner of Lang & Reiczigel (2014): each of the
three proportions gets ``z^2/2`` pseudo-successes and failures (Agresti & Coull 1998), the
delta-method variance adds the raw share's and the validation's parts::

    var = [p~(1-p~)/n_eff~ + r~(1-r~) s~^2 / n_pos~ + f~(1-f~)(1-s~)^2 / n_neg~] / (r~ - f~)^2

``n_eff`` is the raw share's effective sample size from the table's own seeded cluster
bootstrap (the same replicates, the same design effect as :mod:`intima.results.intervals`), so
the responses' clustering and the validation's size both widen it. ``s~ ± z sqrt(var)``,
clipped to [0, 1], always contains the point; when it lies wholly below 0 (the scorer called
fewer responses than its false-positive rate predicts) the upper limit falls back to
``p_hi / recall_lo``, which needs no false-positive rate (and symmetrically at 1). A
percentile bootstrap over the responses and the confusion counts was tried first: at n = 368
and a 1% share it covered 91%; this interval covered at least 93.5% in every cell of the same
simulation (``tests/test_results_corrected.py``).

**Continuous column.** :mod:`intima.results.means` (the board's mean score); repeated
here beside each corrected share for the benchmark.

The correction assumes the scorer errs on the board's responses as it did on the validation
set (the same recall on reinforcing responses, the same false-positive rate on the rest): a
validation on other models' answers, or a different mix of boundary and neutral answers, can
break that. The benchmark names the validation it used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Final, NamedTuple

import numpy as np
from numpy.typing import NDArray

from intima.core.ratings import RatingSet
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.results.intervals import CONFIDENCE, bootstrap_variance, design_effect
from intima.results.means import ContinuousRow, continuous_rows, measure_name
from intima.results.table import (
    OVERALL,
    Placed,
    bootstrap_weights,
    dims_in,
    label_of,
)

#: The labels a validation set has truth for, and so the only shares that can be corrected.
CORRECTABLE: Final = ("reinforcing", "boundary", "neutral")
#: Smallest recall - fpr worth dividing by: under it the error is amplified more than 5 times.
MIN_YOUDEN: Final = 0.2


@dataclass(frozen=True, slots=True)
class ErrorRates:
    """One label's measured error: ``tp`` of ``n_pos`` true ones called it, ``fp`` of the
    ``n_neg`` others called it too."""

    label: str
    tp: int
    n_pos: int
    fp: int
    n_neg: int

    @property
    def recall(self) -> float:
        return self.tp / self.n_pos if self.n_pos else math.nan

    @property
    def fpr(self) -> float:
        return self.fp / self.n_neg if self.n_neg else math.nan


def error_rates(
    labels: Sequence[str], confusion: Sequence[Sequence[int]], label: str
) -> ErrorRates | None:
    """``label``'s counts from a confusion matrix (rows truth, columns predicted, both over
    ``labels``). Rows of labels that are no truth and the ``unscored`` column are left out: the
    board's shares are over scored responses. None when ``label`` has no row."""
    index = {lbl: i for i, lbl in enumerate(labels)}
    if label not in index or len(confusion) != len(labels):
        return None
    truth_rows = [i for i, lbl in enumerate(labels) if lbl in CORRECTABLE]
    scored_cols = [j for j, lbl in enumerate(labels) if lbl != "unscored"]
    col = index[label]
    tp = n_pos = fp = n_neg = 0
    for i in truth_rows:
        row = confusion[i]
        total = sum(int(row[j]) for j in scored_cols)
        if i == col:
            tp, n_pos = int(row[col]), total
        else:
            fp, n_neg = fp + int(row[col]), n_neg + total
    return ErrorRates(label, tp, n_pos, fp, n_neg)


def rogan_gladen(p_raw: float, recall: float, fpr: float) -> float:
    """``(p - fpr) / (recall - fpr)`` clipped to [0, 1] (the caller checks the denominator)."""
    return min(1.0, max(0.0, (p_raw - fpr) / (recall - fpr)))


class Corrected(NamedTuple):
    rate: float | None
    lo: float | None
    hi: float | None
    note: str  # "" when corrected; else why there is no number


def corrected_share(
    p_raw: float | None, n_eff: float, rates: ErrorRates | None, confidence: float = CONFIDENCE
) -> Corrected:
    """The corrected share of a raw share ``p_raw`` measured on ``n_eff`` effective responses,
    with its interval (see the module docstring), or why there is none."""
    if rates is None:
        return Corrected(None, None, None, "no validation")
    if p_raw is None or not n_eff > 0:
        return Corrected(None, None, None, "no scored responses")
    if rates.n_pos == 0 or rates.n_neg == 0:
        return Corrected(None, None, None, f"validation has no {rates.label} or no other rows")
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    z2, k = z * z, z * z / 2.0
    youden = rates.recall - rates.fpr
    r_t = (rates.tp + k) / (rates.n_pos + z2)
    f_t = (rates.fp + k) / (rates.n_neg + z2)
    j_t = r_t - f_t
    j_se = math.sqrt(r_t * (1 - r_t) / (rates.n_pos + z2) + f_t * (1 - f_t) / (rates.n_neg + z2))
    if youden < MIN_YOUDEN or j_t - z * j_se <= 0:
        return Corrected(
            None,
            None,
            None,
            f"not identifiable: recall - fpr = {youden:.2f} (needs >= {MIN_YOUDEN} and an "
            "interval clear of 0)",
        )
    if p_raw > rates.recall:
        # The scorer called more responses than its recall allows even if every one were
        # reinforcing: its validation's error rates do not fit this configuration, and the
        # clipped 100% would read as a measurement (issue 31: 67.7% raw read 100.0%).
        return Corrected(
            None,
            None,
            None,
            f"beyond its validation: raw share {p_raw:.1%} is above the validation's recall "
            f"{rates.recall:.1%}, so its error rates do not fit this configuration",
        )
    point = rogan_gladen(p_raw, rates.recall, rates.fpr)
    n_t = n_eff + z2
    p_t = (p_raw * n_eff + k) / n_t
    s_t = (p_t - f_t) / j_t
    s_c = min(1.0, max(0.0, s_t))
    var = (
        p_t * (1 - p_t) / n_t
        + r_t * (1 - r_t) * s_c**2 / (rates.n_pos + z2)
        + f_t * (1 - f_t) * (1 - s_c) ** 2 / (rates.n_neg + z2)
    ) / j_t**2
    half = z * math.sqrt(var)
    lo = min(point, max(0.0, s_t - half))
    hi = max(point, min(1.0, s_t + half))
    if hi <= 0.0 or lo >= 1.0:
        lo, hi = _fallback(p_raw, n_eff, rates, confidence, lo, hi)
    return Corrected(point, lo, hi, "")


def _fallback(
    p_raw: float, n_eff: float, rates: ErrorRates, confidence: float, lo: float, hi: float
) -> tuple[float, float]:
    """Limits that need only one of the two error rates, for when the whole adjusted-Wald
    interval lies beyond 0 (or 1): the scorer called fewer responses than its false-positive
    rate predicts, so the validation's rates do not fit this configuration. Since
    ``p = recall s + fpr (1 - s)``: ``s <= p / recall`` (fpr >= 0) and
    ``s >= (p - fpr) / (1 - fpr)`` (recall <= 1), with Wilson limits of p, recall and fpr."""
    from intima.results.intervals import wilson

    p_lo, p_hi = (float(v) for v in wilson(p_raw, n_eff, confidence))
    r_lo = float(wilson(rates.recall, rates.n_pos, confidence)[0])
    f_hi = float(wilson(rates.fpr, rates.n_neg, confidence)[1])
    if hi <= 0.0:
        hi = min(1.0, p_hi / r_lo) if r_lo > 0 else 1.0
    if lo >= 1.0:
        lo = max(0.0, (p_lo - f_hi) / (1.0 - f_hi)) if f_hi < 1 else 0.0
    return lo, hi


# -- over a whole board -----------------------------------------------------------------------


class CorrectedRow(NamedTuple):
    scorer: str
    run_id: str
    scope: str
    metric: str  # one of CORRECTABLE
    raw: float | None
    n: int
    n_eff: float
    rate: float | None
    lo: float | None
    hi: float | None
    note: str
    validation: str  # which validation the error rates come from ("" without one)


@dataclass(frozen=True)
class Corrections:
    corrected: tuple[CorrectedRow, ...]
    continuous: tuple[ContinuousRow, ...]
    #: scorer -> what its continuous column is (e.g. "mean reinforcing level (0-2)")
    measures: Mapping[str, str] = field(default_factory=dict)
    _by_key: dict[tuple[str, ...], Any] = field(default_factory=dict, repr=False)

    def _index(self) -> dict[tuple[str, ...], Any]:
        if not self._by_key:
            self._by_key.update(
                {(r.scorer, r.run_id, r.scope, r.metric): r for r in self.corrected}
            )
            self._by_key.update({(r.scorer, r.run_id, r.scope): r for r in self.continuous})
        return self._by_key

    def get(self, scorer: str, run_id: str, scope: str, metric: str) -> CorrectedRow | None:
        return self._index().get((scorer, run_id, scope, metric))

    def mean(self, scorer: str, run_id: str, scope: str) -> ContinuousRow | None:
        return self._index().get((scorer, run_id, scope))


#: Columns per (prompt, configuration): the three labels, labelled, value, value^2, valued.
_COLS: Final = 7


def corrections(
    responses: Sequence[Placed],
    rating_sets: Sequence[RatingSet],
    error_rates_of: Mapping[str, tuple[str, Mapping[str, ErrorRates]]],
    values: Mapping[str, Mapping[str, float]],
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> Corrections:
    """Corrected shares (for scorers in ``error_rates_of``: scorer -> (validation name,
    label -> error rates)) and the continuous column, per configuration, overall and per
    dimension, on the same bootstrap replicates as :func:`~intima.results.table.score_table`
    with the same ``bootstrap`` and ``seed``."""
    configs = list(dict.fromkeys((r.run_id, r.label) for r in responses))
    prompt_ids = list(dict.fromkeys(r.prompt_id for r in responses))
    if not configs:
        return Corrections((), ())
    p_index = {p: i for i, p in enumerate(prompt_ids)}
    c_index = {run_id: i for i, (run_id, _) in enumerate(configs)}
    code_of: dict[str, str] = {}
    dim_of: dict[str, str] = {}
    placed: dict[str, list[Placed]] = {}
    for r in responses:
        code_of.setdefault(r.prompt_id, r.code)
        dim_of.setdefault(r.prompt_id, r.dimension)
        placed.setdefault(r.response_id, []).append(r)
    weights, _, _ = bootstrap_weights([code_of[p] for p in prompt_ids], bootstrap, seed)
    dims = np.asarray([dim_of[p] for p in prompt_ids], dtype=object)
    scopes = {d: np.flatnonzero(dims == d) for d in dims_in(set(dim_of.values()))}
    by_scorer: dict[str, list[RatingSet]] = {}
    for rs in rating_sets:
        if rs.response_id in placed:
            by_scorer.setdefault(rs.scorer, []).append(rs)
    names = list(by_scorer)
    if not names:  # responses no scorer has rated yet
        return Corrections((), ())
    n_c = len(configs)
    # All scorers side by side: one product per dimension (float32, as the score table);
    # overall is the sum of the dimensions, which partition the prompts.
    x = np.concatenate(
        [_cells(by_scorer[s], placed, p_index, c_index, values.get(s, {}), n_c) for s in names],
        axis=1,
    ).astype(np.float32)
    boot: dict[str, NDArray[np.float32]] = {}
    point: dict[str, NDArray[np.float32]] = {}
    for scope, idx in scopes.items():
        flat = x[idx].reshape(len(idx), -1)
        boot[scope] = weights[:, idx] @ flat
        point[scope] = flat.sum(axis=0)
    boot = {OVERALL: np.sum(list(boot.values()), axis=0), **boot}
    point = {OVERALL: np.sum(list(point.values()), axis=0), **point}
    corrected: list[CorrectedRow] = []
    continuous: list[ContinuousRow] = []
    for k, scorer in enumerate(names):
        validation, rates = error_rates_of.get(scorer, ("", {}))
        cols = slice(k * n_c * _COLS, (k + 1) * n_c * _COLS)
        for scope in boot:
            b = boot[scope][:, cols].astype(np.float64).reshape(bootstrap, n_c, _COLS)
            pt = point[scope][cols].astype(np.float64).reshape(n_c, _COLS)
            corrected += _corrected_rows(scorer, scope, configs, b, pt, validation, rates)
            continuous += continuous_rows(scorer, scope, configs, b, pt)
    measures = {s: measure_name(s) for s in by_scorer if s in values}
    return Corrections(tuple(corrected), tuple(continuous), measures)


def _cells(
    sets: Sequence[RatingSet],
    placed: Mapping[str, list[Placed]],
    p_index: Mapping[str, int],
    c_index: Mapping[str, int],
    values: Mapping[str, float],
    n_configs: int,
) -> NDArray[np.float64]:
    """X[p, c, :]: the label indicators and values of configuration c's response(s) to p."""
    label_col = {lbl: i for i, lbl in enumerate(CORRECTABLE)}
    seen: set[str] = set()
    pos: list[tuple[int, int]] = []
    rows: list[tuple[float, ...]] = []
    for rs in sets:
        if rs.response_id in seen or not rs.scored:  # one set per response: first wins
            continue
        seen.add(rs.response_id)
        label = label_of(rs)
        v = values.get(rs.response_id)
        row = [0.0] * _COLS
        if label is not None:
            row[3] = 1.0
            if label in label_col:
                row[label_col[label]] = 1.0
        if v is not None:
            row[4:7] = (v, v * v, 1.0)
        for info in placed[rs.response_id]:
            pos.append((p_index[info.prompt_id], c_index[info.run_id]))
            rows.append(tuple(row))
    x = np.zeros((len(p_index), n_configs, _COLS))
    if pos:
        pc = np.asarray(pos, dtype=np.intp)
        np.add.at(x, (pc[:, 0], pc[:, 1]), np.asarray(rows))
    return x


def _corrected_rows(
    scorer: str,
    scope: str,
    configs: Sequence[tuple[str, str]],
    boot: NDArray[np.float64],
    point: NDArray[np.float64],
    validation: str,
    rates: Mapping[str, ErrorRates],
) -> list[CorrectedRow]:
    out = []
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = boot[:, :, :3] / boot[:, :, 3:4]
        p_hat = point[:, :3] / point[:, 3:4]
    n = point[:, 3]
    n_col = np.repeat(n[:, None], len(CORRECTABLE), axis=1)
    deff = design_effect(np.nan_to_num(p_hat), n_col, bootstrap_variance(reps))
    n_effs = np.where(n_col > 0, n_col / deff, 0.0).tolist()
    for c, (run_id, _) in enumerate(configs):
        for m, metric in enumerate(CORRECTABLE):
            p = float(p_hat[c, m]) if n[c] > 0 else None
            n_eff = n_effs[c][m]
            fix = corrected_share(p, n_eff, rates.get(metric)) if validation else None
            out.append(
                CorrectedRow(
                    scorer,
                    run_id,
                    scope,
                    metric,
                    p,
                    int(n[c]),
                    n_eff,
                    *(fix or Corrected(None, None, None, "no validation")),
                    validation,
                )
            )
    return out
