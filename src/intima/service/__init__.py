"""The leaderboard as a service: the work queue and its leases, the worker, and the model
servers it starts."""
