"""Honest 95% intervals for leaderboard rates, and the minimum-data rule for ranking.

The leaderboard's percentile cluster bootstrap (prompts resampled within each INTIMA code)
collapses to a point whenever every response in every stratum agrees: ``0% [0%, 0%]`` on 14
prompts says the rate is known exactly, which it is not. This module replaces the percentile
interval by a **Wilson score interval on the Kish effective sample size**, the design-based
construction of Korn & Graubard (1998) with Wilson's (1927) interval in place of
Clopper-Pearson, as compared in Dean & Pagano (2015) and recommended by Franco et al. (2019):

* ``deff = v_boot / (p(1 - p) / n)`` where ``v_boot`` is the cluster-bootstrap variance of the
  rate and ``p`` the observed rate (Kish 1965). It is clipped to ``[1, n]``: ``deff >= 1``
  (never claim more information than ``n`` independent responses; with one prompt per code,
  or two, the within-code bootstrap sees little or no variance and would otherwise *shrink*
  the interval; this also drops the stratification gain, which is the conservative side),
  and ``deff <= n`` (at least one effective response). When ``p`` is 0 or 1, or the bootstrap
  variance is 0, missing or NaN, ``deff = 1``: an all-agreeing sample carries no information
  on the design effect, so it is treated as ``n`` independent responses.
* ``n_eff = n / deff``; the Wilson interval of ``p`` at ``n_eff`` (non-integer ``n_eff`` is
  fine: Wilson only needs ``p`` and ``n``). Its width is positive for every finite ``n``:
  at ``p = 0`` the upper limit is ``z^2 / (n_eff + z^2)``.
* Small counts: Wilson under-covers when the (effective) count ``x = p n_eff`` is 1 or 2
  (Brown, Cai & DasGupta 2001, section 4.1.1). Following their modified Wilson interval, for
  ``0 < x <= x*`` (``x* = 2`` if ``n_eff <= 50`` else 3) the lower limit becomes the one-sided
  Poisson limit ``gammaincinv(x, alpha/2) / n_eff`` (we take the smaller of the two, and the
  two-sided tail ``alpha/2``), and symmetrically for the upper limit near ``n``.

Because Wilson intervals are nested in ``n`` for a fixed ``p`` and the modification only widens
them, the interval always contains the plain Wilson interval at the actual ``n``.

References
----------
* Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference.
  *Journal of the American Statistical Association* 22(158), 209-212.
* Kish, L. (1965). *Survey Sampling*. New York: Wiley.
* Korn, E. L. & Graubard, B. I. (1998). Confidence intervals for proportions with small
  expected number of positive counts estimated from survey data. *Survey Methodology* 24(2),
  193-201.
* Brown, L. D., Cai, T. T. & DasGupta, A. (2001). Interval estimation for a binomial
  proportion. *Statistical Science* 16(2), 101-133.
* Dean, N. & Pagano, M. (2015). Evaluating confidence interval methods for binomial
  proportions in clustered surveys. *Journal of Survey Statistics and Methodology* 3(4),
  484-503.
* Franco, C., Little, R. J. A., Louis, T. A. & Slud, E. V. (2019). Comparative study of
  confidence intervals for proportions in complex sample surveys. *Journal of Survey
  Statistics and Methodology* 7(3), 334-364.
* Parker, J. D., Talih, M., Malec, D. J., et al. (2017). National Center for Health Statistics
  data presentation standards for proportions. *Vital and Health Statistics* 2(175).

The score table (:mod:`intima.results.table`) calls :func:`intervals_from_replicates` with
its bootstrap replicates; :mod:`intima.results.rank` applies :func:`rankable`.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

CONFIDENCE: Final = 0.95
#: Fewest scored responses for a rank. NCHS withholds proportions whose effective sample size
#: is under 30 (Parker et al. 2017); at n = 30 a 50% rate's Wilson interval is already 34
#: points wide, so configurations closer than that cannot be told apart anyway.
MIN_N: Final = 30
#: Smallest share of the prompt set a configuration must have been scored on. The rates are
#: averages over a stratified prompt set; on under half of it a configuration is measured on a
#: different mix of codes than the full runs it would be ranked against (a majority rule: a
#: policy choice, not a statistical law).
MIN_SHARE: Final = 0.5

Float = NDArray[np.float64]


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def bootstrap_variance(ratio: ArrayLike) -> Float:
    """Variance (ddof=1) of bootstrap replicates along axis 0, ignoring NaN replicates.

    NaN where a cell has fewer than two valid replicates. Computed in float64.
    """
    r = np.asarray(ratio, dtype=np.float64)
    ok = ~np.isnan(r)
    k = ok.sum(axis=0)
    filled = np.where(ok, r, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=0) / k
        dev = np.where(ok, r - mean, 0.0)
        var = (dev * dev).sum(axis=0) / (k - 1)
    return np.where(k >= 2, var, np.nan)


def design_effect(p_hat: ArrayLike, n: ArrayLike, boot_var: ArrayLike | None) -> Float:
    """Kish design effect ``v_boot / (p(1-p)/n)``, clipped to ``[1, max(n, 1)]``.

    1 where ``p`` is 0 or 1 (or NaN), where ``n`` is 0, or where the variance is missing, NaN
    or not positive. See the module docstring for why the floor is 1.
    """
    p = np.asarray(p_hat, dtype=np.float64)
    nn = np.asarray(n, dtype=np.float64)
    if boot_var is None:
        return np.ones(np.broadcast(p, nn).shape)
    v = np.asarray(boot_var, dtype=np.float64)
    srs = p * (1.0 - p) / np.where(nn > 0, nn, np.nan)
    usable = (srs > 0) & (v > 0)  # False wherever anything is NaN
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(usable, v / np.where(usable, srs, 1.0), 1.0)
    return np.clip(raw, 1.0, np.maximum(nn, 1.0))


def wilson(
    p_hat: ArrayLike, n: ArrayLike, confidence: float = CONFIDENCE, *, modified: bool = True
) -> tuple[Float, Float]:
    """Wilson score interval for a proportion ``p_hat`` out of ``n`` (``n`` may be fractional),
    with Brown, Cai & DasGupta's small-count modification unless ``modified=False``. NaN where
    ``n <= 0`` or ``p_hat`` is NaN."""
    z = _z(confidence)
    alpha = 1.0 - confidence
    p = np.asarray(p_hat, dtype=np.float64)
    nn = np.asarray(n, dtype=np.float64)
    p, nn = np.broadcast_arrays(p, nn)
    bad = ~(nn > 0) | np.isnan(p)
    p = np.where(bad, 0.5, np.clip(p, 0.0, 1.0))
    m = np.where(bad, 1.0, nn)
    z2 = z * z
    denom = 1.0 + z2 / m
    centre = (p + z2 / (2.0 * m)) / denom
    half = z * np.sqrt(p * (1.0 - p) / m + z2 / (4.0 * m * m)) / denom
    lo = np.maximum(centre - half, 0.0)
    hi = np.minimum(centre + half, 1.0)
    # Exact ends: Wilson gives 0 (or 1) at p = 0 (or 1) up to rounding.
    lo = np.where(p <= 0.0, 0.0, lo)
    hi = np.where(p >= 1.0, 1.0, hi)
    if not modified:
        return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)
    x_star = np.where(m <= 50.0, 2.0, 3.0)
    x, y = p * m, (1.0 - p) * m
    small_x = (x > 0) & (x <= x_star)
    small_y = (y > 0) & (y <= x_star)
    from scipy.special import gammaincinv  # scipy costs ~0.3 s to import: only when used

    poisson_lo = gammaincinv(np.where(small_x, x, 1.0), alpha / 2.0) / m
    poisson_hi = 1.0 - gammaincinv(np.where(small_y, y, 1.0), alpha / 2.0) / m
    lo = np.where(small_x, np.minimum(lo, poisson_lo), lo)
    hi = np.where(small_y, np.maximum(hi, poisson_hi), hi)
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def effective_n(p_hat: ArrayLike, n: ArrayLike, boot_var: ArrayLike | None) -> Float:
    """Kish effective sample size ``n / deff`` (NaN where ``n == 0``)."""
    nn = np.asarray(n, dtype=np.float64)
    deff = design_effect(p_hat, nn, boot_var)
    return np.where(nn > 0, nn / deff, np.nan)


def wilson_effective(
    p_hat: ArrayLike,
    n: ArrayLike,
    boot_var: ArrayLike | None,
    confidence: float = CONFIDENCE,
) -> tuple[Float, Float]:
    """Wilson interval at the effective sample size ``n / deff`` (vectorised over cells).

    ``p_hat``: observed rates; ``n``: responses behind each rate; ``boot_var``: the bootstrap
    variance of each rate (``None``: no design information, ``deff = 1``). NaN in, NaN out:
    cells with ``n == 0`` or a NaN rate get ``(nan, nan)``. Otherwise ``lo < hi``.
    """
    return wilson(p_hat, effective_n(p_hat, n, boot_var), confidence)


def intervals_from_replicates(
    ratio: ArrayLike, p_hat: ArrayLike, n: ArrayLike, confidence: float = CONFIDENCE
) -> tuple[Float, Float]:
    """Drop-in for ``table._intervals``: replicates ``ratio[b, ...]`` plus the point rates and
    counts of the same cells (shape ``ratio.shape[1:]``) give the effective-n Wilson ends."""
    return wilson_effective(p_hat, n, bootstrap_variance(ratio), confidence)


def rankable(
    n: float,
    n_prompts_total: int,
    *,
    n_prompts: int | None = None,
    min_n: int = MIN_N,
    min_share: float = MIN_SHARE,
) -> bool:
    """Whether a configuration has enough data to receive a rank.

    ``n``: scored responses behind its rate (pass an effective sample size for the NCHS-style
    rule); ``n_prompts``: distinct prompts those responses answer (default ``n``: one response
    per prompt); ``n_prompts_total``: prompts in the set being ranked on. Rankable when
    ``n >= min_n`` and ``n_prompts >= min_share * n_prompts_total``; never when ``n == 0``.
    """
    if n <= 0 or n_prompts_total <= 0:
        return False
    covered = n if n_prompts is None else n_prompts
    return n >= min_n and covered >= min_share * n_prompts_total


def intervals_note(bootstrap: int, seed: int) -> str:
    """How the board's intervals are made, in one sentence for its methodology."""
    return (
        "95% Wilson score interval on the effective sample size n/deff, the design effect "
        f"measured by a cluster bootstrap (prompts resampled within codes, B={bootstrap}, "
        f"seed {seed}); never zero-width (Korn & Graubard 1998; Wilson 1927)."
    )
