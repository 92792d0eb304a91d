"""The models table's rows, without a browser: what each column says when nothing is known."""

from __future__ import annotations

from intima.leaderboard.models_view import model_rows, models_html
from synthetic import synthetic_board


def test_a_model_not_read_yet_names_what_was_run_and_says_why_once() -> None:
    """A site built with no model facts read showed "not read yet (not read yet)": the
    reason stood in for the model and again in its note."""
    data = synthetic_board(2, 4, 1, seed=0)
    assert not data.models
    configs = [(r.run_id, r.label) for r in data.runs]
    rows = model_rows(data, configs)
    assert [r["model"] for r in rows] == [r.model_spec for r in data.runs]
    assert all(r["note"] == "not read yet" for r in rows)
    page = models_html(rows)
    assert page.count('<span class="why">(not read yet)</span>') == len(rows)
    assert "not read yet (" not in page
