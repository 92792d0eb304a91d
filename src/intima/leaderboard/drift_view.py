"""The drift view of the static site: how each model's behaviour changes over a conversation.

Shown only when the store holds conversation runs (``intima converse``). What it shows is
rendered once, in Python, for the site and the app alike (:mod:`intima.leaderboard.drift_render`
for the table and the transcripts, :func:`intima.leaderboard.charts.drift_charts` for the
charts); ``drift.js`` only chooses, loads and swaps. Two parts travel separately, like the
board's scores and responses:

* in ``index.html``: what the menus offer (``<script type="application/json" id="drift-data">``)
  and, per scorer and scope, the charts and the table, each in a ``<template>`` (written with
  every other view of :data:`intima.leaderboard.views.VIEWS`);
* the transcripts, one file per configuration (``data/c<i>.js``), loaded when the transcript
  explorer opens that configuration: per conversation, its menu entry and its transcript.

Transcripts are untrusted text (the model's and the simulated user's): they reach markup only
through :mod:`~intima.leaderboard.drift_render`, which escapes every piece of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from intima.leaderboard.chunks import chunk_file
from intima.leaderboard.drift_render import (
    INTRO,
    NOT_RATED,
    busiest_scorer,
    conversations,
    ratings_by_response,
    transcript_html,
)
from intima.results.conversations import ConversationBoard
from intima.results.drift import DriftTable

#: The drift view's script, copied next to board.js only when there is a drift view.
DRIFT_SCRIPT: Final = "drift.js"


def drift_payload(
    board: ConversationBoard, tables: Mapping[str, DriftTable], chunks: list[str]
) -> dict[str, Any]:
    """What the drift view's menus offer and where its parts are: the charts and tables are in
    the page's templates (the drift views of :data:`intima.leaderboard.views.VIEWS`), the
    transcripts in ``chunks`` (:func:`write_transcripts`). ``tables``: the board's
    :attr:`~intima.results.board.BoardView.drift`."""
    first = next(iter(tables.values()), None)
    return {
        "configs": [{"run_id": r, "label": label} for r, label in board.runs],
        "scorers": list(tables),
        "default_scorer": busiest_scorer(board, list(tables)),
        "scopes": first.scopes if first else [],
        "intro": INTRO,
        "not_rated": NOT_RATED,
        "chunks": chunks,
    }


def transcripts(board: ConversationBoard) -> list[list[dict[str, str]]]:
    """Per configuration (in ``board.runs`` order), its conversations: ``id``, ``choice`` (the
    menu's text, put on the page as text) and ``html`` (the transcript, escaped markup)."""
    ratings = ratings_by_response(board.rating_sets)
    return [
        [{"id": c.id, "choice": c.choice, "html": transcript_html(c, ratings)} for c in convs]
        for convs in conversations(board).values()
    ]


def write_transcripts(board: ConversationBoard, folder: Path) -> list[str]:
    """Write ``c<i>.js`` per configuration into ``folder``; their paths relative to the site."""
    names = []
    for i, convs in enumerate(transcripts(board)):
        chunk_file(folder, f"c{i}", convs)
        names.append(f"{folder.name}/c{i}.js")
    return names
