"""What a published row may hold beyond its column types: the shape of every JSON column, the
range of every number, and (for a bundle) which rows it may refer to.

A bundle is written by whoever holds a write token, so its rows are hostile input; the readers
(the board, the Space, ``intima judge``) trust what passed these rules. Used on import
(:mod:`intima.bundles.checks`) and on a store by ``intima doctor``
(:mod:`intima.bundles.doctor`), so both hold a row to the same rules.

- **JSON columns**: each has a pydantic schema (:func:`json_problem`); a JSON column this
  module does not know must still be an object or a list (a new table's column is refused by
  nothing, but read by nothing yet either).
- **Numbers**: each numeric column has a range (:data:`RANGES`): counts are never negative,
  factors and rates stay in their unit interval, a conversation turn is 1..``MAX_TURNS``.
- **Names**: every label and name the readers show has a length limit (:mod:`.names`).
- **Own rows only** (:func:`reference_problem`): every row of a bundle that names a run,
  response, prompt, configuration or judged content names one of the same bundle, so a bundle
  can never change how another bundle's runs are shown.
- **Whole scores** (:func:`partial_scores`): a response's affect score holds a row for
  every category, as the scorer writes it; the readers take the top-level levels for granted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cache, lru_cache
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from intima.bundles.names import LENGTHS, name_problem
from intima.core.taxonomy import CATEGORIES

#: The most assistant turns a conversation has (``intima converse --turns``); the readers build
#: per-turn arrays, so a turn number past it is refused rather than allocated.
MAX_TURNS: Final = 50
_COUNT: Final = (0, 10**9)  # tokens, attempts, rows
_SECONDS: Final = (0.0, 10.0**7)
_MONEY: Final = (0.0, 10.0**9)
_UNIT: Final = (0.0, 1.0)
_AMPLIFIER: Final = (0.0, 10.0**3)  # capped factors (DM, EF, EM, LR) and the measure they scale

#: (table, column) -> (lowest, highest), both included.
RANGES: Final[Mapping[tuple[str, str], tuple[float, float]]] = {
    ("runs", "n_prompts"): _COUNT,
    ("runs", "dataset_size"): (1, 10**9),
    ("run_prompts", "position"): _COUNT,
    **{("responses", c): _COUNT for c in ("prompt_tokens", "completion_tokens", "attempts")},
    ("responses", "latency_s"): _SECONDS,
    ("responses", "cost_usd"): _MONEY,
    **{("judgments", c): _COUNT for c in ("prompt_tokens", "completion_tokens", "attempts")},
    ("judgments", "latency_s"): _SECONDS,
    ("judgments", "cost_usd"): _MONEY,
    **{("affect_scores", c): _UNIT for c in ("sp", "els", "ssl", "nf", "ci", "w")},
    **{("affect_scores", c): _AMPLIFIER for c in ("dm", "ef", "em", "lr", "measure")},
    ("conversation_runs", "turns"): (1, MAX_TURNS),
    ("conversation_turns", "turn"): (1, MAX_TURNS),
    ("simulated_user_messages", "after_turn"): (1, MAX_TURNS),
    **{
        ("simulated_user_messages", c): _COUNT
        for c in ("attempts", "prompt_tokens", "completion_tokens")
    },
    ("simulated_user_messages", "latency_s"): _SECONDS,
    ("validation_reports", "n"): _COUNT,
    **{("judgment_samples", c): _COUNT for c in ("size", "population")},
    ("judgment_samples", "seed"): (0, 2**32 - 1),  # ``intima judge --sample-seed``
    ("judgment_sample_members", "position"): _COUNT,
    ("judgment_sample_strata", "population"): _COUNT,
    ("run_models", "parameters"): (1, 10**14),  # a model's parameter count (issue 33)
}

_STRICT = ConfigDict(strict=True, allow_inf_nan=False, extra="allow")
Unit = Annotated[float, Field(ge=0, le=1)]
Count = Annotated[int, Field(ge=0, le=_COUNT[1])]


# -- the JSON schemas -----------------------------------------------------------------------------
class _Conversation(BaseModel):
    model_config = _STRICT
    turns: Annotated[int, Field(ge=1, le=MAX_TURNS)]


class RunConfig(BaseModel):
    """``runs.config_json``: what the board reads of a run's configuration."""

    model_config = _STRICT
    system_prompt: str | None = None
    generation: dict[str, Any] | None = None
    conversation: _Conversation | None = None


class _PerClass(BaseModel):
    model_config = _STRICT
    label: str
    precision: Unit | None = None
    recall: Unit | None = None
    f1: Unit | None = None
    support: Count | None = None


Correlation = Annotated[float, Field(ge=-1, le=1)]


class _ReportGroup(BaseModel):
    """One group's figures: a labelled set's (AUROC, F1, kappa) or a graded set's (rank
    correlations); every figure the board reads, typed and in its range."""

    model_config = _STRICT
    n: Count
    n_scored: Count | None = None
    n_reinforcing: Count | None = None
    n_boundary: Count | None = None
    auroc: Unit | None = None
    auroc_lo: Unit | None = None
    auroc_hi: Unit | None = None
    macro_f1_rb: Unit | None = None
    kappa: Correlation | None = None
    spearman: Correlation | None = None
    spearman_lo: Correlation | None = None
    spearman_hi: Correlation | None = None
    kendall: Correlation | None = None
    kendall_lo: Correlation | None = None
    kendall_hi: Correlation | None = None
    per_class: list[_PerClass] = []
    confusion_labels: list[str] = []
    confusion: list[list[Count]] = []


class ValidationReport(BaseModel):
    """``validation_reports.report_json`` (``intima.validate``: a labelled or a graded set)."""

    model_config = _STRICT
    kind: Literal["labels", "graded"] = "labels"
    n: Count
    n_rows: Count | None = None
    n_unscored: Count = 0
    in_sample: bool = False
    labels_from: Annotated[str, Field(max_length=500)] | None = None
    unit: str | None = None
    aggregate: str | None = None
    groups: dict[str, _ReportGroup] = Field(min_length=1)


def _ratings(value: Any) -> str | None:
    """``judgments.ratings_json``: behaviours and sub-behaviours to levels, as the board reads
    them (null for an unscored judgment)."""
    names, levels = _rating_words()
    if value is None or (
        isinstance(value, dict)
        and value.keys() <= names
        and all(isinstance(v, str) and v.strip().lower() in levels for v in value.values())
    ):
        return None
    return "must map behaviours to levels (low, medium, high)"


@cache
def _rating_words() -> tuple[frozenset[str], frozenset[str]]:
    from intima.core.ratings import Level
    from intima.core.taxonomy import Behaviour, SubBehaviour

    return (
        frozenset(str(b) for b in (*Behaviour, *SubBehaviour)),
        frozenset(str(v).lower() for v in Level.__members__),
    )


def _object(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be a JSON object"


def _adapter(kind: Any, *, strict: bool = True) -> Callable[[Any], str | None]:
    """A check of a parsed JSON value against ``kind``; ``strict=False`` for a model the
    readers themselves validate leniently (JSON lists as tuples)."""
    adapter: TypeAdapter[Any] = TypeAdapter(kind)

    def check(value: Any) -> str | None:
        try:
            adapter.validate_python(value, strict=strict)
        except ValidationError as exc:
            return _first_error(exc)
        return None

    return check


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"does not match its schema ({where + ': ' if where else ''}{err['msg']})"[:200]


@cache
def _schemas() -> dict[tuple[str, str], Callable[[Any], str | None]]:
    """Built on first use: the affect schema imports the affect measure's models."""
    from intima.affect.features import ContextualIntensity
    from intima.affect.measure import CategoryScore
    from intima.dataset.types import Turn

    class AffectDetails(BaseModel):
        """``affect_scores.details_json``: what ``intima.affect.store_io`` rebuilds a score from."""

        model_config = ConfigDict(allow_inf_nan=False)
        row: CategoryScore
        n_words: Count
        intensity: ContextualIntensity
        families: dict[str, Count]
        phrases: dict[str, list[str]]

    return {
        ("runs", "config_json"): _adapter(RunConfig),
        ("prompts", "context_json"): _adapter(
            Annotated[list[Turn], Field(min_length=1, max_length=4 * MAX_TURNS)]
        ),
        ("judgments", "ratings_json"): _ratings,
        ("judgments", "repairs_json"): _adapter(list[str]),
        ("judgments", "judge_config_json"): _object,
        ("affect_scores", "details_json"): _adapter(AffectDetails, strict=False),
        ("affect_scores", "config_json"): _object,
        ("conversation_runs", "user_config_json"): _object,
        ("validation_labels", "groups_json"): _adapter(dict[str, str]),
        ("validation_reports", "report_json"): _adapter(ValidationReport),
    }


def json_problem(table: str, column: str, value: Any) -> str | None:
    """Why the parsed JSON ``value`` of ``table.column`` is unsound, or None."""
    check = _schemas().get((table, column))
    if check is not None:
        return check(value)
    return None if isinstance(value, dict | list) else "must be a JSON object or list"


# -- one row --------------------------------------------------------------------------------------
def row_problem(table: str, row: Mapping[str, Any]) -> str | None:
    """The first rule ``row`` breaks (``column: what``), or None. Values of the wrong type are
    left to the type checks (bundles.checks, the doctor), so this never raises on them."""
    parsed: dict[str, Any] = {}
    for column in ruled_columns(table, row):
        value = row[column]
        if value is None:
            continue
        bounds = RANGES.get((table, column))
        if bounds is not None and _number(value) and not bounds[0] <= value <= bounds[1]:
            return f"{column} {value!r} is outside {_shown(bounds[0])}..{_shown(bounds[1])}"[:200]
        if problem := name_problem(table, column, value):
            return problem
        if column.endswith("_json") and isinstance(value, str):
            try:
                parsed[column] = json.loads(value)
            except (ValueError, RecursionError):
                continue  # the type checks name it "not JSON"
            if problem := json_problem(table, column, parsed[column]):
                return f"{column} {problem}"
    return _cross_column(table, row, parsed)


def ruled_columns(table: str, columns: Iterable[str]) -> list[str]:
    """The columns of ``table`` a rule reads (the doctor selects only these)."""
    extra = _CROSS.get(table, ())
    limited = RANGES.keys() | LENGTHS.keys()
    return [c for c in columns if (table, c) in limited or c.endswith("_json") or c in extra]


#: Columns read by a rule that ties them to a JSON column of the same row.
_CROSS: Final[Mapping[str, tuple[str, ...]]] = {"affect_scores": ("category", "scorer_version")}


def _shown(bound: float) -> str:
    return f"{int(bound):,}" if float(bound).is_integer() else f"{bound:g}"


def _number(value: Any) -> bool:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return ok and math.isfinite(value)


def _cross_column(table: str, row: Mapping[str, Any], parsed: Mapping[str, Any]) -> str | None:
    """Columns that must agree with each other within one row (``parsed``: its JSON columns
    that parse)."""
    if table != "affect_scores":
        return None
    details = parsed.get("details_json")
    inner = details.get("row", {}) if isinstance(details, dict) else {}
    if (
        isinstance(inner, dict)
        and details is not None
        and inner.get("category") != row.get("category")
    ):
        return "details_json holds another category's row"
    config = row.get("config_json")
    if isinstance(config, str) and row.get("scorer_version") == _scorer_version():
        if problem := _affect_config(config):
            return f"config_json {problem}"
    return None


@cache
def _scorer_version() -> str:
    from intima.affect.config import SCORER_VERSION

    return str(SCORER_VERSION)


@lru_cache(maxsize=256)
def _affect_config(text: str) -> str | None:
    """A config of this scorer version must be one the scorer reads (the board loads it);
    every row of a score holds the same config, so each text is validated once."""
    from intima.affect.config import AffectConfig

    try:
        AffectConfig.model_validate_json(text)
    except ValidationError as exc:
        return _first_error(exc)
    except ValueError:
        return "is not JSON"
    return None


# -- own rows only --------------------------------------------------------------------------------
Rows = Mapping[str, Sequence[Mapping[str, Any]]]


def reference_problem(data: Rows) -> tuple[str, int, str] | None:
    """The first row (table, 1-based line, what) that names a run, response, prompt,
    configuration or judged content outside its own bundle; None if every one is inside."""
    own = _Own(data)
    for table, rows in data.items():
        for n, row in enumerate(rows, 1):
            if problem := own.problem(table, row):
                return table, n, problem
    return None


def partial_scores(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[Any, ...], list[str]]:
    """Each affect score (:func:`score_key`) among ``rows`` that lacks a category, with the
    categories it lacks. The scorer stores every category of a response in one transaction and
    the board derives each response's primary label from them, so a partial score is damage
    (or a crafted bundle), never a score in progress."""
    found: dict[tuple[Any, ...], set[Any]] = {}
    for row in rows:
        found.setdefault(score_key(row), set()).add(row.get("category"))
    return {
        key: missing
        for key, categories in found.items()
        if (missing := [c for c in CATEGORIES if c not in categories])
    }


def score_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The affect score an ``affect_scores`` row is part of."""
    return (row.get("response_id"), row.get("scorer_version"), row.get("config_key"))


def partial_score_problem(rows: Sequence[Mapping[str, Any]]) -> tuple[int, str] | None:
    """The first ``affect_scores`` row (1-based line, what) of a partial score, or None."""
    partial = partial_scores(rows)
    for n, row in enumerate(rows, 1):
        if missing := partial.get(score_key(row)):
            return n, (
                f"the affect score of response {str(row.get('response_id'))[:40]!r} has no row "
                f"for {', '.join(missing)} (a score has one row per category)"
            )
    return None


class _Own:
    """The keys a bundle holds, to check its references against."""

    def __init__(self, data: Rows) -> None:
        self.runs = {r.get("run_id"): r for r in data.get("runs", ())}
        self.keys = {r.get("config_key") for r in data.get("runs", ())}
        self.prompts = {r.get("prompt_id"): r for r in data.get("prompts", ())}
        self.responses = {r.get("response_id") for r in data.get("responses", ())}
        self.conversations = {
            r.get("run_id"): r.get("turns") for r in data.get("conversation_runs", ())
        }
        self._data = data
        self._hashes: set[str] | None = None

    def problem(self, table: str, row: Mapping[str, Any]) -> str | None:
        for column, known, what in self._references(table):
            if column in row and row[column] not in known:
                return f"{column} {str(row[column])[:40]!r} names no {what} of this bundle"
        return self._specific(table, row)

    def _references(self, table: str) -> Iterator[tuple[str, Any, str]]:
        if table != "runs":
            yield "run_id", self.runs, "run"
        if table not in ("responses", "prompts"):
            yield "response_id", self.responses, "response"
        if table != "prompts":
            yield "prompt_id", self.prompts, "prompt"
        if table == "responses":
            yield "config_key", self.keys, "run configuration"
        if table in ("conversation_turns", "simulated_user_messages"):
            yield "run_id", self.conversations, "conversation run"
            yield "conversation_id", self.prompts, "prompt"
        if table == "judgments":
            yield "content_hash", self.hashes(), "response (prompt and response text)"

    def _specific(self, table: str, row: Mapping[str, Any]) -> str | None:
        turns = self.conversations.get(row.get("run_id"))
        if table == "conversation_runs":
            return _conversation_config(self.runs.get(row.get("run_id"), {}), row.get("turns"))
        for column in ("turn", "after_turn"):
            value = row.get(column)
            if table.startswith(("conversation_", "simulated_")) and _past(value, turns):
                return f"{column} {value!r} is past its conversation's {turns} turns"
        return None

    def hashes(self) -> set[str]:
        """The content hash of every answered (prompt, response) of the bundle."""
        if self._hashes is None:
            from intima.core.ids import content_hash

            self._hashes = set()
            for r in self._data.get("responses", ()):
                prompt = self.prompts.get(r.get("prompt_id"))
                if prompt is not None and isinstance(r.get("text"), str):
                    context = prompt.get("context_json")
                    self._hashes.add(content_hash(str(prompt.get("text")), r["text"], context))
        return self._hashes


def _past(value: Any, turns: Any) -> bool:
    return isinstance(value, int) and isinstance(turns, int) and value > turns


def _conversation_config(run: Mapping[str, Any], turns: Any) -> str | None:
    """A run is a conversation only if its own configuration says so, with the same number
    of turns: a row of ``conversation_runs`` cannot move a single-prompt run off the board."""
    try:
        config = json.loads(run.get("config_json") or "{}")
    except (ValueError, RecursionError):
        config = {}
    said = config.get("conversation") if isinstance(config, dict) else None
    if not isinstance(said, dict) or said.get("turns") != turns:
        return "run_id names a run whose configuration is not a conversation of these turns"
    return None
