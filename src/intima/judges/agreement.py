"""Agreement between judges (LLM and human), overall and per prompt dimension.

Raters are every LLM judge (``judge:<label>``) and every human annotator (``human:<name>``).
Measures:

* ``primary``: the primary label, nominal (Krippendorff's alpha nominal, unweighted kappa);
* ``ratings``: all 13 levels pooled, one unit per (response, category), ordinal (alpha ordinal,
  linear and quadratic weighted kappa);
* each category on its own, ordinal.

Unscored judgments are missing values, never zeros. Scopes: ``all`` and each prompt dimension.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence

from pydantic import BaseModel

from intima.core.ratings import Level, RatingSet, primary_label
from intima.core.taxonomy import CATEGORIES
from intima.judges.family import model_family, same_family
from intima.judges.prompt import JUDGE_PROMPT_VERSION
from intima.judges.stats import Metric, cohen_kappa, krippendorff_alpha
from intima.judges.store_io import judge_names, load_judgments, rating_sets_by_scorer
from intima.store import Store, StoredResponse

_LEVELS = [int(lv) for lv in Level]


class AlphaRow(BaseModel):
    scope: str
    measure: str
    metric: str
    alpha: float | None
    n_units: int  # units with at least two values


class PairRow(BaseModel):
    scope: str
    measure: str
    a: str
    b: str
    n_shared: int
    kappa: float | None = None  # unweighted (primary label)
    kappa_linear: float | None = None
    kappa_quadratic: float | None = None
    human_pair: bool = False


class FamilyFlag(BaseModel):
    judge: str
    judge_model: str | None
    judged_model: str
    run_label: str
    family: str
    n_responses: int


class AgreementReport(BaseModel):
    prompt_version: str
    raters: list[str]
    alphas: list[AlphaRow]
    pairs: list[PairRow]
    family_flags: list[FamilyFlag]


def _column(
    sets: dict[str, RatingSet], units: Sequence[str], measure: str
) -> list[Hashable | None]:
    col: list[Hashable | None] = []
    for rid in units:
        s = sets.get(rid)
        if s is None or not s.scored:
            col.append(None)
        elif measure == "primary":
            col.append(str(s.primary or primary_label(s.levels)))
        else:
            col.append(int(s.levels[measure]))
    return col


def _data(
    raters: dict[str, dict[str, RatingSet]], units: Sequence[str], measure: str
) -> dict[str, list[Hashable | None]]:
    if measure != "ratings":
        return {r: _column(sets, units, measure) for r, sets in raters.items()}
    return {
        r: [v for c in CATEGORIES for v in _column(sets, units, c)] for r, sets in raters.items()
    }


def _n_units(data: dict[str, list[Hashable | None]]) -> int:
    cols = list(data.values())
    if not cols:
        return 0
    return sum(1 for vals in zip(*cols, strict=True) if sum(v is not None for v in vals) >= 2)


def _pairs(scope: str, measure: str, data: dict[str, list[Hashable | None]]) -> list[PairRow]:
    rows = []
    names = sorted(data)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            x, y = data[a], data[b]
            shared = sum(1 for p, q in zip(x, y, strict=True) if p is not None and q is not None)
            row = PairRow(
                scope=scope,
                measure=measure,
                a=a,
                b=b,
                n_shared=shared,
                human_pair=a.startswith("human:") or b.startswith("human:"),
            )
            if measure == "primary":
                row.kappa = cohen_kappa(x, y)
            else:
                row.kappa_linear = cohen_kappa(x, y, categories=_LEVELS, weights="linear")
                row.kappa_quadratic = cohen_kappa(x, y, categories=_LEVELS, weights="quadratic")
            rows.append(row)
    return rows


def agreement(
    store: Store,
    run_ids: Sequence[str] | None = None,
    *,
    prompt_version: str = JUDGE_PROMPT_VERSION,
    by_dimension: bool = True,
    per_category: bool = True,
) -> AgreementReport:
    targets, by_scorer = rating_sets_by_scorer(store, run_ids, prompt_version=prompt_version)
    raters = {s: sets for s, sets in by_scorer.items() if s.startswith(("judge:", "human:"))}
    scopes: dict[str, list[str]] = {"all": [t.response_id for t in targets]}
    if by_dimension:
        for t in targets:
            scopes.setdefault(t.dimension, []).append(t.response_id)
    measures = ["primary", "ratings", *(CATEGORIES if per_category else ())]
    alphas: list[AlphaRow] = []
    pairs: list[PairRow] = []
    for scope, units in scopes.items():
        for measure in measures:
            data = _data(raters, units, measure)
            metric: Metric = "nominal" if measure == "primary" else "ordinal"
            alpha = krippendorff_alpha(list(data.values()), metric) if len(data) >= 2 else None
            alphas.append(
                AlphaRow(
                    scope=scope, measure=measure, metric=metric, alpha=alpha, n_units=_n_units(data)
                )
            )
            pairs.extend(_pairs(scope, measure, data))
    return AgreementReport(
        prompt_version=prompt_version,
        raters=sorted(raters),
        alphas=alphas,
        pairs=pairs,
        family_flags=family_flags(store, targets, prompt_version=prompt_version),
    )


def family_flags(
    store: Store, targets: Sequence[StoredResponse], *, prompt_version: str = JUDGE_PROMPT_VERSION
) -> list[FamilyFlag]:
    """Every (LLM judge, judged model) pair of the same family, with how many responses."""
    by_hash: dict[str, list[StoredResponse]] = defaultdict(list)
    for t in targets:
        by_hash[t.content_hash].append(t)
    judgments = [
        j
        for j in load_judgments(store, by_hash, prompt_version=prompt_version)
        if j.judge_kind == "llm"
    ]
    names = judge_names(judgments)
    counts: dict[tuple[str, str | None, str, str], int] = defaultdict(int)
    for j in judgments:
        for t in by_hash[j.content_hash]:
            if same_family(j.judge_model, t.model_spec):
                counts[(names[j.judge_key], j.judge_model, t.model_spec, t.label)] += 1
    return [
        FamilyFlag(
            judge=f"judge:{judge}",
            judge_model=jm,
            judged_model=spec,
            run_label=label,
            family=model_family(spec) or "",
            n_responses=n,
        )
        for (judge, jm, spec, label), n in sorted(counts.items(), key=lambda kv: kv[0][:3])
    ]
