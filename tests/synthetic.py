"""Synthetic leaderboard data for tests, demos of the layout and the build benchmark.

Nothing here is a result: configurations are named ``synthetic-<i>`` and every response says
it is synthetic. Each configuration has its own propensity to reinforce companionship, so
rankings and intervals have something to show.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from intima.core.ratings import Level, RatingSet, combine_panel, primary_label
from intima.core.taxonomy import CATEGORIES, CODE_DIMENSION, PARENT_BEHAVIOUR, Behaviour, Dimension
from intima.results.data import BoardData, BoardRun, Methodology
from intima.store import Store, StoredResponse, response_id_for

_TOP = tuple(str(b) for b in Behaviour)


def synthetic_board(
    n_configs: int = 3,
    n_prompts: int = 62,
    n_judges: int = 3,
    *,
    seed: int = 0,
    unscored_rate: float = 0.02,
    panel: bool = True,
    extra_response: str | None = None,
) -> BoardData:
    """``n_configs`` x ``n_prompts`` responses rated by ``n_judges`` judges (+ a panel).

    ``extra_response`` replaces the text of the first response (to test escaping).
    """
    rng = np.random.default_rng(seed)
    codes = list(CODE_DIMENSION)
    prompts = [(f"sp{i:04d}", codes[i % len(codes)]) for i in range(n_prompts)]
    runs: list[BoardRun] = []
    responses: list[StoredResponse] = []
    sets: list[RatingSet] = []
    sub_index = {c: i for i, c in enumerate(CATEGORIES)}
    for c in range(n_configs):
        run_id = hashlib.sha256(f"synthetic-run-{c}".encode()).hexdigest()[:32]
        label = f"synthetic-{c}"
        spec = f"synthetic:model-{c}"
        runs.append(
            BoardRun(
                run_id,
                label,
                spec,
                None,
                "synthetic",
                None,
                "0" * 64,
                "synthetic",
            )
        )
        p_reinf = 0.2 + 0.6 * (c / max(n_configs - 1, 1))
        for pid, code in prompts:
            rid = response_id_for(_config_key(run_id), pid)
            text = f"Synthetic response {c}/{pid}: a reply about {code}, for layout only."
            if extra_response is not None and not responses:
                text = extra_response
            responses.append(
                StoredResponse(
                    rid,
                    run_id,
                    label,
                    spec,
                    pid,
                    code,
                    str(CODE_DIMENSION[code]),
                    f"Synthetic prompt {pid} on {code}.",
                    text,
                )
            )
            judged = []
            for j in range(n_judges):
                scorer = f"judge:synthetic-judge-{j}"
                if rng.random() < unscored_rate:
                    judged.append(
                        RatingSet(
                            scorer=scorer,
                            response_id=rid,
                            status="unscored",
                            reason="synthetic parse failure",
                        )
                    )
                    continue
                levels = _levels(rng, p_reinf, sub_index)
                judged.append(
                    RatingSet(
                        scorer=scorer,
                        response_id=rid,
                        status="scored",
                        levels=levels,
                        primary=primary_label(levels),
                        reason=f"synthetic rationale of judge {j}",
                    )
                )
            sets.extend(judged)
            if panel and n_judges >= 2:
                sets.append(combine_panel(judged, scorer="panel"))
    return BoardData(
        tuple(runs), tuple(responses), tuple(sets), Methodology(datasets=("synthetic",))
    )


def _config_key(run_id: str) -> str:
    return hashlib.sha256(run_id.encode()).hexdigest()


def _levels(
    rng: np.random.Generator, p_reinf: float, sub_index: dict[str, int]
) -> dict[str, Level]:
    draws = rng.random(len(CATEGORIES))
    levels: dict[str, Level] = {}
    for cat, i in sub_index.items():
        if cat in _TOP:
            continue
        parent = str(PARENT_BEHAVIOUR[cat])  # type: ignore[index]
        p = p_reinf if parent == _TOP[0] else (1 - p_reinf) * 0.6
        u = draws[i]
        levels[cat] = Level.HIGH if u < p * 0.4 else Level.MEDIUM if u < p else Level.LOW
    parents = {cat: str(PARENT_BEHAVIOUR[cat]) for cat in levels}  # type: ignore[index]
    for top in _TOP:
        # A top-level behaviour is at least as high as its strongest sub-behaviour.
        levels[top] = max(lv for cat, lv in list(levels.items()) if parents.get(cat) == top)
    return levels


def write_store(store: Store, data: BoardData) -> None:
    """Write synthetic board data into a real store through the project's write paths.

    Runs, prompts and responses go through :class:`~intima.store.db.Store`; judge ratings through
    :func:`intima.judges.store_io.write_judgments` (the panel is recomputed on load, as for real
    judges). Other scorers' sets (affect) are not written here.
    """
    from intima.dataset import DatasetInfo, Prompt
    from intima.judges.prompt import JUDGE_PROMPT_VERSION, content_hash
    from intima.judges.store_io import JudgmentRecord, write_judgments
    from intima.store import ResponseRecord, RunRecord

    by_run: dict[str, list[StoredResponse]] = {}
    for r in data.responses:
        by_run.setdefault(r.run_id, []).append(r)
    resp_by_id = {r.response_id: r for r in data.responses}
    for run in data.runs:
        rows = by_run.get(run.run_id, [])
        prompts = [
            Prompt(
                prompt_id=r.prompt_id, text=r.prompt, code=r.code, dimension=Dimension(r.dimension)
            )
            for r in rows
        ]
        info = DatasetInfo(
            dataset_id=run.dataset_id,
            source="synthetic",
            revision=None,
            sha256=run.dataset_sha256,
            variant="file",
            n_prompts=len(rows),
        )
        config_key = _config_key(run.run_id)
        store.ensure_run(
            RunRecord(
                run_id=run.run_id,
                label=run.label,
                model_spec=run.model_spec,
                provider="synthetic",
                model_name=run.model_spec,
                config_key=config_key,
                config_json=json.dumps(
                    {"spec": run.model_spec, "system_prompt": run.system_prompt}
                ),
                dataset=info,
                dataset_fingerprint="synthetic",
                n_prompts=len(rows),
                status="complete",
            ),
            prompts,
        )
        store.record_responses(
            [
                ResponseRecord(
                    response_id=response_id_for(config_key, r.prompt_id),
                    config_key=config_key,
                    prompt_id=r.prompt_id,
                    status="ok",
                    text=r.response,
                )
                for r in rows
            ]
        )
    records = []
    for rs in data.rating_sets:
        if not rs.scorer.startswith("judge:"):
            continue
        r = resp_by_id[rs.response_id]
        name = rs.scorer.removeprefix("judge:")
        records.append(
            JudgmentRecord(
                content_hash=content_hash(r.prompt, r.response),
                judge_key=f"synthetic:{name}",
                judge_kind="llm",
                judge_label=name,
                judge_model=name,
                prompt_version=JUDGE_PROMPT_VERSION,
                prompt_sha256="synthetic",
                status="scored" if rs.scored else "unscored",
                ratings={c: lv.label for c, lv in rs.levels.items()} if rs.scored else None,
                primary=None if rs.primary is None else str(rs.primary),
                rationale=rs.reason if rs.scored else None,
                reason=None if rs.scored else rs.reason,
            )
        )
    write_judgments(store, records)
