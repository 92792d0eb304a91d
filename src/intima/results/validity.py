"""What the board says about each scorer's validity: its cards, its corrected shares and its
continuous column, computed from a :class:`~intima.results.data.BoardData` and the score table
it was scored into (same bootstrap, same seed). UI-free: the site, the app and the Space render
these objects."""

from __future__ import annotations

from intima.results.cards import Card, board_cards, error_rates_by_scorer
from intima.results.corrected import Corrections, continuous_values, corrections
from intima.results.data import BoardData
from intima.results.table import ScoreTable

UNVALIDATED = (
    "no labelled set has measured this scorer (this version), so its shares are its raw "
    "output, uncorrected for its errors"
)


def scorer_cards(data: BoardData) -> dict[str, list[Card]]:
    """Each scorer's cards for the version the board scored with."""
    m = data.methodology
    return board_cards(m.cards, m.affect_version, m.judge_prompt_version)


def board_corrections(data: BoardData, table: ScoreTable) -> Corrections:
    """Corrected shares and the continuous column of every scorer on the board."""
    rates = error_rates_by_scorer(scorer_cards(data))
    values = continuous_values(data.rating_sets, data.affect)
    return corrections(
        data.infos(), data.rating_sets, rates, values, bootstrap=table.bootstrap, seed=table.seed
    )
