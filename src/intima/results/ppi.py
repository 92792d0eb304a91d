"""Prediction-powered shares: a judge's share over all of a configuration's responses, from
the judge on a seeded random sample of them and a cheap scorer on every one.

The estimator is PPI++ with power tuning (Angelopoulos, Duchi & Zrnic 2023) for a mean,
in the finite-population form the board needs. A configuration has ``N`` responses (368 on
the INTIMA prompts); the judge labels a simple random sample of ``n`` of them drawn without
replacement (``y`` in {0, 1}: the judge's primary label is the class in question); a scorer
gives every response a real score ``f``. The target is the share the judge would give **all
N**, ``theta = mean(Y)``. With ``e = y - lambda f``::

    theta_hat = lambda * mean(f over all N) + mean(e over the sample)

For a fixed ``lambda`` this is the survey-sampling difference estimator, exactly unbiased
under simple random sampling, with variance ``(1 - n/N) S_e^2 / n`` (``S_e^2`` the
population variance of ``e``): the factor ``1 - n/N`` is the finite-population correction
(FPC). The power-tuned ``lambda = Cov(y, f) / Var(f)`` on the sample (PPI++'s choice, which
minimises that variance; with every unlabelled score known it is the regression
coefficient), clipped to [0, 1] as in PPI++: ``lambda = 0`` is the judge alone, so a useless
or misleading scorer costs nothing.

**The interval.** The normal-theory plug-in ``theta_hat +- z * se`` covers a rare share's
truth far less than 95% of the time: 0-3 positives in 60 labelled make ``S_e^2`` collapse
(coverage 10% in the worst cell of ``benchmarks/bench_ppi.py``). The interval here is a
score interval, as Wilson's is for the judge alone: ``S_e^2`` is split by class,

    S_e^2(theta) = theta (1 - theta) (1 - lambda D)^2 + lambda^2 (theta V1 + (1 - theta) V0)

(``D`` the difference of the scorer's class means, ``V1``, ``V0`` its class variances; an
identity of the population variance), and the interval is every ``theta`` with
``(theta_hat - theta)^2 <= z^2 (1 - n/N) S_e^2(theta) / n``, a quadratic in ``theta``. The
binomial part thus comes from the hypothesised share, not the sample's, which is what keeps
the interval honest at 0 or 1 positives. With ``lambda = 0`` it is exactly Wilson's interval
with the FPC. Two small-sample guards, both chosen by the simulation:

* **pseudo-counts** (Agresti & Coull 1998): ``D``, ``V1`` and ``V0`` are estimated with
  ``z^2/2`` pseudo-responses added to each class, each at the mean of every score and with
  the variance of every score (what the scorer says of a response of unknown class). With a
  few positives in the sample, ``D`` shrinks toward 0 (no claimed variance reduction) and
  ``V1`` toward the spread of all scores, instead of trusting one or two points;
* **a continuity correction** of ``0.5/n`` on the bound toward the nearer extreme (the lower
  bound when ``theta_hat <= 1/2``): one positive in 30 labelled otherwise puts Wilson's lower
  bound above a true share of 2 in 368 (Brown, Cai & DasGupta 2001 show the same dip and
  correct it the same way, :mod:`intima.results.intervals`).

Figures (``benchmarks/bench_ppi.py``, seeded): over shares 0.005-0.5 (and their mirror
images), labelled n 30-120 of N = 368 and scorers of AUROC 0.7-0.95 (binormal scores, a
calibrated probability, a binary label, and a bimodal scorer that misses half the
positives), the minimum coverage of any cell is at least 0.93. Against the fair baseline, the
judge alone through this estimator (``lambda = 0``: Wilson's interval with the same
finite-population and continuity corrections), the dev set's intervals are 3.5-7% narrower.
``docs/leaderboard.md`` has the tables.

**Scores outside [0, 1] are used by their rank.** PPI++ clips ``lambda`` to [0, 1], which
presumes a score on the share's own scale, and the interval's variance comes from the
labelled scores' moments, which a heavy tail makes unstable: a real score with 5% Cauchy
outliers covered 0.846 at a share of 0.5 (n = 120), worse than the judge alone, and a score
of 1e155 overflowed the variance into the interval [0, 0.5]. So a scorer whose values all lie
in [0, 1] (a probability, a 0/1 label) is used as given, and any other finite score is first
replaced by its mid-rank among all ``N`` scores, rescaled to [0, 1]. The ranks are a fixed
function of the whole population's scores (every one is known, whichever were sampled), so
the difference estimator stays unbiased under simple random sampling; they are bounded, so
no single score can rule ``lambda`` or the variance; and such a score's units do not matter
(any increasing change of it gives the same share). ``benchmarks/bench_ppi.py``'s grid has a
heavy-tailed kind (5% Cauchy outliers) in every cell.

**Written here, not ``ppi-python``.** The authors' package (``ppi_py``) pulls numba,
statsmodels and gdown into a project whose board needs only numpy; it implements the
infinite-population plug-in interval, which is exactly the interval that fails above, so it
would have been used for its point estimate alone, three lines. The formulas are tested
against hand-computed values (``tests/test_results_ppi.py``).

References
----------
* Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I. & Zrnic, T. (2023).
  Prediction-powered inference. *Science* 382(6671), 669-674.
* Angelopoulos, A. N., Duchi, J. C. & Zrnic, T. (2023). PPI++: Efficient prediction-powered
  inference. arXiv:2311.01453.
* Cochran, W. G. (1977). *Sampling Techniques*, 3rd ed., ch. 7 (difference and regression
  estimators, the finite-population correction). New York: Wiley.
* Agresti, A. & Coull, B. A. (1998). Approximate is better than "exact" for interval
  estimation of binomial proportions. *The American Statistician* 52(2), 119-126.
* Brown, L. D., Cai, T. T. & DasGupta, A. (2001). Interval estimation for a binomial
  proportion. *Statistical Science* 16(2), 101-133.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

Arr = NDArray[np.float64]


@dataclass(frozen=True)
class PredictionPoweredShare:
    """A share with its interval. ``estimate`` is clipped to [0, 1] and lies in ``[lo, hi]``;
    ``lam`` is the power-tuning weight (0: the judge alone); ``n_labelled`` of
    ``n_total`` responses were judged; ``positives`` of them had the label."""

    estimate: float
    lo: float
    hi: float
    lam: float
    n_labelled: int
    n_total: int
    positives: int
    alpha: float


def _vector(values: ArrayLike, what: str) -> Arr:
    a = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} holds a missing or infinite value; give every one a number")
    return a


def _tuned_lambda(y: Arr, f: Arr) -> float:
    """PPI++'s power-tuned weight for a mean with every unlabelled score known: the sample
    regression coefficient of ``y`` on ``f``, clipped to [0, 1]."""
    if np.ptp(f) == 0.0:  # a constant scorer on the sample says nothing (and f - mean(f)
        return 0.0  # holds rounding noise, not zeros)
    fc = f - f.mean()
    sxx = float(fc @ fc)
    return float(min(1.0, max(0.0, float(fc @ (y - y.mean())) / sxx)))


def score_bounds(estimate: float, k: float, a: float, b: float, c: float) -> tuple[float, float]:
    """Every ``t`` in [0, 1] with ``(estimate - t)^2 <= k (a t (1 - t) + b + c t)``, as
    ``(lo, hi)``. With ``a = 1, b = c = 0`` this is Wilson's interval for ``k = z^2 / n``."""
    qa = 1.0 + k * a
    qb = -(2.0 * estimate + k * a + k * c)
    qc = estimate * estimate - k * b
    root = math.sqrt(max(qb * qb - 4.0 * qa * qc, 0.0))
    lo, hi = (-qb - root) / (2.0 * qa), (-qb + root) / (2.0 * qa)
    return min(1.0, max(0.0, lo)), min(1.0, max(0.0, hi))


def _inputs(
    y_labelled: ArrayLike, f_labelled: ArrayLike, f_unlabelled: ArrayLike, alpha: float
) -> tuple[Arr, Arr, Arr]:
    y = _vector(y_labelled, "y_labelled")
    f = _vector(f_labelled, "f_labelled")
    u = _vector(f_unlabelled, "f_unlabelled")
    if not np.all((y == 0.0) | (y == 1.0)):
        raise ValueError("y_labelled must hold only 0 and 1 (the judge's label is the class)")
    if len(y) != len(f):
        raise ValueError(
            f"y_labelled has {len(y)} values and f_labelled {len(f)}; give one score per label"
        )
    if len(y) == 0:
        raise ValueError("no labelled responses: judge a random sample first")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha}")
    return (y, *on_share_scale(f, u))


def on_share_scale(f: Arr, u: Arr) -> tuple[Arr, Arr]:
    """Scores in [0, 1] as given; any other scores replaced by their mid-rank among all ``N``
    (labelled and unlabelled), rescaled to [0, 1] (see the module docstring: a score's heavy
    tail or a huge value would otherwise rule ``lambda`` and the variance)."""
    every = np.concatenate([f, u])
    if every.size == 0 or (every.min() >= 0.0 and every.max() <= 1.0):
        return f, u
    from scipy.stats import rankdata  # scipy costs ~0.3 s to import: only when needed

    ranks = rankdata(every, method="average")
    span = float(ranks.max() - ranks.min())
    scaled = (ranks - ranks.min()) / span if span > 0 else np.zeros_like(ranks)
    return scaled[: len(f)], scaled[len(f) :]


def prediction_powered_share(
    y_labelled: ArrayLike,
    f_labelled: ArrayLike,
    f_unlabelled: ArrayLike,
    *,
    alpha: float = 0.05,
) -> PredictionPoweredShare:
    """The judge's share over every response (labelled and unlabelled), from the judge's
    0/1 labels ``y_labelled`` on a simple random sample, the scorer's scores ``f_labelled`` of
    the same responses (same order) and ``f_unlabelled`` of the rest; a ``1 - alpha``
    interval. See the module docstring for the method and its tested coverage."""
    y, f, u = _inputs(y_labelled, f_labelled, f_unlabelled, alpha)
    n, total = len(y), len(y) + len(u)
    positives = int(y.sum())
    if len(u) == 0:  # everything judged: the share is known exactly
        share = positives / n
        return PredictionPoweredShare(share, share, share, 0.0, n, total, positives, alpha)
    every = np.concatenate([f, u])
    lam = _tuned_lambda(y, f)
    estimate = lam * float(every.mean()) + float(np.mean(y - lam * f))
    clipped = min(1.0, max(0.0, estimate))
    lo, hi = _score_interval(clipped, y, f, every, lam, alpha)
    return PredictionPoweredShare(
        clipped, min(lo, clipped), max(hi, clipped), lam, n, total, positives, alpha
    )


def stratified_prediction_powered_share(
    y_labelled: ArrayLike,
    f_labelled: ArrayLike,
    f_unlabelled: ArrayLike,
    strata_labelled: Sequence[str],
    strata_unlabelled: Sequence[str],
    *,
    populations: Mapping[str, int] | None = None,
    alpha: float = 0.05,
) -> PredictionPoweredShare:
    """As :func:`prediction_powered_share`, for a sample stratified by ``strata_*`` (each
    labelled and unlabelled response's stratum, e.g. its dimension) and drawn at random within
    each stratum: the estimate is ``sum_h W_h theta_h``, each stratum's difference estimate
    weighted by its share of the population ``W_h = N_h / N``. ``populations`` (stratum ->
    ``N_h``) are the weights the sample's design recorded; by default, the counts of the
    responses given. Every stratum needs at least one labelled response, and the allocation
    must be proportional (each stratum's labelled within 1.5 members or 10% of its share of
    the sample); anything else is refused with the stratum named.

    ``lambda`` is tuned once on the pooled sample. The interval is the simple random sample's
    score interval around this estimate: with proportional allocation (the design of
    ``intima judge --sample N --stratify``) the stratified estimator's variance is at most the
    simple random sample's, up to terms of order 1/N_h (Cochran 1977, section 5.6), so the
    interval errs wide: it gains nothing from the strata, and ``benchmarks/bench_ppi.py``
    checks its coverage with strata of unequal shares and the rounding of small strata."""
    y, f, u = _inputs(y_labelled, f_labelled, f_unlabelled, alpha)
    if len(strata_labelled) != len(y) or len(strata_unlabelled) != len(u):
        raise ValueError("give one stratum per labelled and per unlabelled response")
    names, codes = np.unique(
        np.asarray([*strata_labelled, *strata_unlabelled], dtype=str), return_inverse=True
    )
    cl, cu = codes[: len(y)], codes[len(y) :]
    counts = dict(zip(names.tolist(), np.bincount(codes).tolist(), strict=True))
    sizes = dict(populations) if populations is not None else counts
    if set(sizes) != set(counts):
        raise ValueError(
            f"the strata weights name {sorted(sizes)} but the responses fall in "
            f"{sorted(counts)}; record one positive population per stratum"
        )
    for h, v in sorted(sizes.items()):
        if not v > 0:
            raise ValueError(f"stratum {h!r} has a population of {v}; give it a positive one")
    labelled = np.bincount(cl, minlength=len(names))
    if not labelled.all():
        empty = str(names[int(np.argmin(labelled))])
        raise ValueError(f"stratum {empty!r} has no labelled response; judge one in each")
    _require_proportional(names, labelled, np.array([sizes[h] for h in names.tolist()], float))
    n, total, positives = len(y), len(y) + len(u), int(y.sum())
    if len(u) == 0:
        share = positives / n
        return PredictionPoweredShare(share, share, share, 0.0, n, total, positives, alpha)
    lam = _tuned_lambda(y, f)
    # theta_h = lam * mean(f over stratum h) + mean(y - lam f over its labelled), weighted
    f_sum = np.bincount(cl, weights=f, minlength=len(names)) + np.bincount(
        cu, weights=u, minlength=len(names)
    )
    e_sum = np.bincount(cl, weights=y - lam * f, minlength=len(names))
    theta = lam * f_sum / np.bincount(codes, minlength=len(names)) + e_sum / labelled
    weights = np.array([sizes[h] for h in names.tolist()], dtype=np.float64)
    estimate = float(weights @ theta / weights.sum())
    clipped = min(1.0, max(0.0, estimate))
    lo, hi = _score_interval(clipped, y, f, np.concatenate([f, u]), lam, alpha)
    return PredictionPoweredShare(
        clipped, min(lo, clipped), max(hi, clipped), lam, n, total, positives, alpha
    )


def _require_proportional(names: NDArray[np.str_], labelled: NDArray[np.int64], sizes: Arr) -> None:
    """Refuse an allocation that is not proportional: the interval (the simple random
    sample's) errs wide only when each stratum holds its share of the sample. Allowed: the
    rounding of ``intima judge --sample N --stratify`` (Sainte-Lague, within about one
    member of ``n N_h / N``), to 1.5 members or 10% of the stratum's share, whichever is
    larger (a variance under-stated by at most 1/0.9: coverage stays near 94%)."""
    expected = labelled.sum() * sizes / sizes.sum()
    off = np.abs(labelled - expected) > np.maximum(1.5, 0.1 * expected)
    if off.any():
        k = int(np.argmax(off))
        raise ValueError(
            f"stratum {str(names[k])!r} has {int(labelled[k])} labelled where a proportional "
            f"allocation gives {expected[k]:.1f}; the interval holds for a proportional "
            "allocation only (intima judge --sample N --stratify draws one)"
        )


def _score_interval(
    clipped: float, y: Arr, f: Arr, every: Arr, lam: float, alpha: float
) -> tuple[float, float]:
    """The score interval of the module docstring around ``clipped`` (the estimate clipped
    to [0, 1]: a raw estimate below 0, the sample's scores far above the rest's, would
    otherwise put the whole interval below 0, i.e. [0, 0])."""
    n, total = len(y), len(every)
    f_mean, f_var = float(every.mean()), float(every.var())
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    # Class moments of the scorer with z^2/2 pseudo-responses per class at the moments of all
    # scores: a class seen once or never in the sample claims no separation it has not shown.
    m = z * z / 2.0
    pos, neg = f[y == 1.0], f[y == 0.0]
    mu1 = (float(pos.sum()) + m * f_mean) / (len(pos) + m)
    mu0 = (float(neg.sum()) + m * f_mean) / (len(neg) + m)
    v1 = (float(((pos - mu1) ** 2).sum()) + m * f_var) / (len(pos) + m)
    v0 = (float(((neg - mu0) ** 2).sum()) + m * f_var) / (len(neg) + m)
    k = z * z * (1.0 - n / total) / n
    a, b, c = (1.0 - lam * (mu1 - mu0)) ** 2, lam * lam * v0, lam * lam * (v1 - v0)
    correction = 0.5 / n
    if clipped <= 0.5:
        return score_bounds(clipped - correction, k, a, b, c)[0], score_bounds(clipped, k, a, b, c)[
            1
        ]
    return score_bounds(clipped, k, a, b, c)[0], score_bounds(clipped + correction, k, a, b, c)[1]
