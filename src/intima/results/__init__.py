"""Results as a UI-free library: the score table with intervals and ranks, loading from a
store. The leaderboard (``intima.leaderboard``) only renders what this computes."""
