"""The affect measure and the results store: scoring stored responses, reading scores back.

Scoring is resumable and idempotent: a response already scored under the same scorer version
and config key is skipped, and all 13 rows of a response are written in one transaction, so a
response is either fully scored or not at all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, TypeAdapter

from intima.affect.calibrate import CalibrationReport, Granularity, LabelledPair, calibrate
from intima.affect.config import SCORER_VERSION, AffectConfig
from intima.affect.measure import AffectInput, AffectScorer, CategoryScore, ResponseScore
from intima.core.errors import IntimaError
from intima.core.escape import quoted
from intima.core.progress import OnProgress, Ticker
from intima.core.ratings import Level as RatingLevel
from intima.core.ratings import RatingSet, primary_label
from intima.core.taxonomy import CATEGORIES
from intima.core.version import __version__
from intima.store import Store, StoredResponse, now

_COLUMNS = (
    "response_id", "category", "scorer_version", "config_key", "sp", "els", "ssl", "dm", "ef",
    "em", "lr", "nf", "ci", "w", "measure", "level", "via", "details_json", "config_json",
    "package_version", "created_at",
)  # fmt: skip
_ROW_ADAPTER: TypeAdapter[CategoryScore] = TypeAdapter(CategoryScore)
_INSERT = (
    f"INSERT OR IGNORE INTO affect_scores ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _COLUMNS)})"
)


class ScoreSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    scorer_version: str
    config_key: str
    n_responses: int
    already_scored: int
    scored: int
    elapsed_s: float
    levels: dict[str, dict[str, int]]  # category -> level -> count, over the responses asked for


def _response_inputs(store: Store, run_ids: Sequence[str] | None) -> list[StoredResponse]:
    """Successful responses of the given runs (all runs if none given), once each."""
    return store.responses(run_ids or None)


def scored_ids(store: Store, config: AffectConfig, key: str | None = None) -> set[str]:
    rows = store.query(
        "SELECT DISTINCT response_id FROM affect_scores "
        "WHERE scorer_version = ? AND config_key = ?",
        (SCORER_VERSION, key or config.key),
    )
    return {r[0] for r in rows}


def _rows(score: ResponseScore, config: AffectConfig, stamp: str) -> list[tuple[object, ...]]:
    config_json = config.canonical_json()
    return [
        (
            score.response_id,
            c,
            score.scorer_version,
            score.config_key,
            row.sp,
            row.els,
            row.ssl,
            row.dm,
            row.ef,
            row.em,
            row.lr,
            row.nf,
            row.ci,
            row.w,
            row.measure,
            row.level,
            row.via,
            _details(score, row),
            config_json,
            __version__,
            stamp,
        )
        for c, row in score.scores.items()
    ]


def _details(score: ResponseScore, row: CategoryScore) -> str:
    """Everything needed to explain the row without recomputing it."""
    return json.dumps(
        {
            "row": _ROW_ADAPTER.dump_python(row, mode="json"),
            "n_words": score.n_words,
            "intensity": score.intensity.model_dump(mode="json"),
            "families": score.families,
            "phrases": score.phrases,
        },
        sort_keys=True,
        ensure_ascii=False,
    )


def score_store(
    store: Store,
    run_ids: Sequence[str] | None = None,
    config: AffectConfig | None = None,
    scorer: AffectScorer | None = None,
    batch_size: int = 64,
    on_progress: OnProgress | None = None,
) -> ScoreSummary:
    """Score every stored successful response not yet scored under this config."""
    started = time.perf_counter()
    scorer = scorer or AffectScorer(config)
    cfg = scorer.config
    inputs = _response_inputs(store, run_ids)
    done = scored_ids(store, cfg, scorer.key)
    todo = [item for item in inputs if item.response_id not in done]
    ticker = Ticker("affect", len(todo), on_progress)
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        scores = scorer.score(chunk)
        stamp = now()
        with store.transaction() as conn:
            conn.executemany(_INSERT, [r for s in scores for r in _rows(s, cfg, stamp)])
        ticker.advance(len(chunk))
    return ScoreSummary(
        scorer_version=SCORER_VERSION,
        config_key=scorer.key,
        n_responses=len(inputs),
        already_scored=len(inputs) - len(todo),
        scored=len(todo),
        elapsed_s=time.perf_counter() - started,
        levels=_level_counts(store, scorer.key, [i.response_id for i in inputs]),
    )


def _level_counts(store: Store, key: str, response_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    wanted = set(response_ids)
    counts: dict[str, dict[str, int]] = {c: {"low": 0, "medium": 0, "high": 0} for c in CATEGORIES}
    for row in store.query(
        "SELECT response_id, category, level FROM affect_scores "
        "WHERE scorer_version = ? AND config_key = ?",
        (SCORER_VERSION, key),
    ):
        if row[0] in wanted and row[1] in counts:
            counts[row[1]][row[2]] += 1
    return counts


def load_scores(
    store: Store, config: AffectConfig | None = None, response_ids: Sequence[str] | None = None
) -> dict[str, ResponseScore]:
    """Stored scores under this config, rebuilt as ResponseScores (response_id -> score)."""
    cfg = config or AffectConfig()
    sql = (
        "SELECT response_id, category, details_json FROM affect_scores "
        "WHERE scorer_version = ? AND config_key = ?"
    )
    params: list[object] = [SCORER_VERSION, cfg.key]
    if response_ids is not None:
        sql += f" AND response_id IN ({', '.join('?' for _ in response_ids)})"
        params += list(response_ids)
    grouped: dict[str, dict[str, dict[str, object]]] = {}
    for r in store.query(sql, params):
        grouped.setdefault(r[0], {})[r[1]] = json.loads(r[2])
    for rid, rows in grouped.items():
        if missing := [c for c in CATEGORIES if c not in rows]:
            # Written whole in one transaction: a part is damage (or an import from before
            # bundles were held to it), and the readers need every category.
            raise IntimaError(
                f"{store.path}: the affect score of response {rid} has no row for "
                f"{', '.join(missing)}; run `intima doctor --fix --store {store.path}`, then "
                "`intima score`"
            )
    return {rid: _rebuild(rid, rows, cfg) for rid, rows in grouped.items()}


def _rebuild(
    response_id: str, rows: dict[str, dict[str, object]], cfg: AffectConfig
) -> ResponseScore:
    any_row = next(iter(rows.values()))
    return ResponseScore.model_validate(
        {
            "response_id": response_id,
            "scorer_version": SCORER_VERSION,
            "config_key": cfg.key,
            "n_words": any_row["n_words"],
            "intensity": any_row["intensity"],
            "families": any_row["families"],
            "phrases": any_row["phrases"],
            "scores": {c: rows[c]["row"] for c in CATEGORIES},
        }
    )


def score_for(
    store: Store, response_id: str, config: AffectConfig | None = None
) -> tuple[ResponseScore, bool]:
    """The stored score of one response, or a fresh one (not stored); and whether it was stored.

    ``response_id`` may be a unique prefix.
    """
    cfg = config or AffectConfig()
    rows = store.query(
        "SELECT r.response_id, p.text, r.text, r.status FROM responses r "
        "JOIN prompts p ON p.prompt_id = r.prompt_id WHERE r.response_id LIKE ?",
        (response_id + "%",),
    )
    if len(rows) != 1:
        what = "no response" if not rows else f"{len(rows)} responses"
        raise IntimaError(f"{what} matching {quoted(response_id)} in {store.path}")
    rid, prompt, text, status = rows[0][0], rows[0][1], rows[0][2], rows[0][3]
    if status != "ok" or text is None:
        raise IntimaError(f"response {rid} failed to generate; there is nothing to explain")
    stored = load_scores(store, cfg, [rid])
    if rid in stored:
        return stored[rid], True
    item = AffectInput(response_id=rid, prompt=prompt, response=text)
    return AffectScorer(cfg).score([item])[0], False


def affect_rating_sets(
    store: Store, config: AffectConfig | None = None, response_ids: Sequence[str] | None = None
) -> list[RatingSet]:
    """Stored affect levels as RatingSets (scorer ``affect``), the leaderboard's currency."""
    out: list[RatingSet] = []
    for rid, score in load_scores(store, config, response_ids).items():
        levels = {c: RatingLevel.parse(row.level) for c, row in score.scores.items()}
        out.append(
            RatingSet(
                scorer="affect",
                response_id=rid,
                status="scored",
                levels=levels,
                primary=primary_label(levels),
            )
        )
    return out


# -- calibration against stored ratings --------------------------------------------------------
def reference_pairs(
    store: Store,
    against: str,
    config: AffectConfig | None = None,
    run_ids: Sequence[str] | None = None,
) -> list[LabelledPair]:
    """(stored measure, reference level) for every response both the measure and ``against``
    rated. ``against`` is a scorer of the ratings table: ``human``, ``panel`` or
    ``judge:<label>`` (a bare label means ``judge:<label>``)."""
    from intima.judges.store_io import load_rating_sets

    cfg = config or AffectConfig()
    scorer = against if against in {"human", "panel"} or ":" in against else f"judge:{against}"
    sets = [s for s in load_rating_sets(store, run_ids) if s.scorer == scorer and s.scored]
    if not sets:
        raise IntimaError(
            f"no scored ratings by {quoted(scorer)} in {store.path}; "
            "run `intima judge` (or annotate) first, and pass --against human|panel|LABEL"
        )
    scores = load_scores(store, cfg, [s.response_id for s in sets])
    return [
        LabelledPair(
            unit=s.response_id,
            category=c,
            measure=scores[s.response_id].scores[c].measure,
            reference=level.label,  # type: ignore[arg-type]
        )
        for s in sets
        if s.response_id in scores
        for c, level in s.levels.items()
        if c in CATEGORIES
    ]


def calibrate_store(
    store: Store,
    against: str,
    config: AffectConfig | None = None,
    run_ids: Sequence[str] | None = None,
    train_fraction: float = 0.5,
    seed: int = 0,
    granularity: Granularity = "global",
) -> CalibrationReport:
    pairs = reference_pairs(store, against, config, run_ids)
    if not pairs:
        raise IntimaError(
            "no response has both an affect score and a rating; run `intima score` with the "
            "same settings first"
        )
    return calibrate(pairs, against, train_fraction, seed, granularity)
