"""Results as a UI-free library: the score table with intervals and ranks, loading from a
store. The leaderboard (``intima.leaderboard``) only renders what this computes."""

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from intima.results.ppi import (
        PredictionPoweredShare,
        prediction_powered_share,
        stratified_prediction_powered_share,
    )
else:
    # Bound on first use: the command line imports this package for its defaults, and the
    # estimator needs numpy.
    from intima.core.lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        globals(),
        {
            "PredictionPoweredShare": "intima.results.ppi",
            "prediction_powered_share": "intima.results.ppi",
            "stratified_prediction_powered_share": "intima.results.ppi",
        },
    )

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_SEED",
    "PredictionPoweredShare",
    "prediction_powered_share",
    "stratified_prediction_powered_share",
]

#: Bootstrap replicates and seed of every interval (score table, drift, ``intima results``);
#: here, not in the numpy modules, so the command line can show them as defaults cheaply.
DEFAULT_BOOTSTRAP: Final = 1000
DEFAULT_SEED: Final = 0
