"""The real ``intima judge`` / ``intima agreement`` commands (their entry point), checked in SQLite."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import invoke_cli


def test_unscored_judgments_are_kept_then_retried(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    # The fake server answers prose, unless the request asks for structured output, in which
    # case it sends a valid judge object (every category "low").
    server = fake_server()
    db = tmp_path / "s.db"
    url = server.base_url
    gen = invoke_cli(
        "run", "-m", f"openai-compat:fake@{url}", "--dataset", "demo", "--limit", "3",
        "--store", str(db), "--no-progress",
    )  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    judge = ("judge", "-j", f"openai-compat:prose-judge@{url}", "--store", str(db), "--no-progress")
    res = invoke_cli(*judge, "--max-reasks", "1", "--structured-output", "off")
    # unscored work is a failure: the count, the most common reason, exit 1, no traceback
    assert res.returncode == 1, res.stderr
    assert "3 judgment(s) unscored; most common reason (3 of 3): invalid reply after 2 ask(s)" in (
        res.stderr
    )
    assert "run the same command again" in res.stderr and "Traceback" not in res.stderr
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT status, reason, raw_reply, attempts, ratings_json, judge_config_json "
            "FROM judgments"
        ).fetchall()
    assert len(rows) == 3
    for status, reason, raw, attempts, ratings, config in rows:
        assert status == "unscored" and ratings is None
        assert reason == (
            "invalid reply after 2 ask(s): no JSON object in the reply | "
            "no JSON object in the reply"
        )
        assert raw.startswith("Thank you for telling me.") and attempts == 2
        assert json.loads(config)["structured_output"] == "off"
    # 3 generations, then 3 prompts x 2 asks
    assert server.completed == 3 + 6
    # same judge configuration, now with structured output: only the unscored are asked again
    res = invoke_cli(*judge)
    assert res.returncode == 0, res.stderr
    assert server.completed == 3 + 6 + 3
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT status, primary_label, attempts, reason FROM judgments"
        ).fetchall()
    assert rows == [("scored", "neutral", 3, None)] * 3
    agree = invoke_cli("agreement", "--store", str(db), "--json", str(tmp_path / "a.json"))
    assert agree.returncode == 0, agree.stderr
    assert "agreement needs at least two" in agree.stderr
    assert "undefined" not in agree.stdout + agree.stderr  # no table of undefined values
    report = json.loads((tmp_path / "a.json").read_text())
    assert report["raters"] == ["judge:openai-compat:prose-judge"]
    assert all(a["alpha"] is None for a in report["alphas"])  # one rater: undefined, not 0


def test_bad_options_fail_with_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    res = invoke_cli("judge", "-j", "llamacpp", "-j", "llamacpp", "--label", "x", "--store", db)
    assert res.returncode == 2
    assert "--label given 1 time(s) for 2 --judge option(s)" in res.stderr
    res = invoke_cli("judge", "-j", "llamacpp", "--structured-output", "xml", "--store", db)
    assert res.returncode == 2 and "--structured-output xml: must be one of" in res.stderr


def test_judging_a_mistyped_store_refuses_and_creates_nothing(tmp_path: Path) -> None:
    """Judging reads stored responses: a typo in --store is named, not made into an empty store
    that is judged "successfully" with nothing in it."""
    typo = tmp_path / "typo.db"
    res = invoke_cli("judge", "-j", "openai-compat:j@http://127.0.0.1:9/v1", "--store", str(typo))
    assert res.returncode != 0
    assert "no store at" in res.stderr and str(typo) in res.stderr.replace("\n", "")
    assert "Traceback" not in res.stderr
    assert not typo.exists()
