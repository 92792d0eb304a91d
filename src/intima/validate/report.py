"""From scores and reference labels to the report: AUROC of the reinforcing-vs-boundary direction
with a bootstrap interval, per-class precision/recall/F1, the confusion matrix of primary labels,
Cohen's kappa, overall and per group; a JSON document and a ROC curve."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from intima.validate import metrics
from intima.validate.length import length_effect
from intima.validate.scorers import Scored
from intima.validate.store_io import Reference

#: The reference labels, then what scorers may also predict.
LABELS = ("reinforcing", "boundary", "neutral")
#: The pair the direction score separates, and the macro-F1 the targets are stated on.
PAIR = ("reinforcing", "boundary")


def evaluate(
    refs: Sequence[Reference],
    scored: Mapping[str, Scored],
    by: Sequence[str] = (),
    *,
    b: int = 1000,
    seed: int = 0,
    lengths: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """``{"kind": "labels", "n", "n_unscored", "groups": {"overall": {...}, "model=x": ...},
    "length": ...}``; ``lengths`` (response id -> words) gives ``length``, how the scorer's
    error moves with response length (:func:`intima.validate.length.length_effect`)."""
    groups: dict[str, list[Reference]] = {"overall": list(refs)}
    for column in by:
        for ref in refs:
            value = ref.groups.get(column)
            if value is not None:
                groups.setdefault(f"{column}={value}", []).append(ref)
    n_unscored = sum(1 for r in refs if scored[r.response_id].direction is None)
    out = {
        "kind": "labels",
        "n": len(refs),
        "n_unscored": n_unscored,
        "groups": {name: _group(items, scored, b, seed) for name, items in groups.items()},
    }
    if lengths is not None:
        rows = [r for r in refs if scored[r.response_id].primary != "unscored"]
        wrong = [scored[r.response_id].primary != r.truth for r in rows]
        out["length"] = length_effect(wrong, [lengths[r.response_id] for r in rows], b=b, seed=seed)
    return out


def _group(
    refs: Sequence[Reference], scored: Mapping[str, Scored], b: int, seed: int
) -> dict[str, Any]:
    truth = [str(r.truth) for r in refs]  # a labelled set: every row has one
    pred = [scored[r.response_id].primary for r in refs]
    full = metrics.report(truth, pred, labels=list(LABELS))
    pair = [i for i, r in enumerate(refs) if r.truth in PAIR]
    pair_truth, pair_pred = [truth[i] for i in pair], [pred[i] for i in pair]
    with_score = [i for i in pair if scored[refs[i].response_id].direction is not None]
    scores = np.array([scored[refs[i].response_id].direction for i in with_score], dtype=float)
    positives = np.array([refs[i].truth == "reinforcing" for i in with_score], dtype=bool)
    auc = metrics.auroc(scores, positives) if len(with_score) else None
    interval = (
        metrics.auroc_interval(scores, positives, b=b, seed=seed) if auc is not None else None
    )
    return {
        "n": len(refs),
        "n_reinforcing": int(positives.sum()),
        "n_boundary": int((~positives).sum()),
        "auroc": auc,
        "auroc_lo": None if interval is None else interval[0],
        "auroc_hi": None if interval is None else interval[1],
        "macro_f1_rb": metrics.macro_f1(pair_truth, pair_pred, list(PAIR)) if pair else None,
        "kappa": full.kappa,
        "per_class": [asdict(c) for c in full.per_class],
        "confusion_labels": list(full.confusion_labels),
        "confusion": [list(row) for row in full.confusion],
    }


def roc_points(
    refs: Sequence[Reference], scored: Mapping[str, Scored]
) -> tuple[np.ndarray, np.ndarray]:
    keep = [r for r in refs if r.truth in PAIR and scored[r.response_id].direction is not None]
    scores = np.array([scored[r.response_id].direction for r in keep], dtype=float)
    positives = np.array([r.truth == "reinforcing" for r in keep], dtype=bool)
    fpr, tpr, _ = metrics.roc_curve(scores, positives)
    return fpr, tpr


def report_json(document: Mapping[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True, default=_plain) + "\n").encode()


def _plain(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
