"""Prediction-powered shares on the board: for each configuration with a judge's random sample
(``intima judge --sample``, ``intima annotate --design random``), the share the judge would
give all its responses, from the judge on the sample and a predictor on every response
(:mod:`intima.results.ppi`).

Only the recorded members of a random sample feed the estimator
(:class:`BoardSample`, from ``judgment_samples``): the same judge's verdicts on other
responses (judged by hand, or under another command) are left out, because a hand-picked set is
not a random sample and would bias the estimate.

**The predictor** (:func:`choose_predictor`), per configuration and sampled judge: the panel
(when every judge in it labelled every response), else an LLM judge (by name), that gave a
primary label to *every* response of the configuration and is not the sampled judge itself
(e.g. an LLM judge on all and people on a sample), else the affect measure. Any fixed scorer
on all responses keeps the estimate unbiased; a judge usually agrees with another judge, or
with people, better than the affect measure does, which narrows the interval. The row and
its label name the predictor.

A sample that is not a random sample of its configuration's answers (drawn before its run
was resumed, or of a smaller run of the configuration: :attr:`BoardSample.unused`) gives no
share; its rows say why and what to run.

Per configuration, scope (overall, each dimension) and label (reinforcing, boundary,
neutral): ``y`` is the judge's primary label (1 when it is the label; a member the judge left
unscored is not labelled); ``f`` is the predictor's primary-label indicator (0/1), except for
the affect measure's reinforcing share, where it is its continuous reinforcing measure. A
dimension's members are a simple random sample of that dimension's responses too
(conditionally on how many fell in it), so the same estimator applies.

A sample stratified by dimension (``intima judge --sample N --stratify``) is a simple random
sample within each dimension, so a dimension's row is estimated as above; its overall row
weighs each dimension's estimate by the dimension's recorded population
(:func:`intima.results.ppi.stratified_prediction_powered_share`) and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from intima.core.ratings import RatingSet
from intima.judges.samples import MIN_LABELLED as MIN_LABELLED
from intima.judges.samples import STRATIFIED_PROPORTIONAL, WEIGHABLE
from intima.results.ppi import (
    PredictionPoweredShare,
    prediction_powered_share,
    stratified_prediction_powered_share,
)
from intima.results.table import OVERALL, Placed, label_of

LABELS: Final = ("reinforcing", "boundary", "neutral")
#: The predictor when no judge covered a configuration: the affect measure.
PREDICTOR: Final = "affect"


@dataclass(frozen=True)
class BoardSample:
    """A judge's recorded random sample of one configuration: ``members`` in their order."""

    run_id: str
    judge: str  # the scorer's name on the board, e.g. "judge:Qwen3-8B"
    design: str
    seed: int
    size: int
    population: int
    members: tuple[str, ...]
    #: a stratified design's strata and their populations (the weights), else empty
    strata: tuple[tuple[str, int], ...] = ()
    #: why this sample feeds no share of its configuration, said in its rows (it was drawn
    #: before its run grew, or from a run with only part of the configuration's answers:
    #: a random sample of those, not of all); "" when it feeds one
    unused: str = ""


class PredictionRow(NamedTuple):
    judge: str
    predictor: str
    run_id: str
    scope: str
    metric: str
    estimate: float | None
    lo: float | None
    hi: float | None
    n_labelled: int
    n_total: int
    raw: float | None  # the predictor's own share of the label (its primary label)
    judge_share: float | None  # the judge's share on the sample alone
    note: str  # what the estimate is, or why there is none


def describe(judge: str, n_labelled: int, n_total: int, predictor: str = PREDICTOR) -> str:
    """ "as <judge> would label all 368, from 60 labelled and <predictor> on all"."""
    return (
        f"as {judge} would label all {n_total}, from {n_labelled} labelled and {predictor} on all"
    )


def choose_predictor(
    judge: str, run: Sequence[Placed], labels: Mapping[str, Mapping[str, str | None]]
) -> str:
    """The scorer that predicts ``judge``'s labels on ``run``: the panel, else an LLM judge
    (by name), with a primary label on every response of the run and other than ``judge``;
    else the affect measure (:data:`PREDICTOR`).

    The panel only when every LLM judge that rated any of the run rated all of it, and the
    sampled judge is not one of them: a panel that holds a judge only on its sample would be a
    different function on the labelled responses than on the rest, and the estimate biased.

    Only scorers on the board are candidates, and a board holds only trusted publishers' rows
    (an untrusted or unsigned bundle is refused on import: :mod:`intima.bundles.trust`), so a
    forged judge can never be the predictor; the row names the one chosen."""
    ids = [r.response_id for r in run]

    def full(name: str) -> bool:
        own = labels.get(name, {})
        return bool(ids) and all(own.get(i) is not None for i in ids)

    judges = sorted(s for s in labels if s.startswith("judge:"))
    present = [s for s in judges if any(i in labels[s] for i in ids)]
    if judge not in present and all(full(s) for s in present) and full("panel"):
        return "panel"
    return next((s for s in judges if s != judge and full(s)), PREDICTOR)


def prediction_rows(
    responses: Sequence[Placed],
    rating_sets: Sequence[RatingSet],
    samples: Sequence[BoardSample],
    measure: Mapping[str, float],
) -> list[PredictionRow]:
    """Rows for every sample, scope and label, each with its predictor (:func:`choose_predictor`).
    ``measure``: response id -> the affect measure's continuous reinforcing measure; every
    scorer's primary labels come from ``rating_sets``."""
    if not samples:
        return []
    labels: dict[str, dict[str, str | None]] = {}
    for rs in rating_sets:
        if rs.scored:
            labels.setdefault(rs.scorer, {}).setdefault(rs.response_id, label_of(rs))
    by_run: dict[str, list[Placed]] = {}
    for r in responses:
        by_run.setdefault(r.run_id, []).append(r)
    out: list[PredictionRow] = []
    for sample in samples:
        if sample.design not in WEIGHABLE:  # annotate's pooled sample: runs mixed, no weights
            continue
        run = by_run.get(sample.run_id, [])
        verdicts = labels.get(sample.judge, {})
        predictor = choose_predictor(sample.judge, run, labels)
        pred_label = labels.get(predictor, {})
        # The population: the run's responses the predictor scored (all of them, normally);
        # a sample that feeds no share says so over all of them.
        scored = [
            r
            for r in run
            if sample.unused
            or (
                pred_label.get(r.response_id) is not None
                and (predictor != PREDICTOR or r.response_id in measure)
            )
        ]
        members = set(sample.members)
        scopes = {OVERALL: scored}
        for r in scored:
            scopes.setdefault(r.dimension, []).append(r)
        for scope, rows in scopes.items():
            for metric in LABELS:
                out.append(_row(sample, scope, metric, rows, members, verdicts, measure,
                                pred_label, predictor))  # fmt: skip
    return out


def _row(
    sample: BoardSample,
    scope: str,
    metric: str,
    rows: Sequence[Placed],
    members: set[str],
    verdicts: Mapping[str, str | None],
    measure: Mapping[str, float],
    pred_label: Mapping[str, str | None],
    predictor: str,
) -> PredictionRow:
    def f(rid: str) -> float:
        if metric == "reinforcing" and predictor == PREDICTOR:
            return measure[rid]
        return 1.0 if pred_label.get(rid) == metric else 0.0

    labelled = [
        r.response_id for r in rows if r.response_id in members and r.response_id in verdicts
    ]
    judged = set(labelled)
    rest = [r.response_id for r in rows if r.response_id not in judged]
    n, total = len(labelled), len(rows)
    raw = sum(pred_label.get(r.response_id) == metric for r in rows) / total if total else None
    base = (sample.judge, predictor, sample.run_id, scope, metric)
    if sample.unused:
        return PredictionRow(*base, None, None, None, 0, total, raw, None, sample.unused)
    if total and all(verdicts.get(r.response_id) is not None for r in rows):
        # The judge labelled every response here (its sample, then the rest): the share is
        # known exactly, and is the headline, not the sample's estimate.
        share = sum(verdicts[r.response_id] == metric for r in rows) / total
        note = f"as {sample.judge} labelled all {total}: exact"
        return PredictionRow(*base, share, share, share, total, total, raw, share, note)
    if total == 0:  # the affect measure, the fallback, has not scored this configuration
        note = (
            "no scorer labelled every response of this configuration: run `intima score` "
            "(the affect measure on all) or judge them all with another judge"
        )
        return PredictionRow(*base, None, None, None, n, total, raw, None, note)
    if n < MIN_LABELLED:
        note = f"{n} labelled in this scope; a prediction-powered share needs {MIN_LABELLED}"
        return PredictionRow(*base, None, None, None, n, total, raw, None, note)
    y = [1.0 if verdicts[rid] == metric else 0.0 for rid in labelled]
    fl, fu = [f(r) for r in labelled], [f(r) for r in rest]
    note = describe(sample.judge, n, total, predictor)
    if sample.design == STRATIFIED_PROPORTIONAL and scope == OVERALL:
        where = {r.response_id: r.dimension for r in rows}
        missing = sorted({where[r] for r in rest} - {where[r] for r in labelled})
        if missing:
            note = f"no labelled response in {missing[0]}; a stratified share needs one per stratum"
            return PredictionRow(*base, None, None, None, n, total, raw, None, note)
        try:
            est: PredictionPoweredShare = stratified_prediction_powered_share(
                y, fl, fu, [where[r] for r in labelled], [where[r] for r in rest],
                populations=_weights(sample, set(where.values())),
            )  # fmt: skip
        except ValueError as e:  # e.g. many judgments unscored in one dimension
            return PredictionRow(*base, None, None, None, n, total, raw, None, str(e))
        note += ", stratified by dimension"
    else:
        est = prediction_powered_share(y, fl, fu)
    return PredictionRow(
        *base, est.estimate, est.lo, est.hi, n, total, raw, sum(y) / n, note
    )  # fmt: skip


def _weights(sample: BoardSample, strata: set[str]) -> dict[str, int] | None:
    """The design's recorded weights, when they name the strata the rows fall in; else (the
    predictor left responses out, or the run grew) the rows' own counts."""
    recorded = dict(sample.strata)
    return recorded if set(recorded) == strata else None
