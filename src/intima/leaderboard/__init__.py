"""The leaderboard's UI: the static site (``site``, ``render``) and the Gradio app (``app``).
The numbers come from :mod:`intima.results`. Heavy dependencies are imported inside functions."""
