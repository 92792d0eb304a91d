"""Results as a pandas DataFrame (as mteb's ``to_dataframe``): one row per score cell."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from intima.results import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from intima.results.data import load_board
from intima.results.table import score_table
from intima.store import Store

if TYPE_CHECKING:
    import pandas as pd


def results(
    store: Store,
    run_ids: Sequence[str] | None = None,
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Every scorer's rates with 95% intervals, per configuration, scope and metric.

    Columns: scorer, run_id, label, scope (``overall``, a dimension, or ``code:<code>``),
    metric, rate, lo, hi, n, n_unscored, n_missing.
    """
    import pandas as pd

    board = load_board(store, run_ids)
    table = score_table(board.infos(), board.rating_sets, bootstrap=bootstrap, seed=seed)
    return pd.DataFrame([row._asdict() for row in table.rows])
