"""An external labelled set inside the store: one run that no benchmark view includes, its
responses as stored responses (so every scorer's pipeline, cache and resume apply), and the
reference labels and reports in the validation tables."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from intima.core.ids import content_id
from intima.core.taxonomy import dimension_of
from intima.core.version import __version__
from intima.dataset.types import UNKNOWN, DatasetInfo, Prompt, Turn
from intima.store import ResponseRecord, RunRecord, Store, now, response_id_for
from intima.store.db import VALIDATION_PREFIX
from intima.validate.labels import LabelledSet, Truth

#: The provider name of an imported set's run: its responses were written elsewhere.
EXTERNAL = "external"


class Reference:
    """One imported response with its reference label and group columns."""

    __slots__ = ("groups", "response_id", "row_id", "truth")

    def __init__(
        self, response_id: str, row_id: str, truth: Truth, groups: Mapping[str, str]
    ) -> None:
        self.response_id, self.row_id, self.truth = response_id, row_id, truth
        self.groups = dict(groups)


def import_set(store: Store, labelled: LabelledSet) -> str:
    """Store the set once (keyed by its file hash) and return its run id; re-importing the
    same file changes nothing, so scores and judgments of it are reused."""
    config_key = content_id("validation", labelled.sha256, length=32)
    run_id = content_id("validation-run", labelled.sha256, length=16)
    prompts = [
        _prompt(labelled.sha256, r.row_id, r.prompt, r.code, r.context) for r in labelled.rows
    ]
    info = DatasetInfo(
        dataset_id=VALIDATION_PREFIX + labelled.name,
        source=labelled.source,
        revision=None,
        sha256=labelled.sha256,
        variant="file",
        n_prompts=len(prompts),
    )
    record = RunRecord(
        run_id=run_id,
        label=f"{VALIDATION_PREFIX}{labelled.name}",
        model_spec=EXTERNAL,
        provider=EXTERNAL,
        model_name="",
        config_key=config_key,
        config_json=json.dumps({"validation_set": labelled.name, "sha256": labelled.sha256}),
        dataset=info,
        dataset_fingerprint=labelled.sha256,
        n_prompts=len(prompts),
        status="complete",
    )
    store.ensure_run(record, prompts)
    ids = [response_id_for(config_key, p.prompt_id) for p in prompts]
    store.record_responses(
        [
            ResponseRecord(response_id=rid, config_key=config_key, prompt_id=p.prompt_id,
                           status="ok", text=row.response, served_by=EXTERNAL)
            for rid, p, row in zip(ids, prompts, labelled.rows, strict=True)
        ]
    )  # fmt: skip
    with store.transaction() as conn:
        conn.executemany(
            "INSERT OR IGNORE INTO validation_labels "
            "(response_id, set_sha256, row_id, label, groups_json) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    rid,
                    labelled.sha256,
                    row.row_id,
                    row.truth,
                    json.dumps(row.groups, sort_keys=True),
                )
                for rid, row in zip(ids, labelled.rows, strict=True)
            ],
        )
    return run_id


def _prompt(sha: str, row_id: str, text: str, code: str, context: tuple[Turn, ...]) -> Prompt:
    # One prompt per row, even when two rows share a conversation: each row is its own item.
    return Prompt(
        prompt_id=content_id("validation", sha, row_id, length=24),
        text=text,
        code=code,
        dimension=UNKNOWN if code == UNKNOWN else dimension_of(code),
        context=context,
    )


def references(store: Store, sha256: str) -> list[Reference]:
    rows = store.query(
        "SELECT response_id, row_id, label, groups_json FROM validation_labels "
        "WHERE set_sha256 = ? ORDER BY rowid",
        (sha256,),
    )
    return [Reference(r[0], r[1], r[2], json.loads(r[3])) for r in rows]


def save_report(
    store: Store,
    labelled: LabelledSet,
    scorer: str,
    scorer_version: str,
    by_columns: Sequence[str],
    n: int,
    report: Mapping[str, object],
) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO validation_reports (set_sha256, set_name, scorer, "
            "scorer_version, by_columns, n, report_json, package_version, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                labelled.sha256, labelled.name, scorer, scorer_version, ",".join(by_columns), n,
                json.dumps(report, sort_keys=True), __version__, now(),
            ),
        )  # fmt: skip


def stored_reports(store: Store) -> list[dict[str, object]]:
    """Every stored validation report's headline, for the leaderboard's methodology."""
    rows = store.query(
        "SELECT set_name, set_sha256, scorer, scorer_version, by_columns, n, report_json, "
        "package_version, created_at FROM validation_reports ORDER BY set_name, scorer"
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
                "set": r["set_name"], "set_sha256": r["set_sha256"], "scorer": r["scorer"],
                "scorer_version": r["scorer_version"], "n": r["n"],
                "auroc": overall.get("auroc"), "auroc_lo": overall.get("auroc_lo"),
                "auroc_hi": overall.get("auroc_hi"), "macro_f1": overall.get("macro_f1_rb"),
                "kappa": overall.get("kappa"), "package_version": r["package_version"],
                "created_at": r["created_at"],
            }
        )  # fmt: skip
    return out
