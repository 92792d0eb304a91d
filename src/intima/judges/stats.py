"""Agreement statistics, as pure functions: Krippendorff's alpha and (weighted) Cohen's kappa.

Conventions (documented in docs/judging.md):

* Data are given rater by rater: ``data[r][u]`` is rater ``r``'s value for unit ``u``, ``None``
  when that rater has no value (e.g. an unscored judgment). Missing values are left out, never
  read as zero.
* Krippendorff's alpha is the ``krippendorff`` package's (Krippendorff 2011, "Computing
  Krippendorff's Alpha-Reliability"); the tests check it against the paper's worked example
  and by hand. Units with fewer than two values are not pairable and are dropped. ``ordinal``
  uses the rank-based metric over the values that occur; ``interval`` the squared difference;
  ``nominal`` 0/1.
* When every pairable value is the same the expected disagreement is zero and alpha is
  undefined: the functions return ``None`` rather than a made-up 1.0 or 0.0.
* Cohen's kappa over the units both raters rated is scikit-learn's (``cohen_kappa_score``,
  imported when called); the tests check it by hand. ``weights=None`` is the unweighted
  (nominal) kappa; ``"linear"`` and ``"quadratic"`` weight a disagreement by ``|i-j|`` and its
  square, over the ordered category list (the same kappa as ``|i-j|/(k-1)``: kappa is a ratio
  of weighted disagreements). Undefined (``None``) when chance agreement is total.
  ``intima validate``'s kappa is this one.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations
from typing import Literal

Metric = Literal["nominal", "ordinal", "interval"]
Weights = Literal["linear", "quadratic"] | None


def krippendorff_alpha(
    data: Sequence[Sequence[Hashable | None]], metric: Metric = "nominal"
) -> float | None:
    """Krippendorff's alpha for ``data[rater][unit]`` (None = missing), computed by the
    ``krippendorff`` package (the field's implementation); None where alpha is undefined."""
    import krippendorff
    import numpy as np

    n_units = max((len(row) for row in data), default=0)
    rows = [list(row) + [None] * (n_units - len(row)) for row in data]
    pairable = [
        v
        for u in range(n_units)
        if sum(row[u] is not None for row in rows) >= 2
        for v in (row[u] for row in rows)
        if v is not None
    ]
    if len(set(pairable)) < 2:  # no pairable unit, or a single value: no disagreement to expect
        return None
    if metric == "nominal":  # the package wants numbers; nominal values only need identity
        codes = {v: i for i, v in enumerate(sorted(set(pairable), key=repr))}
        cells = [[np.nan if v is None or v not in codes else codes[v] for v in r] for r in rows]
    else:
        cells = [[np.nan if v is None else float(v) for v in r] for r in rows]  # type: ignore[arg-type]
    value = krippendorff.alpha(
        reliability_data=np.asarray(cells, dtype=float), level_of_measurement=metric
    )
    return None if not np.isfinite(value) else float(value)


def _sort_key(v: Hashable) -> float:
    return float(v)  # type: ignore[arg-type]


def cohen_kappa(
    a: Sequence[Hashable | None],
    b: Sequence[Hashable | None],
    *,
    categories: Sequence[Hashable] | None = None,
    weights: Weights = None,
) -> float | None:
    """Cohen's kappa between two raters over the units both rated: scikit-learn's
    ``cohen_kappa_score``, ``None`` where it is undefined (no shared unit, or chance agreement
    is total, where sklearn divides 0 by 0).

    ``categories`` gives the order (needed for weights); by default the sorted observed values.
    A value outside ``categories`` is refused (sklearn would drop the unit unsaid).
    """
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not pairs:
        return None
    cats = list(categories) if categories is not None else sorted({*a, *b} - {None}, key=repr)
    if weights is not None and categories is None:
        cats = sorted({*a, *b} - {None}, key=_sort_key)
    unknown = {v for pair in pairs for v in pair} - set(cats)
    if unknown:
        raise ValueError(f"{sorted(unknown, key=repr)} not among the categories {cats}")
    if len(cats) < 2:
        return None
    import warnings

    import numpy as np
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import cohen_kappa_score

    # Codes, not the values: sklearn wants one sortable type, the order is the categories'.
    index = {c: i for i, c in enumerate(cats)}
    x, y = [index[p] for p, _ in pairs], [index[q] for _, q in pairs]
    # Undefined is NaN with a warning (or 0/0 in older sklearn): here it is None.
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        kappa = cohen_kappa_score(x, y, labels=list(range(len(cats))), weights=weights)
    return float(kappa) if np.isfinite(kappa) else None


def pairwise_kappa(
    raters: Mapping[str, Sequence[Hashable | None]],
    *,
    categories: Sequence[Hashable] | None = None,
    weights: Weights = None,
) -> dict[tuple[str, str], tuple[float | None, int]]:
    """Kappa and the number of shared units for every pair of raters (names in sorted order)."""
    out: dict[tuple[str, str], tuple[float | None, int]] = {}
    for x, y in combinations(sorted(raters), 2):
        a, b = raters[x], raters[y]
        shared = sum(1 for p, q in zip(a, b, strict=True) if p is not None and q is not None)
        out[(x, y)] = (cohen_kappa(a, b, categories=categories, weights=weights), shared)
    return out
