"""What the board says about each scorer's validity: its cards and its continuous column (the
mean score), computed from a :class:`~intima.results.data.BoardData` and the score table it was
scored into (same bootstrap, same seed). UI-free: the site, the app and the Space render these
objects.

No error-corrected share: a correction fitted on other models' answers was worse than the raw
share held out on the dev set, so the board shows the raw share and, where a judge labelled a
random sample, the prediction-powered one (:mod:`intima.results.prediction`)."""

from __future__ import annotations

from intima.results.cards import Card, board_cards
from intima.results.data import BoardData
from intima.results.means import Means, continuous_values, mean_scores
from intima.results.table import ScoreTable

UNVALIDATED = (
    "no labelled set has measured this scorer (this version), so how far its shares can be "
    "trusted is unknown"
)


def scorer_cards(data: BoardData) -> dict[str, list[Card]]:
    """Each scorer's cards for the version the board scored with."""
    m = data.methodology
    return board_cards(m.cards, m.affect_version, m.judge_prompt_version)


def board_means(data: BoardData, table: ScoreTable) -> Means:
    """The continuous column (mean score) of every scorer on the board."""
    values = continuous_values(data.rating_sets, data.affect)
    return mean_scores(data.infos(), values, bootstrap=table.bootstrap, seed=table.seed)
