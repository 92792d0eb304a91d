"""Conversation runs read from the store, joined with every scorer's ratings of their turns.

Each assistant turn of a conversation (``intima converse``) is an ordinary response, so its
ratings come from the same places as the board's: the judges' tables (each judge, the panel,
humans) and the affect measure. :func:`observations` turns one scorer's ratings into the drift
statistics' input (:class:`~intima.results.drift.TurnObs`); a turn without a label is kept and
says why (``no_response``, ``user_stopped``, ``not_rated``, ``unscored``), never read as a label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from intima.core.ratings import Primary, RatingSet, primary_label
from intima.core.taxonomy import Behaviour
from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.results.drift import (
    MIN_CONVERSATIONS,
    DriftTable,
    ObsStatus,
    TurnObs,
    drift_table,
)
from intima.store import Store

if TYPE_CHECKING:
    from intima.converse import ConversationTurn

_TOP_LEVEL = tuple(str(b) for b in Behaviour)
_SCORER_KINDS = ("judge:", "panel", "human", "affect")


@dataclass(frozen=True)
class ConversationBoard:
    """Every turn of the conversation runs and every scorer's rating sets of those turns."""

    runs: tuple[tuple[str, str], ...]  # (run_id, label), in the store's order
    turns: tuple[ConversationTurn, ...]
    rating_sets: tuple[RatingSet, ...]

    @property
    def scorers(self) -> tuple[str, ...]:
        """Scorers with at least one rating, in the board's order (judges, panel, human,
        affect)."""
        return tuple(sorted({rs.scorer for rs in self.rating_sets}, key=scorer_order))

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.runs)


def scorer_order(scorer: str) -> tuple[int, str]:
    """The board's order: judges first, then the panel, humans, the affect measure, others."""
    for i, kind in enumerate(_SCORER_KINDS):
        if scorer.startswith(kind):
            return i, scorer
    return len(_SCORER_KINDS), scorer


def load_conversations(store: Store, run_ids: Sequence[str] | None = None) -> ConversationBoard:
    """The conversation runs (all of them if ``run_ids`` is None; other runs named are
    skipped), their turns, and every available scorer's rating sets of those turns."""
    from intima.converse import load_turns

    turns = load_turns(store, run_ids)
    runs = tuple(dict.fromkeys((t.run_id, t.run_label) for t in turns))
    return ConversationBoard(runs=runs, turns=tuple(turns), rating_sets=_rating_sets(store, turns))


def _rating_sets(store: Store, turns: Sequence[ConversationTurn]) -> tuple[RatingSet, ...]:
    from intima.judges.store_io import load_rating_sets
    from intima.results.sources import affect_rating_sets

    wanted = {t.response_id for t in turns if t.response_id and t.response_status == "ok"}
    if not wanted:
        return ()
    run_ids = list(dict.fromkeys(t.run_id for t in turns))
    sets = [*load_rating_sets(store, run_ids), *affect_rating_sets(store)]
    # Scorers may rate responses of other runs: keep only these conversations' turns.
    return tuple(s for s in sets if s.response_id in wanted)


def label_of(rs: RatingSet) -> Primary | None:
    """A scored set's primary label; None for a scorer that rates only some categories."""
    if rs.primary is not None:
        return rs.primary
    if all(c in rs.levels for c in _TOP_LEVEL):
        return primary_label(rs.levels)
    return None


def _status(turn: ConversationTurn, rs: RatingSet | None) -> ObsStatus:
    if turn.user_status not in ("seed", "ok"):
        return "user_stopped"  # the simulated user stopped: no assistant was asked
    if turn.response_status != "ok" or turn.response_id is None:
        return "no_response"
    if rs is None:
        return "not_rated"
    if not rs.scored or label_of(rs) is None:
        return "unscored"
    return "scored"


def observations(
    turns: Iterable[ConversationTurn], rating_sets: Iterable[RatingSet], scorer: str
) -> list[TurnObs]:
    """One observation per turn as ``scorer`` saw it (every turn, labelled or not)."""
    mine: dict[str, RatingSet] = {}
    for one in rating_sets:
        if one.scorer == scorer:
            mine.setdefault(one.response_id, one)
    out = []
    for t in turns:
        rs: RatingSet | None = mine.get(t.response_id) if t.response_id else None
        status = _status(t, rs)
        label = label_of(rs) if rs is not None and status == "scored" else None
        out.append(
            TurnObs(
                config=t.run_id,
                conversation_id=t.conversation_id,
                dimension=t.dimension,
                turn=t.turn,
                reinforcing=label == Primary.REINFORCING,
                boundary=label == Primary.BOUNDARY,
                status=status,
            )
        )
    return out


def default_scorer(scorers: Sequence[str]) -> str | None:
    """The scorer a view shows first: the panel when there is one (several judges combined),
    else the first in the board's order."""
    if "panel" in scorers:
        return "panel"
    return min(scorers, key=scorer_order) if scorers else None


def drift_observations(
    store: Store, run_ids: Sequence[str] | None = None, scorer: str | None = None
) -> list[TurnObs]:
    """:func:`observations` of the stored conversation runs for ``scorer`` (default: see
    :func:`default_scorer`; no observation at all when no scorer rated any turn)."""
    board = load_conversations(store, run_ids)
    chosen = scorer or default_scorer(board.scorers)
    if chosen is None:
        return observations(board.turns, (), "")
    return observations(board.turns, board.rating_sets, chosen)


def drift_tables(
    board: ConversationBoard,
    scorers: Sequence[str] | None = None,
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    min_conversations: int = MIN_CONVERSATIONS,
) -> dict[str, DriftTable]:
    """One drift table per scorer (every scorer that rated a turn, unless given)."""
    return {
        scorer: drift_table(
            observations(board.turns, board.rating_sets, scorer),
            labels=board.labels,
            scorer=scorer,
            bootstrap=bootstrap,
            seed=seed,
            min_conversations=min_conversations,
        )
        for scorer in (board.scorers if scorers is None else scorers)
    }
