"""What each model is (its card, size, type, licence, date), for the site, the app and the
Space: one row per configuration, and the search over models both offer.

The table is rendered once, by :func:`models_html`: the app shows it and the site embeds the
very same fragment in a ``<template id="models-view">`` (a view of
:data:`intima.leaderboard.views.VIEWS`) that ``static/models.js`` only clones in
and filters. Every value comes from the store or a bundle (:mod:`intima.providers.model_info`),
so it goes in only as an escaped argument (:class:`markupsafe.Markup`); a card link is built
only from an id that passed :data:`~intima.providers.model_info.HUB_ID`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from markupsafe import Markup

from intima.providers.model_info import UNKNOWN, ModelInfo
from intima.results.data import BoardData

MODELS_SCRIPT: Final = "models.js"
COLUMNS: Final = ("Configuration", "Model", "Size", "Type", "Licence", "Date")


def model_rows(data: BoardData, configs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """One row per configuration (``configs``: the score table's (run id, label), in order)."""
    specs = {r.run_id: r.model_spec for r in data.runs}
    rows = []
    for run_id, label in configs:
        info = data.models.get(run_id) or ModelInfo(source="unknown", detail="not read yet")
        # An unknown model's detail says why it is unknown (the note shows it): the model
        # column names what was run.
        detail = "" if info.source == "unknown" else info.detail
        rows.append(
            {
                "run_id": run_id,
                "label": label,
                "model": info.hub_id or detail or specs.get(run_id) or info.detail,
                "url": info.url,
                "size": info.size,
                "kind": info.kind or UNKNOWN,
                "license": info.license or UNKNOWN,
                "date": info.date or UNKNOWN,
                "source": info.source,
                "note": _note(info, data.run_publishers.get(run_id, ())),
                "search": f"{label} {specs.get(run_id, '')} {info.search_text()}".lower(),
            }
        )
    return rows


def _note(info: ModelInfo, publishers: Sequence[str]) -> str | None:
    """Why a model is unknown, and where each fact came from when a bundle brought any: the
    Hub, read by the board (:mod:`intima.results.model_facts`), or the bundle's publisher."""
    if info.sources:
        by: dict[str, list[str]] = {}
        for fact, source in info.sources.items():
            by.setdefault(source, []).append(fact)
        said = [f"{', '.join(facts)} {source}" for source, facts in by.items()]
        if info.unfetched:
            said.insert(0, f"not read from the Hub: {info.unfetched}")
        return "; ".join(said)
    said = [info.detail] if info.source == "unknown" and info.detail else []
    if publishers and info.source != "unknown":
        said.append(f"as published by {', '.join(publishers)}")
    return "; ".join(said) or None


def matches(row: dict[str, Any], query: str) -> bool:
    """Whether a row's model text holds every word of ``query`` (case-insensitive)."""
    return all(word in row["search"] for word in query.lower().split())


def models_html(rows: Sequence[dict[str, Any]], query: str = "") -> Markup:
    """The models table (the site, the app and the Space), filtered by ``query``. Each row
    carries its model text (``data-search``), which the site's search box matches."""
    if not rows:
        return Markup('<p id="models-none">No models yet.</p>')
    shown = [r for r in rows if matches(r, query)]
    head = Markup("").join(Markup("<th>{}</th>").format(c) for c in COLUMNS)
    body = Markup("").join(_row(r) for r in shown)
    if not shown:
        body = Markup('<tr><td colspan="{}">No model matches {}.</td></tr>').format(
            len(COLUMNS), query
        )
    return Markup(
        '<div class="intima-scroll"><table class="intima-scores intima-models" '
        'id="models-table"><thead><tr>{}</tr></thead><tbody>{}</tbody></table></div>'
    ).format(head, body)


def _row(r: dict[str, Any]) -> Markup:
    model = Markup("{}").format(r["model"])
    if r["url"]:
        model = Markup('<a href="{}" rel="noopener" target="_blank">{}</a>').format(r["url"], model)
    if r["note"]:
        model += Markup(' <span class="why">({})</span>').format(r["note"])
    cells = Markup("").join(
        Markup('<td class="{}">{}</td>').format(k, r[k])
        for k in ("size", "kind", "license", "date")
    )
    return Markup(
        '<tr data-run-id="{}" data-search="{}"><td class="model">{}</td>'
        '<td class="hub">{}</td>{}</tr>'
    ).format(r["run_id"], r["search"], r["label"], model, cells)


_SAFE_ID: Final = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def hide_css(rows: Sequence[dict[str, Any]], query: str) -> Markup:
    """The app's search: a style hiding the score table's and the models table's rows whose
    model text does not match ``query`` (the tables keep their order, ranks and intervals).
    Only ids of plain characters reach the selector; a hostile id is never hidden, never
    markup."""
    hidden = [r["run_id"] for r in rows if not matches(r, query) and _SAFE_ID.match(r["run_id"])]
    if not hidden:
        return Markup()
    rules = Markup(", ").join(
        Markup('#board-table tr[data-run-id="{0}"], #board-models tr[data-run-id="{0}"]').format(i)
        for i in hidden
    )
    return Markup("<style>{} {{ display: none; }}</style>").format(rules)
