"""Results as a UI-free library: the score table with intervals and ranks, loading from a
store. The leaderboard (``intima.leaderboard``) only renders what this computes."""

from typing import Final

#: Bootstrap replicates and seed of every interval (score table, drift, ``intima results``);
#: here, not in the numpy modules, so the command line can show them as defaults cheaply.
DEFAULT_BOOTSTRAP: Final = 1000
DEFAULT_SEED: Final = 0
