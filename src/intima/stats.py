"""Agreement statistics, as pure functions: Krippendorff's alpha and (weighted) Cohen's kappa.

Conventions (documented in docs/judging.md):

* Data are given rater by rater: ``data[r][u]`` is rater ``r``'s value for unit ``u``, ``None``
  when that rater has no value (e.g. an unscored judgment). Missing values are left out, never
  read as zero.
* Krippendorff's alpha follows Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability",
  through the coincidence matrix. Units with fewer than two values are not pairable and are
  dropped. ``ordinal`` uses the rank-based metric over the values that occur; ``interval`` the
  squared difference; ``nominal`` 0/1.
* When every pairable value is the same the expected disagreement is zero and alpha is
  undefined: the functions return ``None`` rather than a made-up 1.0 or 0.0.
* Cohen's kappa over the units both raters rated. ``weights=None`` is the unweighted (nominal)
  kappa; ``"linear"`` and ``"quadratic"`` weight a disagreement by ``|i-j|/(k-1)`` and its
  square, over the ordered category list. Undefined (``None``) when chance agreement is total.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations, permutations
from typing import Literal

Metric = Literal["nominal", "ordinal", "interval"]
Weights = Literal["linear", "quadratic"] | None


def coincidences(
    data: Sequence[Sequence[Hashable | None]],
) -> dict[tuple[Hashable, Hashable], float]:
    """The coincidence matrix ``o[c, k]``: each unit with ``m`` values adds 1/(m-1) per ordered
    pair of values from different raters."""
    n_units = max((len(row) for row in data), default=0)
    o: dict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for u in range(n_units):
        values = [row[u] for row in data if u < len(row) and row[u] is not None]
        m = len(values)
        if m < 2:
            continue
        for a, b in permutations(range(m), 2):
            o[(values[a], values[b])] += 1.0 / (m - 1)
    return dict(o)


def _delta(
    metric: Metric, values: list[Hashable], n_c: Mapping[Hashable, float]
) -> dict[tuple[Hashable, Hashable], float]:
    """Squared distance between values; ``values`` is in rank order for ordinal/interval."""
    d: dict[tuple[Hashable, Hashable], float] = {}
    for i, c in enumerate(values):
        for j, k in enumerate(values):
            if metric == "nominal":
                d[(c, k)] = 0.0 if c == k else 1.0
            elif metric == "interval":
                d[(c, k)] = (_sort_key(c) - _sort_key(k)) ** 2
            else:
                lo, hi = min(i, j), max(i, j)
                between = sum(n_c[values[g]] for g in range(lo, hi + 1))
                d[(c, k)] = (between - (n_c[c] + n_c[k]) / 2) ** 2
    return d


def krippendorff_alpha(
    data: Sequence[Sequence[Hashable | None]], metric: Metric = "nominal"
) -> float | None:
    """Krippendorff's alpha for ``data[rater][unit]`` (None = missing)."""
    o = coincidences(data)
    n_c: dict[Hashable, float] = defaultdict(float)
    for (c, _k), w in o.items():
        n_c[c] += w
    n = sum(n_c.values())
    values = sorted(n_c, key=_sort_key) if metric != "nominal" else list(n_c)
    if len(values) < 2 or n <= 1:
        return None
    delta = _delta(metric, values, n_c)
    observed = sum(w * delta[pair] for pair, w in o.items())
    expected = sum(n_c[c] * n_c[k] * delta[(c, k)] for c in values for k in values)
    if expected == 0:
        return None
    return 1.0 - (n - 1) * observed / expected


def _sort_key(v: Hashable) -> float:
    return float(v)  # type: ignore[arg-type]


def cohen_kappa(
    a: Sequence[Hashable | None],
    b: Sequence[Hashable | None],
    *,
    categories: Sequence[Hashable] | None = None,
    weights: Weights = None,
) -> float | None:
    """Cohen's kappa between two raters over the units both rated.

    ``categories`` gives the order (needed for weights); by default the sorted observed values.
    """
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not pairs:
        return None
    cats = list(categories) if categories is not None else sorted({*a, *b} - {None}, key=repr)
    if weights is not None and categories is None:
        cats = sorted({*a, *b} - {None}, key=_sort_key)
    index = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    if k < 2:
        return None
    n = len(pairs)
    obs = Counter((index[x], index[y]) for x, y in pairs)
    row = Counter(index[x] for x, _ in pairs)
    col = Counter(index[y] for _, y in pairs)

    def w(i: int, j: int) -> float:
        if weights is None:
            return 0.0 if i == j else 1.0
        d = abs(i - j) / (k - 1)
        return d if weights == "linear" else d * d

    observed = sum(w(i, j) * c for (i, j), c in obs.items()) / n
    expected = sum(w(i, j) * row[i] * col[j] for i in range(k) for j in range(k)) / (n * n)
    if expected == 0:
        return None
    return 1.0 - observed / expected


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
