"""Validation cards: what each scorer was validated on, and how well.

Two sources, one shape (:class:`Card`):

* **shipped**: the affect measure's own figures, ``intima/data/affect_validation.json``, keyed
  by scorer version and written by ``benchmarks/affect_card.py`` (leave-one-model-out on the
  dev set, Spearman on the graded set): never typed by hand. Only the entry of the affect
  version this package scores with is shown.
* **store**: every report ``intima validate`` stored (``validation_reports``): class reports
  (confusion, AUROC) and graded ones (Spearman).

A card whose version differs from the version the board's scores were made with is kept out:
it validated another scorer. The corrected-share diagnostic (:mod:`intima.results.corrected`,
benchmarks only: the board shows no corrected share) uses the card with the most labelled rows
that has a confusion matrix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from intima.results.corrected import CORRECTABLE, ErrorRates, error_rates
from intima.store import Store

CARD_FILE: Final = "affect_validation.json"
#: Where the methods are written up (shown beside every card).
METHOD_DOCS: Final = {
    "affect": "docs/affect.md (5. Validation) and docs/leaderboard.md (How far each scorer can "
    "be trusted)",
}
#: Where the labels of sets known by hash came from (the shipped card's set among them).
KNOWN_LABELS: Final = {
    "f7b102b42be7fde7839ee6947944a5452ff9d58c7e1ecbf515d5608e3bc690aa": "labels written by each "
    "model judging its own answers (one LLM judge per model, a three-way label)",
}
DEFAULT_METHOD: Final = "docs/leaderboard.md (How far each scorer can be trusted)"


class Graded(BaseModel):
    """A scorer's reinforcing score against graded intensity (e.g. 1-10)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    set_name: str
    set_sha256: str
    n: int
    spearman: float | None


class Card(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    scorer: str
    version: str
    source: Literal["shipped", "store"]
    set_name: str
    set_sha256: str
    n: int
    protocol: str
    auroc: float | None = None
    auroc_lo: float | None = None
    auroc_hi: float | None = None
    #: group (e.g. model) -> AUROC on it
    auroc_by_group: dict[str, float | None] = {}
    #: what the groups are: held out (the shipped card's figures, each model's rows scored by
    #: a measure fitted on the others) or only split (``intima validate --by model``)
    groups_title: str = "AUROC per held-out model"
    macro_f1: float | None = None
    kappa: float | None = None
    #: rows truth, columns predicted (validate.report's confusion); empty for a graded card
    confusion_labels: list[str] = []
    confusion: list[list[int]] = []
    graded: Graded | None = None
    method: str = DEFAULT_METHOD
    #: measured on the rows the scorer was fitted on (optimistic): shown, never used to correct
    in_sample: bool = False
    #: where the set's labels came from (``intima validate --labels-from``), if said
    labels_from: str | None = None
    #: how the scorer's error moves with response length (intima.validate.length), if measured
    length: dict[str, Any] | None = None

    @property
    def labels_source(self) -> str:
        return self.labels_from or KNOWN_LABELS.get(self.set_sha256, "labels of unstated origin")

    @property
    def name(self) -> str:
        return f"{self.set_name} (sha256 {self.set_sha256[:12]}, n={self.n}, {self.protocol})"

    def error_rates(self) -> dict[str, ErrorRates]:
        out = {}
        for label in CORRECTABLE:
            rates = error_rates(self.confusion_labels, self.confusion, label)
            if rates is not None:
                out[label] = rates
        return out

    def facts(self) -> list[tuple[str, str]]:
        """What the card measured, as (what, value) pairs in the order every view shows them:
        the site's and the app's card (``leaderboard.validity_view``) and :meth:`summary`."""
        out = [("Set", self.name), ("Labels", self.labels_source)]
        if self.auroc is not None:
            auc = f"{self.auroc:.3f}"
            if self.auroc_lo is not None and self.auroc_hi is not None:
                auc += f" [{self.auroc_lo:.3f}, {self.auroc_hi:.3f}]"
            out.append(("AUROC reinforcing vs boundary", auc))
        if self.auroc_by_group:
            groups = ", ".join(f"{k} {_num(v)}" for k, v in sorted(self.auroc_by_group.items()))
            out.append((self.groups_title, groups))
        if self.macro_f1 is not None:
            out.append(("macro-F1", f"{self.macro_f1:.3f}"))
        if self.kappa is not None:
            out.append(("kappa", f"{self.kappa:.3f}"))
        for label, r in self.error_rates().items():  # every label's, not only reinforcing's
            if r.n_pos and r.n_neg:
                rates = f"recall {r.recall:.3f} ({r.tp}/{r.n_pos}), false positives "
                out.append((f"Error rates: {label}", rates + f"{r.fpr:.3f} ({r.fp}/{r.n_neg})"))
        if self.length:
            from intima.validate.length import length_note

            out.append(("Error vs response length", length_note(self.length)))
        if self.graded is not None:
            g = self.graded
            graded = f"{_num(g.spearman)} on {g.set_name} (sha256 {g.set_sha256[:12]}, n={g.n})"
            out.append(("Spearman", graded))
        return out

    def summary(self) -> str:
        """One line of :meth:`facts` (the methodology's list of every card)."""
        parts = [f"{self.scorer} ({self.version}) on {self.name}", self.labels_source]
        parts += [f"{k} {v}" for k, v in self.facts()[2:]]
        return "; ".join(parts)


#: An AUROC interval at least this wide says too little to call a scorer validated (issue 31).
MAX_AUROC_WIDTH: Final = 0.2
#: Fewest graded rows for a Spearman to grade a scorer on.
MIN_GRADED_ROWS: Final = 30
#: The baseline every class card is held against (``intima validate`` stores it beside each).
BASELINE_SCORER: Final = "keyword"
GradeWord = Literal["validated", "failed", "too small"]


def grade(card: Card, cards: Iterable[Card] = ()) -> tuple[GradeWord, str]:
    """How good, not only that: ``validated``, ``failed`` (below the keyword baseline on the
    same set, or no better than chance) or ``too small`` (an AUROC interval 0.2 wide or
    more, of zero width, or missing), with the reason in a sentence."""
    if card.graded is not None and card.auroc is None:
        rho, n = card.graded.spearman, card.graded.n
        if rho is None or n < MIN_GRADED_ROWS:
            return "too small", f"{n} graded rows; a Spearman needs at least {MIN_GRADED_ROWS}"
        if rho <= 0:
            return "failed", f"Spearman {rho:.3f}: no better than chance"
        return "validated", f"Spearman {rho:.3f} on {n} graded rows"
    lo, hi = card.auroc_lo, card.auroc_hi
    if card.auroc is None or lo is None or hi is None or hi - lo <= 0:
        shown = "no AUROC interval" if lo is None or hi is None else f"[{lo:.3f}, {hi:.3f}]"
        return "too small", f"{card.n} labelled rows: {shown}, no measure of how good"
    if hi - lo >= MAX_AUROC_WIDTH:
        return "too small", (
            f"{card.n} labelled rows: AUROC interval [{lo:.3f}, {hi:.3f}] is "
            f"{MAX_AUROC_WIDTH} wide or more"
        )
    if hi <= 0.5:
        return "failed", f"AUROC {card.auroc:.3f} [{lo:.3f}, {hi:.3f}]: no better than chance"
    base = next(
        (c for c in cards if c.scorer == BASELINE_SCORER and c.set_sha256 == card.set_sha256),
        None,
    )
    if card.scorer != BASELINE_SCORER and base is not None and base.macro_f1 is not None:
        if (card.macro_f1 or 0.0) < base.macro_f1:
            return "failed", (
                f"macro-F1 {card.macro_f1 or 0.0:.3f} is below the keyword baseline's "
                f"{base.macro_f1:.3f} on the same set"
            )
    return "validated", f"AUROC {card.auroc:.3f} [{lo:.3f}, {hi:.3f}] on {card.n} labelled rows"


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def shipped_cards(version: str | None) -> list[Card]:
    """The shipped card of affect ``version``; none when the file has no entry for it, or the
    entry was measured with other parameters than the shipped ones (a refit under the same
    version: the card is stale until ``benchmarks/affect_card.py`` runs again)."""
    if version is None:
        return []
    try:
        text = resources.files("intima.data").joinpath(CARD_FILE).read_text(encoding="utf-8")
        entry = json.loads(text).get(version)
        if entry is None or entry.get("made_by", {}).get("params_digest") != _params_digest():
            return []
        return [Card.model_validate({**entry, "source": "shipped"})]
    except (FileNotFoundError, ValueError, ValidationError, AttributeError):
        return []  # a damaged card file costs the card, never the board


def _params_digest() -> str | None:
    try:
        from intima.affect.params import default_params
    except ModuleNotFoundError:  # the affect extra is not installed
        return None
    from intima.core.errors import IntimaError

    try:
        return default_params().digest
    except IntimaError:  # a missing or mismatched params file: no affect scores, no card
        return None


def stored_cards(store: Store) -> list[Card]:
    """A card per report in ``validation_reports`` (damaged rows are skipped)."""
    rows = store.query(
        "SELECT set_name, set_sha256, scorer, scorer_version, by_columns, n, report_json "
        "FROM validation_reports ORDER BY set_name, scorer, by_columns"
    )
    out = []
    for r in rows:
        try:
            report = json.loads(r["report_json"])
            out.append(_from_report(dict(r), report))
        except (ValueError, TypeError, AttributeError, ValidationError):
            continue
    return out


def _from_report(row: Mapping[str, Any], report: Mapping[str, Any]) -> Card:
    overall = (report.get("groups") or {}).get("overall") or {}
    base = {
        "scorer": row["scorer"],
        "version": row["scorer_version"],
        "source": "store",
        "set_name": row["set_name"],
        "set_sha256": row["set_sha256"],
        "n": row["n"],
        "protocol": "intima validate, in-sample (fitted on this set)"
        if report.get("in_sample")
        else "intima validate",
        "in_sample": bool(report.get("in_sample")),
        "labels_from": report.get("labels_from")
        if isinstance(report.get("labels_from"), str)
        else None,
        "method": METHOD_DOCS.get(row["scorer"], DEFAULT_METHOD),
    }
    if report.get("kind") == "graded":
        rho = overall.get("spearman", report.get("spearman"))
        graded = Graded(
            set_name=row["set_name"], set_sha256=row["set_sha256"], n=row["n"], spearman=rho
        )
        return Card.model_validate({**base, "graded": graded})
    groups = report.get("groups") or {}
    by_group = {
        k: v.get("auroc") for k, v in groups.items() if k != "overall" and isinstance(v, dict)
    }
    # `validate --by model` names its groups "model=x": the rows were split by model, not held
    # out from any fit, so the card says "by model" and shows the values alone.
    columns = {k.partition("=")[0] for k in by_group if "=" in k}
    title = f"AUROC by {', '.join(sorted(columns))}" if columns else "AUROC by group"
    if len(columns) == 1 and all("=" in k for k in by_group):
        by_group = {k.partition("=")[2]: v for k, v in by_group.items()}
    return Card.model_validate(
        {
            **base,
            "auroc": overall.get("auroc"),
            "auroc_lo": overall.get("auroc_lo"),
            "auroc_hi": overall.get("auroc_hi"),
            "auroc_by_group": by_group,
            "groups_title": title,
            "macro_f1": overall.get("macro_f1_rb"),
            "kappa": overall.get("kappa"),
            "confusion_labels": overall.get("confusion_labels") or [],
            "confusion": overall.get("confusion") or [],
            "length": report.get("length") if isinstance(report.get("length"), dict) else None,
        }
    )


def version_of(
    scorer: str, affect_version: str | None, judge_prompt_version: str | None
) -> str | None:
    """The version a board scorer's numbers were made with, as ``intima validate`` names it
    (None: unknown, any card of the scorer applies)."""
    if scorer == "affect":
        return affect_version
    if scorer.startswith("judge:") or scorer == "panel":
        return None if judge_prompt_version is None else f"judge-prompt-{judge_prompt_version}"
    return None


def board_cards(
    cards: Iterable[Card], affect_version: str | None, judge_prompt_version: str | None
) -> dict[str, list[Card]]:
    """scorer -> its cards made with the version the board scores with (a card of another
    version validated another scorer and is left out)."""
    out: dict[str, list[Card]] = {}
    for card in cards:
        wanted = version_of(card.scorer, affect_version, judge_prompt_version)
        if wanted is None or card.version == wanted:
            out.setdefault(card.scorer, []).append(card)
    return out


def correcting_card(cards: Sequence[Card]) -> Card | None:
    """The card whose confusion corrects the shares: the most labelled rows (shipped first on
    a tie), never an in-sample one; None when no card has a confusion matrix."""
    usable = [c for c in cards if c.error_rates() and not c.in_sample]
    if not usable:
        return None
    return max(usable, key=lambda c: (c.n, c.source == "shipped"))


def error_rates_by_scorer(
    cards: Mapping[str, Sequence[Card]],
) -> dict[str, tuple[str, dict[str, ErrorRates]]]:
    """For :func:`intima.results.corrected.corrections`: scorer -> (card name, error rates)."""
    out = {}
    for scorer, own in cards.items():
        card = correcting_card(own)
        if card is not None:
            out[scorer] = (card.name, card.error_rates())
    return out
