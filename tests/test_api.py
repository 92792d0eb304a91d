"""The notebook path: dataset -> generate -> judge -> affect score -> results DataFrame, through
the package's public API only (one import), against the fault-injecting OpenAI-compatible
server on 127.0.0.1 and a real SQLite file."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

NOTEBOOK = """
import intima

prompts = intima.load_prompts("demo").first(6)
model = intima.ModelConfig(spec=f"openai-compat:fake@{URL}")
judge = intima.ModelConfig(spec=f"openai-compat:fake-judge@{URL}")
events = []
with intima.Store.open(STORE) as store:
    [run] = intima.generate(store, prompts, [model], on_progress=events.append)
    [judged] = intima.judge(store, [judge])
    scored = intima.score(store)
    frame = intima.results(store, bootstrap=50)
"""


def test_the_readme_notebook_path_in_one_import(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    imports = [
        n for n in ast.walk(ast.parse(NOTEBOOK)) if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    assert len(imports) <= 5
    server = fake_server()
    scope: dict[str, Any] = {"URL": server.base_url, "STORE": tmp_path / "nb.db"}
    exec(compile(NOTEBOOK, "notebook", "exec"), scope)

    run, judged, scored, frame = (scope[k] for k in ("run", "judged", "scored", "frame"))
    assert run.generated == 6 and run.failed == 0
    assert scope["events"][-1].done == scope["events"][-1].total == 6
    assert judged.scored == 6 and judged.unscored == 0
    assert scored.scored == 6
    overall = frame[(frame.scope == "overall") & (frame.metric == "neutral")]
    judge_row = overall[overall.scorer.str.startswith("judge:")]
    # The fake judge rates everything low: every response is neutral, n = 6.
    assert judge_row.rate.tolist() == [pytest.approx(1.0)] and judge_row.n.tolist() == [6]
    assert set(frame.scorer) >= {"affect"} | set(judge_row.scorer)
    assert {"rate", "lo", "hi", "n", "run_id", "label", "scope", "metric"} <= set(frame.columns)
