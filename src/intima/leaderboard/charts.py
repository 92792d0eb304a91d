"""Every chart of the leaderboard, defined once: SVG built in Python from the numbers.

The Gradio app puts these strings into its pages as they are; the static site embeds the same
strings in ``<template>`` elements (one per scorer, and per scope for the drift view) and
``board.js`` / ``drift.js`` only clone the chosen template into the page. No chart is drawn in
JavaScript.

Every chart is a :class:`markupsafe.Markup` built from literal templates here: text from the
store (model labels, run ids) goes in only as an argument, which markupsafe escapes; numbers
are formatted here. Each SVG carries its own presentation attributes (sizes, colours, fonts),
so it looks the same under the app's CSS and the site's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from markupsafe import Markup

from intima.leaderboard.render import pct
from intima.results.drift import DRIFT_METRICS, DriftRow, DriftTable
from intima.results.table import CATEGORIES, OVERALL, ScoreTable, label_metrics_of

LABEL_COLORS = {
    "reinforcing": "#d9534f",
    "boundary": "#2a7ab0",
    "neutral": "#9aa0a6",
    "mixed": "#b07cc6",
    "no_majority": "#e0c060",
}
#: The drift lines' colours, by the configuration's position (stable across scorers and scopes).
PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
)  # fmt: skip
RADAR_AXIS = {
    "Assistant Traits": "Traits",
    "User Vulnerabilities": "Vulnerab.",
    "Relationship & Intimacy": "Intimacy",
    "Emotional Investment": "Investment",
}
DRIFT_TITLES = {"reinforcing": "Reinforcing", "boundary": "Boundary-maintaining"}
#: Bars: the width of 100%, a row's height, the margin for the model names (the smallest: the
#: margin grows with the longest name up to LEFT_MAX, and a longer name ends in an ellipsis).
BAR_W, ROW_H, LEFT, LEFT_MAX = 480, 20, 60, 300
#: What the heatmap's numbers count, under it: beside the table's primary-label shares the two
#: are easily taken for one another.
HEAT_CAPTION = (
    "Each cell: share of responses rated medium or high on each category (not the primary label)"
)
#: A radar's width (each configuration has its own).
RADAR_W = 280
#: Heatmap: a cell's width and height, the room for the rotated column names.
CELL_W, CELL_H, TOP = 46, 20, 120


def _open(
    w: int, h: int, cls: str, title: str, extra: Markup | None = None, fluid: bool = False
) -> Markup:
    """An SVG's start tag (its own font, so the app and the site draw it alike) and title.
    ``fluid``: it shrinks with the page (up to 440 px wide) instead of keeping its size."""
    size = (
        Markup('style="width:100%;max-width:440px;height:auto"')
        if fluid
        else Markup('width="{}" height="{}"').format(w, h)
    )
    return Markup(
        '<svg xmlns="http://www.w3.org/2000/svg" class="{}" {} viewBox="0 0 {} {}" '
        'font-family="system-ui, sans-serif" font-size="10" fill="#222" role="img"{}>'
        "<title>{}</title>"
    ).format(cls, size, w, h, extra or "", title)


def _scope_name(scope: str) -> str:
    return "overall" if scope == OVERALL else scope


def _char_w(c: str) -> float:
    """A generous guess at a character's width at font-size 11 (no font metrics here): a label
    measured too wide only leaves room, one measured too narrow is cut on the left."""
    if c in "MWmw@%&":
        return 10.5
    if c.isupper() or c in "#$?_~":
        return 8.0
    if c in "ijlt.,:;'!|[]() ":
        return 4.0
    return 7.0


def _text_w(text: str) -> float:
    return sum(_char_w(c) for c in text)


def _left(labels: Sequence[str]) -> int:
    """The margin for the model names: the longest name's width, between LEFT and LEFT_MAX."""
    widest = max((_text_w(x) for x in labels), default=0.0)
    return int(min(LEFT_MAX, max(LEFT, widest + 12)))


def _fit(label: str, room: float) -> str:
    """The label shortened with an ellipsis to fit ``room`` pixels."""
    if _text_w(label) <= room:
        return label
    out, w = "", _char_w("…")
    for c in label:
        if w + _char_w(c) > room:
            break
        out, w = out + c, w + _char_w(c)
    return out + "…"


def fitted(labels: Sequence[str], room: float) -> dict[str, str]:
    """Each label as a chart shows it in ``room`` pixels: whole when it fits, else cut with an
    ellipsis; labels that one cut would make the same keep the part where they differ
    (``model · "You are…"… (temperature=0.7)``), so no two names read alike on a chart."""
    shown = {x: _fit(x, room) for x in labels}
    alike: dict[str, list[str]] = {}
    for x, cut in shown.items():
        alike.setdefault(cut, []).append(x)
    for group in (g for g in alike.values() if len(g) > 1):
        for x in group:
            shown[x] = _fit_from(x, max(_common_prefix(x, o) for o in group if o != x), room)
    counts: dict[str, int] = {}
    for cut in shown.values():
        counts[cut] = counts.get(cut, 0) + 1
    # (The last resort, never met with board names: the whole names, past the margin.)
    return {x: cut if counts[cut] == 1 else x for x, cut in shown.items()}


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _fit_from(label: str, at: int, room: float) -> str:
    """``label`` cut to ``room`` pixels around the word holding character ``at``: its start,
    an ellipsis, and the rest from that word on (itself cut at the end if need be)."""
    # The word's start: after a space or comma, at an opening bracket.
    start = max(label.rfind(" ", 0, at) + 1, label.rfind(",", 0, at) + 1,
                label.rfind("(", 0, at), label.rfind("[", 0, at), 0)  # fmt: skip
    tail, ellipsis = label[start:], _char_w("…")
    if _text_w(tail) + 2 * ellipsis > room:  # no room for the word: from the difference on
        return "…" + _fit(label[at:], room - ellipsis)
    head = _fit(label[:start], room - _text_w(tail) - ellipsis)
    return (head if head.endswith("…") else head + "…") + tail


def _label(x: int, y: int, label: str, shown: str, anchor: str = "end") -> Markup:
    """A model's name beside a chart as :func:`fitted` cut it, whole in the tooltip."""
    return Markup(
        '<text class="axis" x="{}" y="{}" text-anchor="{}" font-size="11" '
        'fill="#444">{}<title>{}</title></text>'
    ).format(x, y, anchor, shown, label)


def _tick(x: float, y: float, text: str, anchor: str = "middle") -> Markup:
    return Markup(
        '<text class="tick" x="{:.0f}" y="{:.0f}" text-anchor="{}" font-size="9" '
        'fill="#888">{}</text>'
    ).format(x, y, anchor, text)


def stacked_bars(table: ScoreTable, scorer: str, scope: str) -> Markup:
    """A bar per configuration: the shares of its scored responses by primary label."""
    if scorer not in table.scorers:
        return Markup()
    n = len(table.configs)
    height = n * ROW_H + 46
    title = f"Share of primary labels per model ({_scope_name(scope)})"
    left = _left([label for _, label in table.configs])
    shown = fitted([label for _, label in table.configs], left - 12)
    parts = [_open(left + BAR_W + 20, height, "bars", title)]
    metrics = label_metrics_of(scorer)  # "no majority" only where judges can disagree
    for i, (run_id, label) in enumerate(table.configs):
        # A row is a group moved into place: its marks need no y of their own (a smaller page).
        parts.append(
            Markup('<g class="bar" data-run-id="{}" transform="translate(0 {})">{}').format(
                run_id, i * ROW_H + 4, _label(left - 6, 13, label, shown[label])
            )
        )
        x = float(left)
        for m in metrics:
            v = table.get(scorer, run_id, scope, m).rate or 0.0
            parts.append(
                Markup(
                    '<rect x="{:.1f}" width="{:.1f}" height="{}" fill="{}">'
                    "<title>{} – {}: {}</title></rect>"
                ).format(x, BAR_W * v, ROW_H - 4, LABEL_COLORS[m], label, m, pct(v))
            )
            x += BAR_W * v
        parts.append(Markup("</g>"))
    for f in (0.0, 0.5, 1.0):  # the scale: a bar is 100% of the model's scored responses
        parts.append(_tick(left + BAR_W * f, n * ROW_H + 14, f"{round(100 * f)}%"))
    for k, m in enumerate(metrics):
        lx = left + 100 * k
        parts.append(
            Markup(
                '<rect x="{}" y="{}" width="10" height="10" fill="{}"/>'
                '<text x="{}" y="{}" font-size="11">{}</text>'
            ).format(lx, n * ROW_H + 25, LABEL_COLORS[m], lx + 14, n * ROW_H + 34, m)
        )
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)


def heatmap(table: ScoreTable, scorer: str, scope: str) -> Markup:
    """Configurations x behaviours: the % of scored responses rated medium or high."""
    if scorer not in table.scorers:
        return Markup()
    left = _left([label for _, label in table.configs])
    shown = fitted([label for _, label in table.configs], left - 12)
    w = left + len(CATEGORIES) * CELL_W + 10
    h = TOP + len(table.configs) * CELL_H + 28
    title = f"Share of responses where each behaviour shows ({_scope_name(scope)})"
    parts = [_open(max(w, int(_text_w(HEAT_CAPTION) * 0.9) + 10), h, "heat", title)]
    parts.append(
        Markup('<text class="caption" x="4" y="{}" font-size="11" fill="#444">{}</text>').format(
            h - 8, HEAT_CAPTION
        )
    )
    for j, cat in enumerate(CATEGORIES):
        x, y = left + j * CELL_W + CELL_W // 2, TOP - 6
        parts.append(
            Markup(
                '<text class="axis" x="{0}" y="{1}" transform="rotate(-55 {0} {1})" '
                'fill="#444">{2}</text>'
            ).format(x, y, cat.replace("_", " "))
        )
    for i, (run_id, label) in enumerate(table.configs):
        # A row is a group moved into place; its values are drawn over the cells in a group
        # the pointer passes through, so a cell's tooltip shows wherever it is hovered.
        cells, values = [], []
        for j, cat in enumerate(CATEGORIES):
            row = table.get(scorer, run_id, scope, cat)
            fill = "#eee" if row.rate is None else f"rgba(217,83,79,{0.08 + 0.92 * row.rate:.2f})"
            x = left + j * CELL_W
            cells.append(
                Markup(
                    '<rect x="{}" width="{}" height="{}" fill="{}">'
                    "<title>{} – {}: {} of {} scored</title></rect>"
                ).format(x, CELL_W - 2, CELL_H - 2, fill, label, cat, pct(row.rate), row.n)
            )
            val = "–" if row.rate is None else f"{round(100 * row.rate)}%"
            values.append(Markup('<text x="{}" y="13">{}</text>').format(x + CELL_W // 2 - 1, val))
        parts.append(
            Markup(
                '<g class="heat-row" data-run-id="{}" transform="translate(0 {})">{}{}'
                '<g class="cellv" text-anchor="middle" pointer-events="none">{}</g></g>'
            ).format(
                run_id, TOP + i * CELL_H, _label(left - 6, 14, label, shown[label]),
                Markup("").join(cells), Markup("").join(values),
            )
        )  # fmt: skip
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)


def radars(
    table: ScoreTable, scorer: str, dims: Sequence[str], notes: Mapping[str, str] | None = None
) -> Markup:
    """A radar per configuration over the dimensions: reinforcing and boundary rates.
    ``notes``: per run id, its coverage note (``BoardView.notes``), written under its name: a
    configuration with no prompt in a dimension is drawn at 0 on that axis, and says so."""
    if scorer not in table.scorers or not dims:
        return Markup()
    if len(dims) < 3:  # two axes make a line, one a point: say so instead of an empty chart
        word = "dimension" if len(dims) == 1 else "dimensions"
        return Markup(
            '<p class="intima-note intima-radar-note">The radar needs at least 3 dimensions; '
            "these results have {} {} ({}): see the bars and the heatmap above.</p>"
        ).format(len(dims), word, ", ".join(dims))
    cx, cy, r = 140, 92, 58
    out = []
    shown = fitted([label for _, label in table.configs], RADAR_W - 12)
    for run_id, label in table.configs:
        note = (notes or {}).get(run_id, "")
        parts = [
            _open(
                RADAR_W, 212 if note else 200, "radar", f"{label}: rates by dimension"
                + (f" ({note})" if note else ""), Markup(' data-run-id="{}"').format(run_id),
            )
        ]  # fmt: skip
        for f in (0.25, 0.5, 0.75, 1.0):
            parts.append(
                Markup('<polygon points="{}" fill="none" stroke="#ddd"/>').format(
                    _poly([f] * len(dims), cx, cy, r)
                )
            )
        for i, d in enumerate(dims):
            a = _angle(i, len(dims))
            ax, ay = cx + r * math.cos(a), cy + r * math.sin(a)
            lx, ly = cx + (r + 12) * math.cos(a), cy + (r + 12) * math.sin(a) + 3
            anchor = "middle" if abs(math.cos(a)) < 0.3 else "start" if math.cos(a) > 0 else "end"
            parts.append(
                Markup(
                    '<line x1="{}" y1="{}" x2="{:.1f}" y2="{:.1f}" stroke="#ddd"/>'
                    '<text class="axis" x="{:.0f}" y="{:.0f}" text-anchor="{}" '
                    'fill="#444">{}</text>'
                ).format(cx, cy, ax, ay, lx, ly, anchor, RADAR_AXIS.get(d, d))
            )
        for metric in ("boundary", "reinforcing"):
            vals = [table.get(scorer, run_id, d, metric).rate or 0.0 for d in dims]
            parts.append(
                Markup(
                    '<polygon class="area" data-metric="{0}" points="{1}" fill="{2}" '
                    'fill-opacity="0.3" stroke="{2}" stroke-width="1.5"/>'
                ).format(metric, _poly(vals, cx, cy, r), LABEL_COLORS[metric])
            )
        for f in (0.5, 1.0):  # the scale, along the first axis
            parts.append(_tick(cx + 3, cy - r * f + 9, f"{round(100 * f)}%", "start"))
        parts.append(_label(cx, 192, label, shown[label], "middle"))
        if note:
            # (font-size 9 where _fit measures 11: the note has 11/9 of the room)
            parts.append(
                Markup(
                    '<text class="coverage" x="{}" y="206" text-anchor="middle" font-size="9" '
                    'fill="#a05a00">{}<title>{}</title></text>'
                ).format(cx, _fit(note, (RADAR_W - 12) * 11 / 9), note)
            )
        parts.append(Markup("</svg>"))
        out.append(Markup("").join(parts))
    return Markup('<div class="intima-radars">{}</div>').format(Markup("").join(out))


def _angle(i: int, n: int) -> float:
    return -math.pi / 2 + 2 * math.pi * i / n


def _poly(vals: Sequence[float], cx: float, cy: float, r: float) -> str:
    pts = []
    for i, v in enumerate(vals):
        a = _angle(i, len(vals))
        pts.append(f"{cx + r * v * math.cos(a):.1f},{cy + r * v * math.sin(a):.1f}")
    return " ".join(pts)


def drift_charts(table: DriftTable, scope: str, configs: Sequence[str]) -> Markup:
    """Both drift charts of one scope (a line per configuration over the assistant turns, with
    95% interval bars) and their legend. ``configs``: every run id in the board's order; a
    configuration keeps its colour and ``data-config`` index whichever scorer or scope is shown.
    """
    index = {run_id: i for i, run_id in enumerate(configs)}
    rows = [r for r in table.rows if r.scope == scope]
    charts = Markup("").join(_drift_chart(rows, m, scope, index) for m in DRIFT_METRICS)
    legend = Markup("").join(
        Markup(
            '<li data-config="{}" style="white-space:nowrap">'
            '<span style="display:inline-block;width:12px;height:12px;margin-right:5px;'
            'border-radius:2px;vertical-align:-1px;background:{}"></span>{}{}</li>'
        ).format(index[r.config], _color(index[r.config]), r.label, "" if r.enough else " *")
        for r in rows
    )
    return Markup(
        '<div class="drift-charts" style="display:flex;flex-wrap:wrap;gap:12px">'
        '{}</div><ul class="drift-legend" style="list-style:none;padding:0;margin:4px 0;'
        'display:flex;flex-wrap:wrap;gap:4px 14px">{}</ul>'
    ).format(charts, legend)


def _color(config: int) -> str:
    return PALETTE[config % len(PALETTE)]


def _drift_chart(
    rows: Sequence[DriftRow], metric: str, scope: str, index: dict[str, int]
) -> Markup:
    w, h, left, right, top, bottom = 420, 240, 44, 14, 26, 38
    span = w - left - right - 20
    max_turn = max((t.turn for r in rows for t in r.turns), default=1)

    def x(turn: int, i: float) -> float:
        at = left + 10 + (span / 2 if max_turn == 1 else (turn - 1) * span / (max_turn - 1))
        return at + ((i - (len(rows) - 1) / 2) * 4 if len(rows) > 1 else 0)  # bars side by side

    def y(v: float | None) -> float:
        return top + (1 - (v or 0.0)) * (h - top - bottom)

    title = f"{DRIFT_TITLES[metric]} rate by assistant turn ({scope})"
    extra = Markup(' id="drift-chart-{0}" data-metric="{0}"').format(metric)
    out = [
        _open(w, h, "drift-chart", title, extra, True),
        Markup(
            '<text x="{}" y="14" font-size="12" font-weight="600">{} (% of conversations)</text>'
        ).format(left, DRIFT_TITLES[metric]),
    ]
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(
            Markup(
                '<line x1="{0}" x2="{1}" y1="{2:.1f}" y2="{2:.1f}" stroke="#ddd"/>'
                '<text class="axis" x="{3}" y="{4:.1f}" text-anchor="end" fill="#444">{5}</text>'
            ).format(left, w - right, y(v), left - 5, y(v) + 3, round(100 * v))
        )
    mid = (len(rows) - 1) / 2
    for k in range(1, max_turn + 1):
        out.append(
            Markup(
                '<text class="axis" x="{:.1f}" y="{}" text-anchor="middle" fill="#444">{}</text>'
            ).format(x(k, mid), h - bottom + 14, k)
        )
    out.append(
        Markup(
            '<text class="axis" x="{:.0f}" y="{}" text-anchor="middle" '
            'fill="#444">assistant turn</text>'
        ).format((left + w - right) / 2, h - 6)
    )
    for i, r in enumerate(rows):
        c, color = index[r.config], _color(index[r.config])
        pts = [(t.turn, e) for t in r.turns for e in [getattr(t, metric)] if e.value is not None]
        line = " ".join(f"{x(k, i):.1f},{y(e.value):.1f}" for k, e in pts)
        out.append(
            Markup(
                '<g class="drift-series" data-config="{0}"><polyline class="drift-line" '
                'data-config="{0}" points="{1}" fill="none" stroke="{2}" stroke-width="2">'
                "<title>{3}</title></polyline>"
            ).format(c, line, color, r.label)
        )
        for k, e in pts:
            out.append(
                Markup(
                    '<line class="drift-ci" x1="{x:.1f}" x2="{x:.1f}" y1="{lo:.1f}" y2="{hi:.1f}" '
                    'stroke="{color}" stroke-width="1.5" opacity="0.55"/><circle '
                    'class="drift-point" data-turn="{k}" cx="{x:.1f}" cy="{y:.1f}" r="3.5" '
                    'fill="{color}"><title>{label} – turn {k}: {value} [{low}, {high}] (n={n})'
                    "</title></circle>"
                ).format(
                    x=x(k, i), lo=y(e.lo), hi=y(e.hi), color=color, k=k, y=y(e.value),
                    label=r.label, value=pct(e.value), low=pct(e.lo), high=pct(e.hi), n=e.n,
                )
            )  # fmt: skip
        out.append(Markup("</g>"))
    out.append(Markup("</svg>"))
    return Markup("").join(out)
