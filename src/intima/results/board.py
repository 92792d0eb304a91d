"""The whole board in one trip: scores with intervals and ranks, paired comparisons and rank
intervals, validation cards, raw shares with mean scores, prediction-powered shares and drift
over conversation turns, from one :class:`~intima.results.data.BoardData` (and its
:class:`~intima.results.conversations.ConversationBoard`), on one bootstrap and seed. UI-free:
the static site, the app, the Space and ``intima compare`` only render a :class:`BoardView`.

The score table is computed when the view is assembled; the rest is computed on first use and
then kept (the app shows the side-by-side numbers or the prediction-powered shares only when
asked, and a Space must start quickly), each exactly once, sharing the table's indicator cubes.
No error-corrected share: a correction fitted on other models' answers was worse than the raw
share on the dev set (``results.corrected`` keeps it as a benchmark diagnostic).
"""

from __future__ import annotations

import functools
from typing import Any

from intima.core.perf import paused_gc
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.results.cards import Card
from intima.results.configurations import board_coverage
from intima.results.conversations import ConversationBoard, drift_tables
from intima.results.data import BoardData, run_title
from intima.results.drift import DriftTable
from intima.results.means import Means, continuous_values
from intima.results.paired import PairedBoard
from intima.results.prediction import PredictionRow, prediction_rows
from intima.results.table import OVERALL, ScoreTable, dims_in, score_table
from intima.results.validity import board_means, scorer_cards


class BoardView:
    """One board, assembled once (:func:`assemble_board`): ``data`` scored into ``table``;
    ``conversations``: its conversation runs (drift), if any; ``built``: when and by which
    version a page of it was made (the static site says so; the app is live)."""

    def __init__(
        self,
        data: BoardData,
        table: ScoreTable,
        cubes: dict[str, Any] | None = None,
        *,
        conversations: ConversationBoard | None = None,
        built: str | None = None,
    ) -> None:
        self.data, self.table = data, table
        self._cubes = cubes  # each scorer's indicators, as the table built them
        self.conversations, self.built = conversations, built

    @property
    def bootstrap(self) -> int:
        return self.table.bootstrap

    @property
    def seed(self) -> int:
        return self.table.seed

    @functools.cached_property
    def scopes(self) -> list[str]:
        """Overall, then the dimensions the table has, in taxonomy order."""
        dims = dims_in({r.scope for r in self.table.rows if not r.scope.startswith("code:")})
        return [OVERALL, *dims]

    @functools.cached_property
    def titles(self) -> dict[str, str]:
        """Per run id, its name's tooltip: the model, the system prompt's hash, every setting."""
        return {r.run_id: run_title(r) for r in self.data.runs}

    @functools.cached_property
    def notes(self) -> dict[str, str]:
        """Per run id, what a reader must know beside its name: how much of its dataset it
        answered ("40 of 368 prompts") and the dimensions it has no answer in; none when whole."""
        return {r.run_id: note for r in self.data.runs if (note := r.coverage.note())}

    @functools.cached_property
    def coverage(self) -> str:
        """What the title adds when a configuration answered only part of its dataset."""
        return board_coverage([r.coverage for r in self.data.runs])

    @functools.cached_property
    def paired(self) -> PairedBoard:
        """Paired differences and rank intervals on the table's own replicates."""
        return PairedBoard(
            self.data.infos(), self.data.rating_sets, self.bootstrap, self.seed,
            cubes=self._cubes if self._cubes is not None else {},
        )  # fmt: skip

    @functools.cached_property
    def cards(self) -> dict[str, list[Card]]:
        """Each scorer's validation cards for the version the board scored with."""
        return scorer_cards(self.data)

    @functools.cached_property
    def means(self) -> Means:
        """Every scorer's mean score per configuration and scope, beside the raw shares."""
        return board_means(self.data, self.table)

    @functools.cached_property
    def prediction(self) -> list[PredictionRow]:
        """Prediction-powered shares of every judge's random sample (empty without one), each
        with its predictor (a judge that labelled every response, else the affect measure)."""
        data = self.data
        if not data.samples:
            return []
        values = continuous_values(data.rating_sets, data.affect).get("affect", {})
        sets = [*data.rating_sets, *data.sample_sets]  # a sampled person's own ratings, too
        return prediction_rows(data.responses, sets, data.samples, values)

    @functools.cached_property
    def drift(self) -> dict[str, DriftTable]:
        """Per scorer that rated a turn, drift over the conversations' turns, on the board's
        bootstrap and seed (empty without a conversation turn)."""
        conv = self.conversations
        if conv is None or not conv.turns:
            return {}
        return drift_tables(conv, bootstrap=self.bootstrap, seed=self.seed)


def assemble_board(
    data: BoardData,
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    per_code: bool = True,
    conversations: ConversationBoard | None = None,
    built: str | None = None,
) -> BoardView:
    """Score ``data`` (``per_code``: also per INTIMA code, as the app filters by code; the
    static site shows dimensions only) and return the board every page renders, its drift
    from ``conversations`` (:func:`~intima.results.conversations.load_conversations`)."""
    cubes: dict[str, Any] = {}
    with paused_gc():
        table = score_table(
            data.infos(), data.rating_sets, bootstrap=bootstrap, seed=seed, per_code=per_code,
            cubes=cubes,
        )  # fmt: skip
    return BoardView(data, table, cubes, conversations=conversations, built=built)
