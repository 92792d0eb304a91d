"""The leaderboard's numbers: a pure table layer (plain inputs in, score rows out, no UI).

Inputs are the responses (which configuration answered which prompt, of which code and
dimension) and any number of :class:`~intima.core.ratings.RatingSet` objects. Output is one
:class:`ScoreRow` per (scorer, configuration, scope, metric), where a scope is ``overall``,
one dimension, or one code.

* A *label* metric (``reinforcing``, ``boundary``, ``neutral``, ``mixed``, ``no_majority``) is
  the share of scored responses whose primary label is that label; the five sum to 1.
* A *category* metric (each top-level behaviour and each sub-behaviour) is the share of scored
  responses where the category *shows* (medium or high).
* ``n`` is the number of scored responses behind the rate; ``n_unscored`` the responses the
  scorer tried but could not score, ``n_missing`` the responses it never rated. Neither is
  folded into the rate as zeros.
* The 95% interval is a Wilson score interval on the effective sample size (see
  :mod:`intima.results.intervals`): a cluster bootstrap (prompts resampled with replacement
  within each code, the same resample for every configuration and scorer, ``B`` replicates,
  seeded) measures the design effect, and Wilson's interval at ``n / deff`` never has zero
  width when ``n`` is finite (a percentile bootstrap gave ``0% [0%, 0%]`` whenever every
  response of a stratum agreed).
* Ranks and ties: see :mod:`intima.results.rank`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from intima.core.ratings import Primary, RatingSet, primary_label
from intima.core.taxonomy import CATEGORIES, Behaviour, Dimension
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.results.intervals import intervals_from_replicates

#: Primary labels, as metric names: reinforcing, boundary, neutral, mixed, no_majority.
LABEL_METRICS: Final = tuple(str(p) for p in Primary)
METRICS: Final = LABEL_METRICS + CATEGORIES
#: Scorers that combine several raters (the judges' panel, several people), the only ones whose
#: primary label can be ``no_majority``.
COMBINED_SCORERS: Final = ("panel", "human")
OVERALL: Final = "overall"
DIMENSIONS: Final = tuple(str(d) for d in Dimension)
CONFIDENCE: Final = 0.95
_TOP_LEVEL: Final = tuple(str(b) for b in Behaviour)


def label_metrics_of(scorer: str) -> tuple[str, ...]:
    """The label metrics ``scorer`` can give: ``no_majority`` only for a combined scorer
    (:data:`COMBINED_SCORERS`); for one judge or the affect measure it is always 0."""
    if scorer in COMBINED_SCORERS:
        return LABEL_METRICS
    return tuple(m for m in LABEL_METRICS if m != str(Primary.NO_MAJORITY))


class Placed(Protocol):
    """What the table reads of a response (a :class:`~intima.store.StoredResponse`): which
    configuration answered which prompt, of which code and dimension. Text is not needed."""

    @property
    def response_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def prompt_id(self) -> str: ...
    @property
    def code(self) -> str: ...
    @property
    def dimension(self) -> str: ...


class ScoreRow(NamedTuple):
    scorer: str
    run_id: str
    label: str
    scope: str  # "overall", a dimension name, or "code:<code>"
    metric: str
    rate: float | None  # None when n == 0
    lo: float | None
    hi: float | None
    n: int
    n_unscored: int
    n_missing: int
    n_scope: int = 0  # prompts of this scope on the board: the base of the coverage rule


@dataclass(frozen=True)
class ScoreTable:
    rows: tuple[ScoreRow, ...]
    scorers: tuple[str, ...]
    configs: tuple[tuple[str, str], ...]  # (run_id, label) in input order
    bootstrap: int
    seed: int
    codes: tuple[str, ...] = ()
    _index: dict[tuple[str, str, str, str], ScoreRow] = field(default_factory=dict, repr=False)

    def get(self, scorer: str, run_id: str, scope: str, metric: str) -> ScoreRow:
        if not self._index:
            self._index.update({(r.scorer, r.run_id, r.scope, r.metric): r for r in self.rows})
        return self._index[(scorer, run_id, scope, metric)]


def code_scope(code: str) -> str:
    return f"code:{code}"


_N_NUM: Final = len(METRICS)
_N_DEN: Final = 1 + len(CATEGORIES)
_N_COL: Final = _N_NUM + _N_DEN

# -- per-response indicators ---------------------------------------------------------------


def label_of(rs: RatingSet) -> str | None:
    """A response's primary label under one scorer: the stored one, else the rule applied to
    its behaviour levels; None when the scorer rated only some categories."""
    if rs.primary is not None:
        return str(rs.primary)
    if all(c in rs.levels for c in _TOP_LEVEL):
        return str(primary_label(rs.levels))
    return None  # a scorer that rates only some categories has no primary label


def _indicators(sets: Sequence[RatingSet]) -> NDArray[np.float32]:
    """Per scored set: numerators (one per metric) then denominators (one for the labels,
    one per category, because a scorer may rate only some categories)."""
    out = np.zeros((len(sets), _N_COL), dtype=np.float32)
    label_col = {lbl: i for i, lbl in enumerate(LABEL_METRICS)}
    levels = np.full((len(sets), len(CATEGORIES)), -1, dtype=np.int8)
    for i, rs in enumerate(sets):
        label = label_of(rs)
        if label is not None:
            out[i, label_col[label]] = 1
            out[i, _N_NUM] = 1
        lv = rs.levels
        levels[i] = [-1 if (v := lv.get(cat)) is None else int(v) for cat in CATEGORIES]
    n_lab = len(LABEL_METRICS)
    out[:, n_lab:_N_NUM] = levels >= 1
    out[:, _N_NUM + 1 :] = levels >= 0
    return out


# -- the bootstrap ----------------------------------------------------------------------------


def bootstrap_weights(
    code_of_prompt: Sequence[str], b: int, seed: int
) -> tuple[NDArray[np.float32], list[str], dict[str, NDArray[np.intp]]]:
    """Counts W[b, p]: how often prompt p is drawn in replicate b, resampling within codes.

    Returns W, the codes in order, and each code's prompt indices.
    """
    rng = np.random.default_rng(seed)
    n_p = len(code_of_prompt)
    weights = np.zeros((b, n_p), dtype=np.float32)
    codes = sorted(set(code_of_prompt))
    members: dict[str, NDArray[np.intp]] = {}
    codes_arr = np.asarray(code_of_prompt, dtype=object)
    for code in codes:
        idx = np.flatnonzero(codes_arr == code)
        members[code] = idx
        k = len(idx)
        draws = rng.integers(0, k, size=(b, k))
        flat = draws + (np.arange(b)[:, None] * k)
        counts = np.bincount(flat.ravel(), minlength=b * k).reshape(b, k)
        weights[:, idx] = counts
    return weights, codes, members


def _ratio(block: NDArray[np.float32]) -> NDArray[np.float32]:
    """num/den for every metric of a (..., configs, _N_COL) block; NaN where den is 0."""
    n_lab = len(LABEL_METRICS)
    num = block[..., :_N_NUM]
    out = np.empty(num.shape, dtype=np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        np.divide(num[..., :n_lab], block[..., _N_NUM : _N_NUM + 1], out=out[..., :n_lab])
        np.divide(num[..., n_lab:], block[..., _N_NUM + 1 :], out=out[..., n_lab:])
    return out


# -- the table ----------------------------------------------------------------------------------


def score_table(
    responses: Sequence[Placed],
    rating_sets: Iterable[RatingSet],
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    per_code: bool = True,
    cubes: dict[str, NDArray[np.float32]] | None = None,
) -> ScoreTable:
    """Every scorer's rates with 95% Wilson intervals on the effective sample size (design
    effect from a seeded cluster bootstrap); see the module docstring. ``cubes``: filled with
    each scorer's :func:`indicator_cube` (for :class:`intima.results.paired.PairedBoard`)."""
    if bootstrap < 1:
        raise ValueError("bootstrap must be at least 1")
    lay = board_layout(responses, rating_sets)
    prompt_codes = [lay.code_of[p] for p in lay.p_index]
    weights, codes, members = bootstrap_weights(prompt_codes, bootstrap, seed)
    rows: list[ScoreRow] = []
    for scorer in lay.scorers:
        rows.extend(_score_one(scorer, lay, responses, weights, codes, members, per_code, cubes))
    return ScoreTable(
        rows=tuple(rows),
        scorers=tuple(lay.scorers),
        configs=tuple(lay.configs),
        bootstrap=bootstrap,
        seed=seed,
        codes=tuple(codes),
    )


class Layout(NamedTuple):
    """Who answered what on a board: configurations, prompts (each prompt's position in the
    bootstrap weights), codes, and each scorer's rating sets of the board's responses."""

    configs: list[tuple[str, str]]  # (run_id, label) in input order
    p_index: dict[str, int]
    c_index: dict[str, int]
    code_of: dict[str, str]
    dim_of_code: dict[str, str]
    by_response: dict[str, list[Placed]]
    grouped: dict[str, list[RatingSet]]
    scorers: list[str]


def board_layout(responses: Sequence[Placed], rating_sets: Iterable[RatingSet]) -> Layout:
    """The layout :func:`score_table` and :mod:`intima.results.paired` both start from, so
    both draw the same prompts in every bootstrap replicate."""
    configs = list(dict.fromkeys((r.run_id, r.label) for r in responses))
    prompt_ids = list(dict.fromkeys(r.prompt_id for r in responses))
    p_index = {p: i for i, p in enumerate(prompt_ids)}
    code_of: dict[str, str] = {}
    dim_of_code: dict[str, str] = {}
    for r in responses:
        code_of.setdefault(r.prompt_id, r.code)
        dim_of_code.setdefault(r.code, r.dimension)
    # One response (same configuration, same prompt) can belong to several runs, e.g. a run
    # on 6 prompts and a longer run of the same configuration: it counts in each of them.
    by_response: dict[str, list[Placed]] = {}
    for r in responses:
        by_response.setdefault(r.response_id, []).append(r)
    c_index = {run_id: i for i, (run_id, _) in enumerate(configs)}

    grouped: dict[str, list[RatingSet]] = {}
    for rs in rating_sets:
        if rs.response_id in by_response:
            grouped.setdefault(rs.scorer, []).append(rs)
    scorers = sorted(grouped, key=_scorer_order)
    return Layout(configs, p_index, c_index, code_of, dim_of_code, by_response, grouped, scorers)


def _scorer_order(scorer: str) -> tuple[int, str]:
    """Judges first, then the panel, humans, the affect measure, anything else."""
    kinds = ("judge:", "panel", "human", "affect")
    for i, kind in enumerate(kinds):
        if scorer.startswith(kind):
            return i, scorer
    return len(kinds), scorer


def _score_one(
    scorer: str,
    lay: Layout,
    responses: Sequence[Placed],
    weights: NDArray[np.float32],
    codes: list[str],
    members: Mapping[str, NDArray[np.intp]],
    per_code: bool,
    cubes: dict[str, NDArray[np.float32]] | None,
) -> list[ScoreRow]:
    configs, dim_of_code = lay.configs, lay.dim_of_code
    n_c, n_p = len(configs), len(lay.p_index)
    x, unscored, missing = indicator_cube(
        lay.grouped[scorer], responses, lay.by_response, lay.c_index, lay.p_index
    )
    if cubes is not None:
        cubes[scorer] = x
    flat = x.reshape(n_p, n_c * _N_COL)
    scope_codes: dict[str, list[str]] = {OVERALL: codes}
    for code in codes:
        scope_codes.setdefault(dim_of_code[code], []).append(code)
    boot: dict[str, NDArray[np.float32]] = {}
    point: dict[str, NDArray[np.float32]] = {}
    out: list[ScoreRow] = []
    # Blocks of prompts multiplied at once: one per code when per-code rows are wanted, else
    # one per dimension (fewer, larger products). Each block is added into its dimension so
    # that only a handful of (B, cells) arrays are alive; overall is the sum of dimensions.
    blocks = [[c] for c in codes] if per_code else [scope_codes[d] for d in dims_in(scope_codes)]
    for block in blocks:
        idx = np.concatenate([members[c] for c in block])
        b_blk = weights[:, idx] @ flat[idx]  # (B, n_c * _N_COL): paired across configs
        p_blk = flat[idx].sum(axis=0)
        if per_code:
            out += _rows(
                scorer,
                code_scope(block[0]),
                configs,
                b_blk,
                p_blk,
                unscored[idx].sum(axis=0),
                missing[idx].sum(axis=0),
                len(idx),
            )
        dim = dim_of_code[block[0]]
        if dim in boot:
            boot[dim] += b_blk
            point[dim] += p_blk
        else:
            boot[dim], point[dim] = b_blk, p_blk
    boot[OVERALL] = np.sum(list(boot.values()), axis=0)
    point[OVERALL] = np.sum(list(point.values()), axis=0)
    scope_names = [OVERALL, *dims_in(scope_codes)]
    head: list[ScoreRow] = []
    for scope in scope_names:
        idx = np.concatenate([members[c] for c in scope_codes[scope]])
        head += _rows(
            scorer,
            scope,
            configs,
            boot[scope],
            point[scope],
            unscored[idx].sum(axis=0),
            missing[idx].sum(axis=0),
            len(idx),
        )
    return head + out


def indicator_cube(
    sets: Sequence[RatingSet],
    responses: Sequence[Placed],
    by_response: Mapping[str, list[Placed]],
    c_index: Mapping[str, int],
    p_index: Mapping[str, int],
) -> tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.int64]]:
    """One scorer's ``X[p, c, :]`` (numerators then denominators of configuration c's
    response to prompt p; zero where it has none), and its unscored and never-rated counts
    per (prompt, configuration). The score table and the paired comparisons
    (:mod:`intima.results.paired`) both multiply it by the same bootstrap weights."""
    n_c, n_p = len(c_index), len(p_index)
    # X[p, c, :] = numerators and denominators of config c's response(s) to prompt p.
    x = np.zeros((n_p, n_c, _N_COL), dtype=np.float32)
    unscored = np.zeros((n_p, n_c), dtype=np.int64)
    rated = np.zeros((n_p, n_c), dtype=np.int64)
    seen: set[str] = set()
    first: list[RatingSet] = []
    for rs in sets:
        if rs.response_id not in seen:  # one rating set per response and scorer: first wins
            seen.add(rs.response_id)
            first.append(rs)
    pos: list[tuple[int, int]] = []
    owner: list[int] = []  # which rating set each (prompt, config) placement comes from
    for k, rs in enumerate(first):
        for info in by_response[rs.response_id]:
            pos.append((p_index[info.prompt_id], c_index[info.run_id]))
            owner.append(k)
    if first:
        pc = np.asarray(pos, dtype=np.intp)
        ks = np.asarray(owner, dtype=np.intp)
        np.add.at(rated, (pc[:, 0], pc[:, 1]), 1)
        ok = np.fromiter((rs.scored for rs in first), dtype=bool, count=len(first))[ks]
        np.add.at(unscored, (pc[~ok, 0], pc[~ok, 1]), 1)
        # Unscored sets have no levels and no label, so their indicator rows are all zero.
        np.add.at(x, (pc[ok, 0], pc[ok, 1]), _indicators(first)[ks[ok]])
    present = np.zeros((n_p, n_c), dtype=np.int64)
    for r in responses:
        present[p_index[r.prompt_id], c_index[r.run_id]] += 1
    return x, unscored, present - rated


def dims_in(scopes: Iterable[str]) -> list[str]:
    """The dimensions among ``scopes``, taxonomy order first (then any unknown, sorted)."""
    present = set(scopes) - {OVERALL}
    known = [d for d in DIMENSIONS if d in present]
    return known + sorted(present - set(known))


def _rows(
    scorer: str,
    scope: str,
    configs: list[tuple[str, str]],
    boot: NDArray[np.float32],
    point: NDArray[np.float32],
    unscored: NDArray[np.int64],
    missing: NDArray[np.int64],
    n_scope: int,
) -> list[ScoreRow]:
    n_c = len(configs)
    b3 = boot.reshape(boot.shape[0], n_c, _N_COL)
    p2 = point.reshape(n_c, _N_COL)
    den_of_metric = np.array([0] * len(LABEL_METRICS) + list(range(1, _N_DEN)))
    p_den = p2[:, _N_NUM + den_of_metric]
    rate = _ratio(p2)
    lo, hi = intervals_from_replicates(_ratio(b3), rate, p_den)
    # Plain Python lists: building ~100k rows from numpy scalars one by one is the slow part.
    rate_l, lo_l, hi_l, n_l = rate.tolist(), lo.tolist(), hi.tolist(), p_den.astype(int).tolist()
    uns_l, mis_l = unscored.tolist(), missing.tolist()
    rows = []
    for c, (run_id, label) in enumerate(configs):
        for m, metric in enumerate(METRICS):
            n = n_l[c][m]
            ok = n > 0
            rows.append(
                ScoreRow(
                    scorer,
                    run_id,
                    label,
                    scope,
                    metric,
                    rate_l[c][m] if ok else None,
                    lo_l[c][m] if ok else None,
                    hi_l[c][m] if ok else None,
                    n,
                    uns_l[c],
                    mis_l[c],
                    n_scope,
                )
            )
    return rows
