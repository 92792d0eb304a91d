"""``validate()``: measure scorers against an external labelled (or graded) set, the keyword
baseline beside them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from intima.core.config import ModelConfig
from intima.core.errors import ConfigError
from intima.core.escape import quoted
from intima.core.progress import OnProgress
from intima.store import Store
from intima.validate.graded import Aggregate, evaluate_graded
from intima.validate.labels import LabelledSet, load_labelled, parse_columns
from intima.validate.length import words
from intima.validate.output import check_out_dir, write_files
from intima.validate.report import evaluate, report_json, roc_points
from intima.validate.scorers import (
    KEYWORD,
    KEYWORD_VERSION,
    Scored,
    affect_fitted_on,
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
    report: dict[str, Any]  # see report.evaluate and graded.evaluate_graded


class ValidationResult(BaseModel):
    set_name: str
    set_sha256: str
    kind: str = "labels"  # "labels" (classes) or "graded"
    run_id: str
    by: list[str]
    options: str = ""  # what else changed the figures: "limit=6", "aggregate=max"
    #: the affect measure's shipped parameters were fitted on this very file
    in_sample: bool = False
    scorers: list[ScorerReport]
    files: list[str] = []


def load_set(
    labels: Path | str,
    *,
    columns: str | None = None,
    group: str | None = None,
    limit: int | None = None,
    by: Sequence[str] = (),
) -> LabelledSet:
    """Read and check the set and the ``by`` columns, touching no store (the CLI calls this
    before it opens one, so a bad file leaves no store behind)."""
    labelled = load_labelled(labels, parse_columns(columns), group=group, limit=limit)
    check_by(labelled, by)
    return labelled


def check_by(labelled: LabelledSet, by: Sequence[str]) -> None:
    missing = [c for c in by if c not in labelled.group_columns]
    if missing:
        raise ConfigError(
            f"--by {missing[0]!r}: not a column of {labelled.name}; "
            f"its columns are {', '.join(labelled.group_columns) or 'none'}"
        )
    if labelled.group is None:
        return
    for column in by:  # a conversation is one unit: it belongs to one group
        values: dict[str, set[str]] = {}
        for row in labelled.rows:
            values.setdefault(str(row.conversation), set()).add(row.groups.get(column, ""))
        split = next((c for c, v in values.items() if len(v) > 1), None)
        if split is not None:
            raise ConfigError(
                f"--by {quoted(column)}: conversation {quoted(split)} has several values "
                f"({', '.join(sorted(values[split])[:3])}); --by needs one per conversation"
            )


class ValidationSettings(BaseModel):
    """What :func:`validate` measures and how, apart from the set and where the report goes:
    the scorers (and judges) and the figures' grouping, aggregation, bootstrap and seed; the
    command builds it from its options, a notebook passes it."""

    model_config = ConfigDict(frozen=True)

    scorers: tuple[str, ...] = ("affect",)
    judges: tuple[ModelConfig, ...] = ()
    max_reasks: int | None = None
    #: Report per value of these columns of the set, beside "overall".
    by: tuple[str, ...] = ()
    #: How a conversation's turn scores meet its one grade (graded sets with a group column).
    aggregate: Aggregate = "mean"
    bootstrap: int = 1000
    seed: int = 0
    #: Where the set's labels came from (e.g. "each model judging its own answers"), shown on
    #: every card of the set.
    labels_from: str | None = None

    @field_validator("scorers")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [s for s in value if s not in SCORERS]
        if unknown:
            raise ValueError(
                f"unknown scorer {unknown[0]!r}: use {', '.join(SCORERS)} (LLM judges: "
                "--judge SPEC)"
            )
        return value


def validate(
    store: Store,
    labels: LabelledSet | Path | str,
    settings: ValidationSettings | None = None,
    *,
    columns: str | None = None,
    group: str | None = None,
    limit: int | None = None,
    out_dir: Path | None = None,
    on_progress: OnProgress | None = None,
) -> ValidationResult:
    """Import the set (once per file and column mapping), score its rows (the first ``limit``)
    with every scorer ``settings`` ask for (resuming), always with the keyword baseline beside
    them, store the reports and, given ``out_dir``, write ``report.json`` (and ``roc.png`` for
    labels).

    ``labels``: a path (read with ``columns``, ``group``, ``limit``) or a set from
    :func:`load_set`, which already carries them."""
    s = settings if settings is not None else ValidationSettings()
    if isinstance(labels, LabelledSet):
        if columns is not None or group is not None or limit is not None:
            raise ConfigError(
                "columns, group and limit are read with the set: pass them to load_set"
            )
        labelled = labels
        check_by(labelled, s.by)
    else:
        labelled = load_set(labels, columns=columns, group=group, limit=limit, by=s.by)
    if out_dir is not None:
        check_out_dir(out_dir)  # before any work: a refused folder costs nothing
    run_id = import_set(store, labelled)
    refs = references(store, labelled)
    outputs = _score(store, run_id, s, on_progress)
    options = _options(labelled, s.aggregate)
    in_sample = "affect" in outputs and labelled.sha256 in affect_fitted_on()
    lengths = {r.response_id: words(r.response) for r in store.responses([run_id])}
    reports = []
    for name, (version, scored) in outputs.items():
        if labelled.kind == "graded":
            report = evaluate_graded(
                refs, scored, s.by, aggregate=s.aggregate, b=s.bootstrap, seed=s.seed
            )
        else:
            report = evaluate(refs, scored, s.by, b=s.bootstrap, seed=s.seed, lengths=lengths)
        if name == "affect" and in_sample:
            report["in_sample"] = True
        if s.labels_from:
            report["labels_from"] = s.labels_from
        save_report(store, labelled, name, version, s.by, options, report)
        reports.append(ScorerReport(scorer=name, version=version, report=report))
    result = ValidationResult(
        set_name=labelled.name,
        set_sha256=labelled.sha256,
        kind=labelled.kind,
        run_id=run_id,
        by=list(s.by),
        options=options,
        in_sample=in_sample,
        scorers=reports,
    )
    if out_dir is not None:
        result.files = _write(out_dir, result, refs, outputs)
    return result


def _options(labelled: LabelledSet, aggregate: Aggregate) -> str:
    parts = [f"limit={labelled.limit}"] if labelled.limit else []
    if labelled.group is not None:
        parts.append(f"aggregate={aggregate}")
    return ",".join(parts)


def _score(
    store: Store, run_id: str, s: ValidationSettings, on_progress: OnProgress | None
) -> dict[str, tuple[str, dict[str, Scored]]]:
    """Every scorer on the run's responses: the run holds only the rows asked for (``limit``),
    so a judge or the affect measure never works on more."""
    out: dict[str, tuple[str, dict[str, Scored]]] = {}
    if s.judges:
        version, per_judge = judge_scores(
            store, run_id, s.judges, max_reasks=s.max_reasks, on_progress=on_progress
        )
        for name, scored in per_judge.items():
            out[name] = (f"judge-prompt-{version}", scored)
    if "affect" in s.scorers:
        out["affect"] = affect_scores(store, run_id, on_progress=on_progress)
    out[KEYWORD] = (KEYWORD_VERSION, keyword_scores(store.responses([run_id])))  # the floor
    return out


def _write(
    out_dir: Path,
    result: ValidationResult,
    refs: Sequence[Any],
    outputs: dict[str, tuple[str, dict[str, Scored]]],
) -> list[str]:
    files = {"report.json": report_json(result.model_dump(exclude={"files"}))}
    if result.kind == "labels":
        from intima.validate.metrics import roc_png

        curves = {}
        for rep in result.scorers:
            fpr, tpr = roc_points(refs, outputs[rep.scorer][1])
            curves[rep.scorer] = (fpr, tpr, rep.report["groups"]["overall"]["auroc"])
        title = f"{result.set_name}: reinforcing vs boundary"
        files["roc.png"] = roc_png(curves, title=title)
    return write_files(out_dir, files)
