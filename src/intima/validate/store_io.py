"""An external labelled set inside the store: a run that no benchmark view includes, its
responses as stored responses (so every scorer's pipeline, cache and resume apply), and the
references (labels or grades) and reports in the validation tables."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from intima.core.ids import content_id
from intima.core.taxonomy import dimension_of
from intima.core.version import __version__
from intima.dataset.types import UNKNOWN, DatasetInfo, Prompt, Turn
from intima.store import ResponseRecord, RunRecord, Store, StoredResponse, now, response_id_for
from intima.store.db import VALIDATION_PREFIX
from intima.validate.labels import LabelledSet, Truth

#: The provider name of an imported set's run: its responses were written elsewhere.
EXTERNAL = "external"
#: A graded report's overall figures in the board's headline.
GRADED_HEADLINE = ("spearman", "spearman_lo", "spearman_hi", "kendall", "kendall_lo", "kendall_hi")


class Reference:
    """One imported response with its reference (a label or a grade) and group columns."""

    __slots__ = ("conversation", "grade", "groups", "response_id", "row_id", "truth")

    def __init__(
        self,
        response_id: str,
        row_id: str,
        truth: Truth | None,
        groups: Mapping[str, str],
        grade: float | None = None,
        conversation: str | None = None,
    ) -> None:
        self.response_id, self.row_id, self.truth = response_id, row_id, truth
        self.groups = dict(groups)
        self.grade, self.conversation = grade, conversation


def import_set(store: Store, labelled: LabelledSet) -> str:
    """Store the set once and return the run id of its (first ``limit``) rows.

    The set is keyed by :attr:`LabelledSet.key` (the file's hash and the column mapping), so
    another mapping of the same file is another set; re-importing changes nothing, so scores and
    judgments are reused. Runs of one set with different limits share its responses."""
    key = labelled.key
    config_key = content_id("validation", key, length=32)
    run_id = content_id("validation-run", key, str(labelled.limit or "all"), length=16)
    prompts = [_prompt(key, r.row_id, r.prompt, r.code, r.context) for r in labelled.rows]
    info = DatasetInfo(
        dataset_id=VALIDATION_PREFIX + labelled.name,
        source=labelled.source,
        revision=None,
        sha256=labelled.sha256,
        variant="file",
        n_prompts=len(prompts),
    )
    how = {"kind": labelled.kind, "columns": labelled.columns, "group": labelled.group}
    record = RunRecord(
        run_id=run_id,
        label=f"{VALIDATION_PREFIX}{labelled.name}",
        model_spec=EXTERNAL,
        provider=EXTERNAL,
        model_name="",
        config_key=config_key,
        config_json=json.dumps(
            {
                "validation_set": labelled.name,
                "sha256": labelled.sha256,
                "set_key": key,
                **how,
                "limit": labelled.limit,
            }
        ),
        dataset=info,
        dataset_fingerprint=key,
        n_prompts=len(prompts),
        status="complete",
    )
    store.ensure_run(record, prompts)
    ids = [response_id_for(config_key, p.prompt_id) for p in prompts]
    store.record_responses(
        [
            ResponseRecord(
                response_id=rid,
                config_key=config_key,
                prompt_id=p.prompt_id,
                status="ok",
                text=row.response,
                served_by=EXTERNAL,
            )
            for rid, p, row in zip(ids, prompts, labelled.rows, strict=True)
        ]
    )
    with store.transaction() as conn:
        conn.executemany(
            "INSERT OR IGNORE INTO validation_labels (response_id, set_key, set_sha256, row_id, "
            "label, grade, conversation, groups_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    rid,
                    key,
                    labelled.sha256,
                    row.row_id,
                    row.truth,
                    row.grade,
                    row.conversation,
                    json.dumps(row.groups, sort_keys=True),
                )
                for rid, row in zip(ids, labelled.rows, strict=True)
            ],
        )
    return run_id


def judge_targets(labelled: LabelledSet) -> list[StoredResponse]:
    """The set's rows as a judge reads them once imported, without importing them: what
    ``validate -j --dry-run`` counts (their content hashes are the imported rows')."""
    key = labelled.key
    config_key = content_id("validation", key, length=32)
    out = []
    for row in labelled.rows:
        p = _prompt(key, row.row_id, row.prompt, row.code, row.context)
        out.append(
            StoredResponse(
                response_id=response_id_for(config_key, p.prompt_id),
                run_id="",
                label=labelled.name,
                model_spec=EXTERNAL,
                prompt_id=p.prompt_id,
                code=p.code,
                dimension=str(p.dimension),
                prompt=p.text,
                response=row.response,
                context=p.context_json,
            )
        )
    return out


def _prompt(key: str, row_id: str, text: str, code: str, context: tuple[Turn, ...]) -> Prompt:
    # One prompt per row, even when two rows share a conversation: each row is its own item.
    return Prompt(
        prompt_id=content_id("validation", key, row_id, length=24),
        text=text,
        code=code,
        dimension=UNKNOWN if code == UNKNOWN else dimension_of(code),
        context=context,
    )


def references(store: Store, labelled: LabelledSet) -> list[Reference]:
    """The stored references of the set's rows (its first ``limit`` rows), in file order."""
    wanted = {r.row_id for r in labelled.rows}
    rows = store.query(
        "SELECT response_id, row_id, label, groups_json, grade, conversation "
        "FROM validation_labels WHERE set_key = ? ORDER BY rowid",
        (labelled.key,),
    )
    return [
        Reference(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows if r[1] in wanted
    ]


def save_report(
    store: Store,
    labelled: LabelledSet,
    scorer: str,
    scorer_version: str,
    by_columns: Sequence[str],
    options: str,
    report: Mapping[str, object],
) -> None:
    """Store one report, replacing only the one of the same set, scorer, grouping and
    ``options`` (what else changes the figures: ``limit=N``, ``aggregate=max``)."""
    with store.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO validation_reports (set_key, set_sha256, set_name, scorer, "
            "scorer_version, by_columns, options, n, report_json, package_version, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                labelled.key,
                labelled.sha256,
                labelled.name,
                scorer,
                scorer_version,
                ",".join(by_columns),
                options,
                report["n"],
                json.dumps(report, sort_keys=True),
                __version__,
                now(),
            ),
        )


def stored_reports(store: Store) -> list[dict[str, object]]:
    """Every stored validation report's headline, for the leaderboard's methodology."""
    rows = store.query(
        "SELECT set_name, set_sha256, scorer, scorer_version, by_columns, options, n, "
        "report_json, package_version, created_at FROM validation_reports "
        "ORDER BY set_name, scorer, options"
    )
    out = []
    for r in rows:
        try:
            report = json.loads(r["report_json"])
        except ValueError:  # a damaged row is left out of the headline, not a crash
            continue
        overall = report.get("groups", {}).get("overall", {})
        out.append(
            {
                "set": r["set_name"],
                "set_sha256": r["set_sha256"],
                "scorer": r["scorer"],
                "scorer_version": r["scorer_version"],
                "n": r["n"],
                "kind": report.get("kind", "labels"),
                "in_sample": bool(report.get("in_sample")),
                "options": r["options"],
                "auroc": overall.get("auroc"),
                "auroc_lo": overall.get("auroc_lo"),
                "auroc_hi": overall.get("auroc_hi"),
                "macro_f1": overall.get("macro_f1_rb"),
                "kappa": overall.get("kappa"),
                **{k: overall.get(k) for k in GRADED_HEADLINE},
                "package_version": r["package_version"],
                "created_at": r["created_at"],
            }
        )
    return out
