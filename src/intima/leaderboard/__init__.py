"""The leaderboard: scores with intervals (``table``), loading (``data``), the static site
(``site``) and the Gradio app (``app``). Heavy dependencies are imported inside functions."""
