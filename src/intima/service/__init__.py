"""The leaderboard as a service: the work queue, the worker, bundles, exports."""
