"""A recorded sample recomputed, not believed (issue 37): which answers it was drawn from,
and whether its members and weights are what its seed and design give over them. A sample
is data anyone can write (a bundle, an old import), and it chooses which judgments feed a
prediction-powered share, so what can be recomputed is. Used by the import checks
(:mod:`intima.bundles.membership`), ``intima doctor`` and the board
(:mod:`intima.results.data`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from intima.judges.samples import (
    STRATIFIED_PROPORTIONAL,
    WEIGHABLE,
    Sample,
    drawn_from,
    sample_order,
)
from intima.store import StoredResponse


def drawn_population(
    sample: Sample, population: Sequence[StoredResponse], stored_at: Mapping[str, str]
) -> list[StoredResponse] | None:
    """The answers ``sample`` was drawn from, recomputed, or None when none are found: all of
    its run's answers (``population``) when they are the ones it records, else (the run grew
    since) the first ``sample.population`` of them by when each was stored (``stored_at``:
    response id -> ``created_at``; an answer is stored when it succeeds, so one that came
    after the draw is stored after those before it), when their digest is the recorded one
    (a sample from before digests: their count alone)."""
    if drawn_from(sample, [r.response_id for r in population]):
        return list(population)
    if sample.population >= len(population):
        return None
    earlier = sorted(population, key=lambda r: (stored_at.get(r.response_id, ""), r.response_id))
    earlier = earlier[: sample.population]
    return earlier if drawn_from(sample, [r.response_id for r in earlier]) else None


def recomputed(
    sample: Sample, population: Sequence[StoredResponse], stored_at: Mapping[str, str]
) -> tuple[str | None, int]:
    """(what differs between ``sample`` and its recomputation, or None; how many answers it
    was drawn from): its population found again (:func:`drawn_population`), then its members
    and weights over it (:func:`differs`)."""
    drawn = drawn_population(sample, population, stored_at)
    if drawn is None:
        if sample.population > len(population):
            why = (
                f"is drawn from {sample.population} answers, more than the run's {len(population)}"
            )
        else:
            why = (
                f"records a population of {sample.population} answers that is not the run's "
                f"first {sample.population} by when they were stored"
            )
        return why, 0
    return differs(sample, drawn), len(drawn)


def differs(sample: Sample, population: Sequence[StoredResponse]) -> str | None:
    """What differs between a recorded sample of a weighable design and what its seed and
    design give over ``population`` (its run's answered responses), or None: its members, in
    their recorded places, must be the order's first ``size``, and a stratified sample's strata
    the run's dimensions with their counts. A sample is data anyone can write (a bundle, an old
    import), so what can be recomputed is (issue 37)."""
    if sample.design not in WEIGHABLE:
        return None  # annotate's pooled design: it feeds no share
    if sample.size > len(population):
        return f"is larger than the run's {len(population)} answered responses"
    order = [r.response_id for r in sample_order(population, sample.seed, sample.design)]
    for i, want in enumerate(order[: sample.size]):
        got = sample.members[i] if i < len(sample.members) else None
        if got != want:
            held = "is missing" if got is None else f"is response {got[:40]!r}"
            return (
                f"is not its seeded order's first {sample.size}: member {i + 1} of "
                f"{sample.size} {held}, the order's is {want[:40]!r}"
            )
    if sample.design == STRATIFIED_PROPORTIONAL:
        actual = Counter(r.dimension for r in population)
        if dict(sample.strata) != dict(actual):
            shown = ", ".join(f"{h} {n}" for h, n in sorted(actual.items()))
            return f"records strata weights that are not the run's dimensions ({shown})"
    return None
