"""``validate()``: measure scorers against an external labelled set, keyword baseline beside."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from intima.core.config import ModelConfig
from intima.core.errors import ConfigError
from intima.core.progress import OnProgress
from intima.store import Store
from intima.validate.labels import LabelledSet, load_labelled, parse_columns
from intima.validate.report import evaluate, roc_points, write_json
from intima.validate.scorers import (
    KEYWORD,
    KEYWORD_VERSION,
    Scored,
    affect_scores,
    judge_scores,
    keyword_scores,
)
from intima.validate.store_io import import_set, references, save_report

SCORERS = ("affect", KEYWORD)


class ScorerReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    scorer: str
    version: str
    report: dict[str, Any]  # see report.evaluate


class ValidationResult(BaseModel):
    set_name: str
    set_sha256: str
    run_id: str
    by: list[str]
    scorers: list[ScorerReport]
    files: list[str] = []


def validate(
    store: Store,
    labels: Path | str,
    *,
    scorers: Sequence[str] = ("affect",),
    judges: Sequence[ModelConfig] = (),
    columns: str | None = None,
    by: Sequence[str] = (),
    limit: int | None = None,
    out_dir: Path | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    max_reasks: int | None = None,
    on_progress: OnProgress | None = None,
) -> ValidationResult:
    """Import the set (once), score it with every scorer asked for (resuming), always with the
    keyword baseline beside them, store the reports and, given ``out_dir``, write
    ``report.json`` and ``roc.png``."""
    unknown = [s for s in scorers if s not in SCORERS]
    if unknown:
        raise ConfigError(
            f"unknown scorer {unknown[0]!r}: use {', '.join(SCORERS)} (LLM judges: --judge SPEC)"
        )
    labelled = _limited(load_labelled(labels, parse_columns(columns)), limit)
    missing = [c for c in by if c not in labelled.group_columns]
    if missing:
        raise ConfigError(
            f"--by {missing[0]!r}: not a column of {labelled.name}; "
            f"its columns are {', '.join(labelled.group_columns) or 'none'}"
        )
    run_id = import_set(store, labelled)
    # With --limit only the first rows are imported and reported, though an earlier run may
    # have imported more of the same file.
    wanted = {r.row_id for r in labelled.rows}
    refs = [r for r in references(store, labelled.sha256) if r.row_id in wanted]
    keep = {r.response_id for r in refs}
    responses = [r for r in store.responses([run_id]) if r.response_id in keep]
    outputs = _score(store, run_id, responses, scorers, judges, max_reasks, on_progress)
    reports = []
    for name, (version, scored) in outputs.items():
        report = evaluate(refs, scored, by, b=bootstrap, seed=seed)
        save_report(store, labelled, name, version, by, len(refs), report)
        reports.append(ScorerReport(scorer=name, version=version, report=report))
    result = ValidationResult(
        set_name=labelled.name, set_sha256=labelled.sha256, run_id=run_id, by=list(by),
        scorers=reports,
    )  # fmt: skip
    if out_dir is not None:
        result.files = _write(out_dir, result, refs, outputs)
    return result


def _limited(labelled: LabelledSet, limit: int | None) -> LabelledSet:
    if limit is None:
        return labelled
    if limit < 1:
        raise ConfigError(f"--limit must be at least 1, not {limit}")
    return labelled.model_copy(update={"rows": labelled.rows[:limit]})


def _score(
    store: Store,
    run_id: str,
    responses: Sequence[Any],
    scorers: Sequence[str],
    judges: Sequence[ModelConfig],
    max_reasks: int | None,
    on_progress: OnProgress | None,
) -> dict[str, tuple[str, dict[str, Scored]]]:
    out: dict[str, tuple[str, dict[str, Scored]]] = {}
    if judges:
        version, per_judge = judge_scores(
            store, run_id, judges, max_reasks=max_reasks, on_progress=on_progress
        )
        for name, scored in per_judge.items():
            out[name] = (f"judge-prompt-{version}", scored)
    if "affect" in scorers:
        out["affect"] = affect_scores(store, run_id, on_progress=on_progress)
    out[KEYWORD] = (KEYWORD_VERSION, keyword_scores(responses))  # always: the floor
    return out


def _write(
    out_dir: Path,
    result: ValidationResult,
    refs: Sequence[Any],
    outputs: dict[str, tuple[str, dict[str, Scored]]],
) -> list[str]:
    from intima.validate.metrics import plot_roc

    report_path = out_dir / "report.json"
    write_json(report_path, result.model_dump(exclude={"files"}))
    curves = {}
    for rep in result.scorers:
        fpr, tpr = roc_points(refs, outputs[rep.scorer][1])
        curves[rep.scorer] = (fpr, tpr, rep.report["groups"]["overall"]["auroc"])
    roc_path = plot_roc(
        curves, out_dir / "roc.png", title=f"{result.set_name}: reinforcing vs boundary"
    )
    return [str(report_path), str(roc_path)]
