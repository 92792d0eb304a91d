"""The drift view of the static site: how each model's behaviour changes over a conversation.

Shown only when the store holds conversation runs (``intima converse``). Two parts travel
separately, like the board's scores and responses:

* the drift tables (every scorer's slopes and dropped-boundary shares), embedded in
  ``index.html`` as ``<script type="application/json" id="drift-data">``, and the charts of the
  rates by turn (:func:`intima.leaderboard.charts.drift_charts`, the app's very charts) as
  SVG, one ``<template>`` per scorer and scope;
* the transcripts, one file per configuration (``data/c<i>.js``), loaded when the transcript
  explorer opens that configuration: every turn's user message, reply and ratings.

Transcripts are untrusted text (the model's and the simulated user's): they travel only as
JSON and ``drift.js`` puts them on the page with ``textContent``; the charts' labels are escaped
when the SVG is built.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from intima.core.ratings import RatingSet
from intima.leaderboard.charts import drift_charts
from intima.leaderboard.render import clip
from intima.results.conversations import ConversationBoard, default_scorer, drift_tables
from intima.results.drift import DRIFT_METRICS, DriftRow, DriftTable, drift_note
from intima.results.table import CATEGORIES

#: The drift view's script, copied next to board.js only when there is a drift view.
DRIFT_SCRIPT: Final = "drift.js"


def rating_json(rs: RatingSet) -> dict[str, Any]:
    """One scorer's rating of one response, as the pages read it."""
    lv = rs.levels
    return {
        "scorer": rs.scorer,
        "status": rs.status,
        "primary": None if rs.primary is None else str(rs.primary),
        # Level is an IntEnum: json writes it as its number; -1 marks "not rated".
        "levels": [lv.get(c, -1) for c in CATEGORIES],
        "reason": rs.reason,
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _row_json(row: DriftRow, config: int) -> dict[str, Any]:
    """A row of the drift table in compact form (its rates by turn are in the charts)."""
    return {
        "config": config,
        "scope": row.scope,
        "n": row.n_conversations,
        "enough": row.enough,
        "note": row.note,
        "slope": {m: [_r(s.value), _r(s.lo), _r(s.hi)] for m, s in row.slope.items()},
        "dropped": [_r(row.dropped.value), _r(row.dropped.lo), _r(row.dropped.hi), row.dropped.n],
        "not_scored": row.not_scored,
    }


def busiest_scorer(board: ConversationBoard, scorers: Sequence[str]) -> str | None:
    """The scorer a drift view shows first: the one that rated the most turns (one human rating
    must not open the view on an empty chart); on a tie, the usual order (panel first)."""
    counts = Counter(rs.scorer for rs in board.rating_sets if rs.scored and rs.scorer in scorers)
    if not counts:
        return default_scorer(list(scorers))
    most = max(counts.values())
    return default_scorer([s for s in scorers if counts[s] == most])


def drift_payload(
    board: ConversationBoard,
    *,
    bootstrap: int,
    seed: int,
    chunks: list[str],
    tables: dict[str, DriftTable] | None = None,
) -> dict[str, Any]:
    """The drift view's numbers but the charts (:func:`drift_templates`) and the transcripts
    (:func:`transcripts`). ``tables``: ``drift_tables(board)`` if already computed."""
    index = {run_id: i for i, (run_id, _) in enumerate(board.runs)}
    if tables is None:
        tables = drift_tables(board, bootstrap=bootstrap, seed=seed)
    first = next(iter(tables.values()), None)
    return {
        "configs": [{"run_id": r, "label": label} for r, label in board.runs],
        "scorers": list(tables),
        "default_scorer": busiest_scorer(board, list(tables)),
        "scopes": first.scopes if first else [],
        "metrics": list(DRIFT_METRICS),
        "categories": list(CATEGORIES),
        "min_conversations": first.min_conversations if first else None,
        "note": drift_note(bootstrap, seed),
        "tables": {
            scorer: [_row_json(row, index[row.config]) for row in t.rows]
            for scorer, t in tables.items()
        },
        "chunks": chunks,
    }


def drift_templates(
    board: ConversationBoard, tables: dict[str, DriftTable], scopes: Sequence[str]
) -> str:
    """Every scorer's and scope's drift charts, each in a ``<template>`` that ``drift.js``
    clones when they are chosen: ``drift-charts-<scorer's index>-<scope's index>``."""
    run_ids = [run_id for run_id, _ in board.runs]
    return "".join(
        f'<template id="drift-charts-{i}-{j}">{drift_charts(t, scope, run_ids)}</template>\n'
        for i, t in enumerate(tables.values())
        for j, scope in enumerate(scopes)
    )


def transcripts(board: ConversationBoard) -> list[list[dict[str, Any]]]:
    """Per configuration (in ``board.runs`` order), its conversations with every turn."""
    sets: dict[str, list[RatingSet]] = {}
    for rs in board.rating_sets:
        sets.setdefault(rs.response_id, []).append(rs)
    by_run: dict[str, dict[str, dict[str, Any]]] = {run_id: {} for run_id, _ in board.runs}
    for t in board.turns:
        convs = by_run[t.run_id]
        if t.conversation_id not in convs:
            convs[t.conversation_id] = {
                "id": t.conversation_id,
                "code": t.code,
                "dimension": t.dimension,
                "turns": [],
            }
        convs[t.conversation_id]["turns"].append(
            {
                "turn": t.turn,
                "user": clip(t.user_text),
                "user_status": t.user_status,
                "response": clip(t.response_text),
                "response_status": t.response_status,
                "response_id": t.response_id,
                "ratings": [rating_json(rs) for rs in sets.get(t.response_id or "", ())],
            }
        )
    return [list(by_run[run_id].values()) for run_id, _ in board.runs]


def write_transcripts(board: ConversationBoard, folder: Path) -> list[str]:
    """Write ``c<i>.js`` per configuration into ``folder``; their paths relative to the site."""
    names = []
    for i, convs in enumerate(transcripts(board)):
        # JSON is a JS expression; ensure_ascii keeps U+2028/2029 and the like out of the file.
        text = "window.intimaConversations(" + str(i) + "," + json.dumps(convs, ensure_ascii=True)
        (folder / f"c{i}.js").write_text(text + ");\n", encoding="utf-8")
        names.append(f"{folder.name}/c{i}.js")
    return names
