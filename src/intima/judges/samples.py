"""Seeded random samples of a configuration's responses for a judge (``intima judge
--sample N``), recorded so that the board knows which judgments form a random sample.

The design is a **simple random sample without replacement**: a run's responses are put in the
order of ``sha256(design, seed, run id, prompt id)`` (a seeded permutation that does not depend
on how many are drawn, nor on which other responses exist) and the sample of size ``n`` is
the first ``n`` of that order. Growing ``n`` therefore extends the sample and never redraws
it; asking again for the same ``n`` judges only what is missing, like every judge run.

The store records each sample (``judgment_samples``: run, judge, design, seed, size, the
number of responses it was drawn from and the digest of their ids) and each member with its
place in the order (``judgment_sample_members``). Only members feed the prediction-powered
share: a judgment of the same judge on any other response (judged by hand, or fully judged
under another run) is never treated as part of a random sample.

**A run that grows** (a resumed run answers what failed before) holds answers its sample was
never drawn from: the sample is a random sample of the answers it was drawn from, not of the
run. It stays a valid record (:func:`intima.judges.sample_check.recomputed` finds those
answers again: the first ``population`` by when each was stored, whose ids give the recorded
digest), and asking again for a sample **draws it again** over every answer (the first
``size`` of the grown run's order): members that stay are not judged again, the judgments of
those that leave are kept (outside the sample), and only the new members are judged.

``intima annotate --design random`` draws the same design for people (:func:`draw` under the
judge key ``human:<annotator>``), so their ratings feed the prediction-powered share like an
LLM judge's.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from intima.core.errors import ConfigError
from intima.store import Store, StoredResponse, now

SIMPLE_RANDOM: Final = "simple_random"
#: ``intima annotate``'s default design (``--design stratified``): the stored responses of
#: the chosen runs pooled, each dimension shuffled (seeded), the dimensions taking turns;
#: recorded, never fed to the estimator (its strata pool runs of different sizes and would need
#: their weights, which the estimator does not apply). ``--design random`` draws
#: :data:`SIMPLE_RANDOM` instead.
STRATIFIED_DIMENSION: Final = "stratified_dimension"
#: ``intima judge --sample N --stratify``: each run's responses stratified by dimension, a
#: seeded permutation within each dimension, the dimensions interleaved by
#: :func:`stratum_sequence` (proportional allocation), each dimension's population recorded
#: (``judgment_sample_strata``) as its weight.
STRATIFIED_PROPORTIONAL: Final = "stratified_proportional"
#: The designs whose judgments feed the prediction-powered share (random within a run, with
#: known weights).
WEIGHABLE: Final = frozenset({SIMPLE_RANDOM, STRATIFIED_PROPORTIONAL})
DEFAULT_SAMPLE_SEED: Final = 0
#: Fewest judged responses of a scope (a configuration, overall or in a dimension) for a
#: prediction-powered share (``intima.results.prediction``); ``intima judge --sample`` warns
#: under it. From ``benchmarks/bench_ppi_minimum.py``: at the dimensions' sizes (48-143
#: responses) the interval covers >= 0.93 in every cell from this many labelled.
MIN_LABELLED: Final = 15


@dataclass(frozen=True)
class SampleSpec:
    """How many of each run's responses to sample: ``size`` responses, or a ``fraction`` of
    them (rounded up), with ``seed``."""

    size: int | None = None
    fraction: float | None = None
    seed: int = DEFAULT_SAMPLE_SEED
    stratify: bool = False

    @property
    def design(self) -> str:
        return STRATIFIED_PROPORTIONAL if self.stratify else SIMPLE_RANDOM

    def __post_init__(self) -> None:
        if (self.size is None) == (self.fraction is None):
            raise ConfigError("give the sample as --sample N or --fraction F, not both")
        if self.size is not None and self.size < 1:
            raise ConfigError(f"--sample must be at least 1, not {self.size}")
        if self.fraction is not None and not 0.0 < self.fraction <= 1.0:
            raise ConfigError(f"--fraction must lie in (0, 1], not {self.fraction}")

    def size_of(self, population: int) -> int:
        if self.size is not None:
            return min(self.size, population)
        assert self.fraction is not None
        return min(population, math.ceil(self.fraction * population))


@dataclass(frozen=True)
class Sample:
    """A recorded sample: ``members`` are response ids in their order (the first ``size``)."""

    run_id: str
    judge_key: str
    design: str
    seed: int
    size: int
    population: int
    members: tuple[str, ...]
    #: stratum -> its population (the weights of a stratified design; empty otherwise)
    strata: tuple[tuple[str, int], ...] = ()
    #: :func:`population_digest` of the answers it was drawn from (None: drawn before digests
    #: were recorded; then only their count is known)
    population_sha256: str | None = None


def population_digest(response_ids: Iterable[str]) -> str:
    """The digest a sample records of the answers it was drawn from: sha256 of their ids,
    sorted, one a line (the seeded order follows from the set, so the set is what counts)."""
    return hashlib.sha256("\n".join(sorted(response_ids)).encode()).hexdigest()


def drawn_from(sample: Sample, ids: Sequence[str]) -> bool:
    """Whether ``sample`` was drawn from the answers ``ids``: their digest is the recorded
    one (a sample from before digests: their count is)."""
    if sample.population_sha256 is None:
        return len(ids) == sample.population
    return population_digest(ids) == sample.population_sha256


def order_key(seed: int, run_id: str, prompt_id: str, design: str = SIMPLE_RANDOM) -> str:
    return hashlib.sha256(f"{design}\x00{seed}\x00{run_id}\x00{prompt_id}".encode()).hexdigest()


def sample_order(
    responses: Sequence[StoredResponse], seed: int, design: str = SIMPLE_RANDOM
) -> list[StoredResponse]:
    """The seeded order of one run's responses under ``design``: a permutation of all of them
    (simple random), or each dimension's permutation interleaved by :func:`stratum_sequence`
    (stratified, proportional allocation). A sample of ``n`` is always the first ``n``."""
    if design != STRATIFIED_PROPORTIONAL:
        return sorted(responses, key=lambda r: order_key(seed, r.run_id, r.prompt_id))
    strata: dict[str, list[StoredResponse]] = {}
    for r in responses:
        strata.setdefault(r.dimension, []).append(r)
    queues = {
        h: iter(sorted(rows, key=lambda r: order_key(seed, r.run_id, r.prompt_id, design)))
        for h, rows in strata.items()
    }
    return [next(queues[h]) for h in stratum_sequence({h: len(v) for h, v in strata.items()})]


def stratum_sequence(sizes: Mapping[str, int]) -> list[str]:
    """The strata in the order a stratified sample takes them, one entry per member: next is
    always the stratum with the highest ``N_h / (2 n_h + 1)`` (Sainte-Lague's divisors;
    ties to the larger, then the name), ``n_h`` its members so far. Every prefix is thus a
    proportional allocation rounded to the nearest (each stratum within about one member of
    ``n N_h / N``), and a larger sample only adds members: growing ``n`` never redraws."""
    taken = dict.fromkeys(sizes, 0)
    out: list[str] = []
    for _ in range(sum(sizes.values())):
        h = max(
            (h for h in sizes if taken[h] < sizes[h]),
            key=lambda h: (sizes[h] / (2 * taken[h] + 1), sizes[h], h),
        )
        taken[h] += 1
        out.append(h)
    return out


@dataclass(frozen=True)
class _Plan:
    """One run's sample as :func:`draw` would record it."""

    ordered: list[StoredResponse]  # the run's answers in their seeded order
    chosen: list[StoredResponse]  # the sample: the order's first ``size``
    strata: Counter[str]
    #: the run grew since its recorded sample was drawn: what to tell (None: it did not)
    redrawn: str | None = None


def _plan(
    conn: sqlite3.Connection,
    judge_key: str,
    run_id: str,
    rows: Sequence[StoredResponse],
    spec: SampleSpec,
) -> _Plan:
    """One run's order, its sample under ``spec`` (a recorded one only grows, and is drawn
    again over every answer when the run grew) and its strata, read from the store; a change
    of design or seed is refused."""
    ordered = sample_order(rows, spec.seed, spec.design)
    prior = conn.execute(
        "SELECT seed, size, design, population, population_sha256 FROM judgment_samples "
        "WHERE run_id = ? AND judge_key = ?",
        (run_id, judge_key),
    ).fetchone()
    if prior is not None and prior[2] != spec.design:
        raise ConfigError(
            f"run {run_id[:12]} already has a {prior[2]} sample for this judge; a "
            f"{spec.design} one would mix two designs ({_extend_hint(prior[2])}use "
            "another judge or annotator name)"
        )
    if prior is not None and int(prior[0]) != spec.seed:
        raise ConfigError(
            f"run {run_id[:12]} was sampled for this judge with seed {prior[0]}; give "
            f"--sample-seed {prior[0]} to extend that sample (a new seed would redraw it)"
        )
    size = min(len(ordered), max(spec.size_of(len(ordered)), int(prior[1]) if prior else 0))
    strata = Counter(r.dimension for r in ordered) if spec.stratify else Counter()
    if size < len(strata):
        raise ConfigError(
            f"--stratify needs a sample of at least {len(strata)} per run (one per "
            f"dimension), not {size}"
        )
    chosen = ordered[:size]
    former = (
        Sample(
            run_id,
            judge_key,
            spec.design,
            spec.seed,
            int(prior[1]),
            int(prior[3]),
            (),
            population_sha256=prior[4],
        )
        if prior
        else None
    )
    if former is None or drawn_from(former, [r.response_id for r in ordered]):
        return _Plan(ordered, chosen, strata)
    return _Plan(ordered, chosen, strata, _redrawn(conn, former, rows[0].label, ordered, size))


def _redrawn(
    conn: sqlite3.Connection,
    former: Sample,
    label: str,
    ordered: Sequence[StoredResponse],
    size: int,
) -> str:
    """What a sample drawn again over a run that grew says: how many members stay."""
    held = {
        m
        for (m,) in conn.execute(
            "SELECT response_id FROM judgment_sample_members WHERE run_id = ? AND judge_key = ? "
            "AND position < ?",
            (former.run_id, former.judge_key, former.size),
        )
    }
    stay = sum(r.response_id in held for r in ordered[:size])
    return (
        f"{label}'s sample for this judge was drawn from {former.population} answers and the "
        f"run has {len(ordered)} now: drawn again over all of them (the first {size} of its "
        f"seeded order); {stay} of its {len(held)} former members stay, and the judgments of "
        f"those that left ({len(held) - stay}) are kept, outside the sample"
    )


def _by_run(responses: Sequence[StoredResponse]) -> dict[str, list[StoredResponse]]:
    by_run: dict[str, list[StoredResponse]] = {}
    for r in responses:
        by_run.setdefault(r.run_id, []).append(r)
    return by_run


def planned(
    store: Store, judge_key: str, responses: Sequence[StoredResponse], spec: SampleSpec
) -> list[StoredResponse]:
    """What :func:`draw` would return, recording nothing (``intima judge --dry-run``)."""
    out: list[StoredResponse] = []
    with store.transaction() as conn:
        for run_id, rows in _by_run(responses).items():
            out.extend(_plan(conn, judge_key, run_id, rows, spec).chosen)
    return out


@dataclass(frozen=True)
class Drawn:
    """What :func:`drawn` recorded: every run's members in order, and one line for each run
    whose sample was drawn again because the run grew."""

    members: list[StoredResponse]
    notes: list[str]


def draw(
    store: Store, judge_key: str, responses: Sequence[StoredResponse], spec: SampleSpec
) -> list[StoredResponse]:
    """Record (or extend) each run's sample for this judge and return its members, every run's
    in order (:func:`drawn`)."""
    return drawn(store, judge_key, responses, spec).members


def drawn(
    store: Store, judge_key: str, responses: Sequence[StoredResponse], spec: SampleSpec
) -> Drawn:
    """Record (or extend) each run's sample for this judge: the first ``size`` of the run's
    seeded order of every answer it holds now, with their digest. A run sampled before with
    another seed is refused: that would be a redraw. A run that grew since its sample was
    drawn is drawn again (members that stay keep their place, judgments are never removed)."""
    out: list[StoredResponse] = []
    notes: list[str] = []
    stamp = now()
    with store.transaction() as conn:
        for run_id, rows in _by_run(responses).items():
            plan = _plan(conn, judge_key, run_id, rows, spec)
            digest = population_digest(r.response_id for r in plan.ordered)
            conn.execute(
                "INSERT INTO judgment_samples (run_id, judge_key, design, seed, size, "
                "population, created_at, updated_at, population_sha256) VALUES "
                "(?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id, judge_key) DO UPDATE SET "
                "size = excluded.size, population = excluded.population, updated_at = "
                "excluded.updated_at, population_sha256 = excluded.population_sha256",
                (
                    run_id,
                    judge_key,
                    spec.design,
                    spec.seed,
                    len(plan.chosen),
                    len(plan.ordered),
                    stamp,
                    stamp,
                    digest,
                ),
            )
            # Members and weights are what the order gives now: written whole, so a sample
            # drawn again over a grown run keeps none of the old places.
            for table in ("judgment_sample_strata", "judgment_sample_members"):
                conn.execute(
                    f"DELETE FROM {table} WHERE run_id = ? AND judge_key = ?", (run_id, judge_key)
                )
            conn.executemany(
                "INSERT INTO judgment_sample_strata VALUES (?,?,?,?)",
                [(run_id, judge_key, h, count) for h, count in sorted(plan.strata.items())],
            )
            conn.executemany(
                "INSERT INTO judgment_sample_members VALUES (?,?,?,?)",
                [(run_id, judge_key, r.response_id, i) for i, r in enumerate(plan.chosen)],
            )
            out.extend(plan.chosen)
            notes.extend([plan.redrawn] if plan.redrawn else [])
    return Drawn(out, notes)


def thin_scopes(
    members: Sequence[StoredResponse], population: Sequence[StoredResponse]
) -> list[str]:
    """One warning per run and dimension where the sample holds fewer than
    :data:`MIN_LABELLED` responses (and not the whole dimension): the board gives no
    prediction-powered share there."""
    held = Counter((r.run_id, r.dimension) for r in members)
    sizes = Counter((r.run_id, r.dimension) for r in population)
    labels = {r.run_id: r.label for r in population}
    out = []
    for (run_id, dim), size in sorted(sizes.items()):
        k = held[(run_id, dim)]
        if k < min(MIN_LABELLED, size):
            out.append(
                f"warning: {k} of {labels[run_id]}'s {size} responses in {dim} are in the "
                f"sample; the board's share there needs {MIN_LABELLED} judged (a larger "
                "--sample; --stratify gives each dimension its share of it)"
            )
    return out


def _extend_hint(design: str) -> str:
    if design == SIMPLE_RANDOM:
        return "drop --stratify to extend it, or "
    if design == STRATIFIED_PROPORTIONAL:
        return "add --stratify to extend it, or "
    return ""


def record(
    store: Store,
    judge_key: str,
    design: str,
    seed: int,
    members: Sequence[StoredResponse],
    population: Sequence[StoredResponse],
) -> None:
    """Record a sample drawn elsewhere (``intima annotate``): each run's members in the order
    drawn, and how many responses of the run it was drawn from. A run's recorded sample only
    grows; one drawn before under another design or seed is left as it is."""
    per_run: dict[str, int] = {}
    for r in population:
        per_run[r.run_id] = per_run.get(r.run_id, 0) + 1
    stamp = now()
    with store.transaction() as conn:
        for run_id, total in per_run.items():
            mine = [r for r in members if r.run_id == run_id]
            prior = conn.execute(
                "SELECT design, seed, size FROM judgment_samples "
                "WHERE run_id = ? AND judge_key = ?",
                (run_id, judge_key),
            ).fetchone()
            if prior is not None and (prior[0], int(prior[1])) != (design, seed):
                continue
            size = max(len(mine), int(prior[2]) if prior else 0)
            conn.execute(
                "INSERT INTO judgment_samples (run_id, judge_key, design, seed, size, "
                "population, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?) "
                "ON CONFLICT(run_id, judge_key) DO UPDATE SET size = excluded.size, "
                "population = excluded.population, updated_at = excluded.updated_at",
                (run_id, judge_key, design, seed, size, total, stamp, stamp),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO judgment_sample_members VALUES (?,?,?,?)",
                [(run_id, judge_key, r.response_id, i) for i, r in enumerate(mine)],
            )


def samples(store: Store, run_ids: Sequence[str] | None = None) -> list[Sample]:
    """Every recorded sample (of the runs, all if None), members in order."""
    wanted = None if run_ids is None else set(run_ids)
    found = []
    for row in store.query("SELECT * FROM judgment_samples ORDER BY run_id, judge_key"):
        if wanted is not None and row["run_id"] not in wanted:
            continue
        members = store.query(
            "SELECT response_id FROM judgment_sample_members WHERE run_id = ? AND judge_key = ? "
            "AND position < ? ORDER BY position",
            (row["run_id"], row["judge_key"], row["size"]),
        )
        found.append(
            Sample(
                row["run_id"],
                row["judge_key"],
                row["design"],
                int(row["seed"]),
                int(row["size"]),
                int(row["population"]),
                tuple(m[0] for m in members),
                tuple(
                    (h, int(k))
                    for h, k in store.query(
                        "SELECT stratum, population FROM judgment_sample_strata "
                        "WHERE run_id = ? AND judge_key = ? ORDER BY stratum",
                        (row["run_id"], row["judge_key"]),
                    )
                ),
                row["population_sha256"],
            )
        )
    return found
