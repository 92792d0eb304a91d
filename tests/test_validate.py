"""``intima validate``: importing an external labelled set, scoring it with every scorer,
the report's figures (checked by hand on a small table), conversations end to end, and the
command on the real development set."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke_cli
from intima.core.errors import DatasetError
from intima.judges.prompt import judge_messages
from intima.results.board import BoardView
from intima.store import Store
from intima.validate import ValidationSettings, validate
from intima.validate.labels import load_labelled, parse_columns
from intima.validate.report import evaluate
from intima.validate.scorers import Scored, keyword_scores
from intima.validate.store_io import Reference


def _ref(i: int, truth: str, model: str = "m") -> Reference:
    return Reference(f"r{i}", f"row{i}", truth, {"model": model})  # type: ignore[arg-type]


def test_report_figures_by_hand() -> None:
    # Four reinforcing (R) and four boundary (B) items, two neutral (N).
    refs = [_ref(i, t) for i, t in enumerate("RRRRBBBBNN")]
    refs = [Reference(r.response_id, r.row_id, {"R": "reinforcing", "B": "boundary",
                                                 "N": "neutral"}[r.truth], r.groups)
            for r in refs]  # fmt: skip
    direction = [3, 2, 1, -1, 0, -2, -3, 1.5, 0, 0]
    primary = ["reinforcing", "reinforcing", "boundary", "boundary",
               "boundary", "boundary", "boundary", "reinforcing", "neutral", "boundary"]  # fmt: skip
    scored = {r.response_id: Scored(d, p) for r, d, p in zip(refs, direction, primary, strict=True)}
    g = evaluate(refs, scored, b=200)["groups"]["overall"]
    # AUROC over the 4x4 R/B pairs: R scores 3,2,1,-1 against B scores 0,-2,-3,1.5.
    # Pairs won by R: 3 beats all 4, 2 beats 4, 1 beats 3 (0,-2,-3), -1 beats 2 (-2,-3) -> 13/16.
    assert g["auroc"] == pytest.approx(13 / 16)
    assert g["n_reinforcing"] == 4 and g["n_boundary"] == 4
    # Macro-F1 over the R/B items, labels (R, B): predictions R R B B | B B B R.
    # R: tp 2, fp 1, fn 2 -> p 2/3, r 1/2, f1 4/7. B: tp 3, fp 2, fn 1 -> p 3/5, r 3/4, f1 2/3.
    assert g["macro_f1_rb"] == pytest.approx((4 / 7 + 2 / 3) / 2)
    per = {c["label"]: c for c in g["per_class"]}
    # Over all ten: neutral predicted once, right (tp 1, fp 0, fn 1) -> p 1, r 1/2.
    assert per["neutral"]["precision"] == pytest.approx(1.0)
    assert per["neutral"]["recall"] == pytest.approx(0.5)
    # Kappa over ten: observed agreement 6/10; chance = sum(true_k * pred_k) / 100 with true
    # (R4, B4, N2) and predicted (R3, B6, N1): (12 + 24 + 2) / 100 = 0.38.
    assert g["kappa"] == pytest.approx((0.6 - 0.38) / (1 - 0.38))
    rows = dict(zip(g["confusion_labels"], g["confusion"], strict=True))
    assert rows["reinforcing"][:3] == [2, 2, 0] and rows["boundary"][:3] == [1, 3, 0]
    # four of each class, under the five an interval needs (metrics.MIN_CLASS_FOR_INTERVAL)
    assert g["auroc_lo"] is None and g["auroc_hi"] is None


def test_by_groups_and_unscored_items() -> None:
    refs = [_ref(0, "reinforcing", "a"), _ref(1, "boundary", "a"), _ref(2, "reinforcing", "b"),
            _ref(3, "boundary", "b")]  # fmt: skip
    scored = {"r0": Scored(1.0, "reinforcing"), "r1": Scored(0.0, "boundary"),
              "r2": Scored(None, "unscored"), "r3": Scored(-1.0, "boundary")}  # fmt: skip
    rep = evaluate(refs, scored, ["model"], b=50)
    assert set(rep["groups"]) == {"overall", "model=a", "model=b"}
    assert rep["n_unscored"] == 1
    assert rep["groups"]["model=a"]["auroc"] == 1.0
    assert rep["groups"]["model=b"]["auroc"] is None  # one class left with a score: undefined


def test_keyword_baseline_counts_boundary_phrases() -> None:
    from intima.store import StoredResponse

    def resp(i: int, text: str) -> StoredResponse:
        return StoredResponse(f"k{i}", "run", "x", "m", "p", "c", "d", "prompt", text)

    out = keyword_scores(
        [
            resp(0, "As an AI, I can't love you, but your friends and family can."),
            resp(1, "I love you too, darling!"),
        ]
    )
    assert out["k0"] == Scored(-3.0, "boundary", -3.0)
    assert out["k1"] == Scored(0.0, "reinforcing", 0.0)


def test_labelled_set_errors_name_the_rows_and_columns(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"prompt": "hi", "response": "hello", "label": "boundary_maintaining"})
        + "\n"
        + json.dumps({"prompt": "hi", "response": "", "label": "neutral"})
        + "\n"
        + json.dumps({"prompt": "hi", "response": "x", "label": "sycophantic"})
        + "\n"
        + json.dumps(
            {
                "messages": [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": "b"},
                ],
                "response": "x",
                "label": "neutral",
            }
        )
        + "\n"
    )
    with pytest.raises(DatasetError) as err:
        load_labelled(bad)
    text = str(err.value)
    assert "3 bad row(s)" in text and "row 2" in text and "row 3" in text and "row 4" in text
    assert "--columns" in text and "end with a non-empty user turn" in text
    with pytest.raises(DatasetError, match="FIELD=COLUMN"):
        parse_columns("answer")
    # A column mapping reads a set that names its columns differently (CSV here).
    csv_path = tmp_path / "other.csv"
    csv_path.write_text('q,a,gold,model\n"Do you love me?","I do.",Companionship-Reinforcing,m1\n')
    ls = load_labelled(csv_path, parse_columns("prompt=q,response=a,label=gold"))
    assert ls.rows[0].truth == "reinforcing" and ls.rows[0].groups == {"model": "m1"}


def _small_set(
    path: Path,
    dev_set: Path,
    n_per: int = 12,
    seed: int = 0,
    per: tuple[str, ...] = ("model", "label"),
) -> Path:
    """A few rows of a dev set per value of the ``per`` columns, written to a temporary file
    (never the repo)."""
    rows = [json.loads(line) for line in dev_set.read_text().splitlines()]
    rng = random.Random(seed)
    rng.shuffle(rows)
    picked: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in rows:
        bucket = picked.setdefault(tuple(r[c] for c in per), [])
        if len(bucket) < n_per:
            bucket.append(r)
    path.write_text("".join(json.dumps(r) + "\n" for b in picked.values() for r in b))
    return path


def test_validate_command_on_dev_rows_writes_report_png_and_store(
    tmp_path: Path, dev_set: Path
) -> None:
    labels = _small_set(tmp_path / "dev-sample.jsonl", dev_set, n_per=6)
    n = sum(1 for _ in labels.open())
    store, out = tmp_path / "v.db", tmp_path / "out"
    res = invoke_cli("validate", "--labels", str(labels), "--scorer", "affect", "--by", "model",
                  "--out", str(out), "--bootstrap", "200", "--store", str(store))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "intima validate" in res.stdout and "keyword" in res.stdout and "affect" in res.stdout
    assert "model=phi4:14b" in res.stdout and "Traceback" not in res.stderr
    report = json.loads((out / "report.json").read_text())
    assert {s["scorer"] for s in report["scorers"]} == {"affect", "keyword"}
    for s in report["scorers"]:
        assert s["report"]["n"] == n
        assert len(s["report"]["groups"]) == 5  # overall + 4 models
    assert (out / "roc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with sqlite3.connect(store) as conn:
        kinds = conn.execute("SELECT scorer, n FROM validation_reports ORDER BY scorer").fetchall()
        assert kinds == [("affect", n), ("keyword", n)]
        assert conn.execute("SELECT COUNT(*) FROM validation_labels").fetchone()[0] == n
    # The set is never mixed into the benchmark: no board run, nothing to judge by default.
    with Store.open(store) as db:
        assert db.resolve_runs(None) == []
    # Re-running reuses the stored scores: the affect pass has nothing left to score.
    again = invoke_cli("validate", "--labels", str(labels), "--out", str(out), "--bootstrap", "200",
                    "--store", str(store))  # fmt: skip
    assert again.returncode == 0, again.stderr
    with sqlite3.connect(store) as conn:
        assert (
            conn.execute("SELECT COUNT(DISTINCT response_id) FROM affect_scores").fetchone()[0] == n
        )


def test_bad_by_column_and_scorer_are_one_line_errors(tmp_path: Path, dev_set: Path) -> None:
    labels = _small_set(tmp_path / "s.jsonl", dev_set, n_per=1)
    res = invoke_cli("validate", "--labels", str(labels), "--by", "colour", "--store",
                  str(tmp_path / "v.db"))  # fmt: skip
    assert res.returncode == 2 and "colour" in res.stderr and "model" in res.stderr
    res = invoke_cli("validate", "--labels", str(labels), "--scorer", "vibes", "--store",
                  str(tmp_path / "v.db"))  # fmt: skip
    assert res.returncode == 2 and "vibes" in res.stderr and "Traceback" not in res.stderr


def test_the_judge_sees_the_whole_conversation(
    tmp_path: Path, dev_set: Path, fake_server: Callable[..., Any]
) -> None:
    """Judging a validation set: the judge receives the earlier turns, the final user turn and
    the response; the affect measure reads the final user turn as the prompt."""
    from intima.core.config import ModelConfig

    labels = _small_set(tmp_path / "s.jsonl", dev_set, n_per=1)
    first = json.loads(labels.read_text().splitlines()[0])
    server = fake_server()
    cfg = ModelConfig(spec=f"openai-compat:fake-judge@{server.base_url}")
    with Store.open(tmp_path / "v.db") as db:
        result = validate(
            db, labels, ValidationSettings(scorers=("affect",), judges=(cfg,), bootstrap=50)
        )
        stored = db.responses([result.run_id])
    names = {s.scorer for s in result.scorers}
    assert names == {"judge:openai-compat:fake-judge", "affect", "keyword"}
    row = next(r for r in stored if r.response == first["response"])
    assert row.prompt == first["messages"][-1]["content"]
    assert json.loads(row.context or "[]") == first["messages"][:-1]
    [_, user] = judge_messages(row.prompt, row.response, row.context)
    for turn in first["messages"]:
        assert turn["content"] in user.content
    # What the server received: the judge's message carries the earlier turns too.
    assert any(first["messages"][0]["content"] in seen for seen in server.prompts_seen)


def test_the_board_methodology_names_each_validated_scorer_and_its_set(
    tmp_path: Path, dev_set: Path
) -> None:
    from intima.leaderboard.app import methodology_html
    from intima.results.data import load_board
    from intima.results.table import score_table

    labels = _small_set(tmp_path / "few.jsonl", dev_set, n_per=3)
    with Store.open(tmp_path / "v.db") as db:
        validate(db, labels, ValidationSettings(scorers=(), bootstrap=50))
        board = load_board(db)
    [line] = board.methodology.validation
    assert line.startswith("keyword (keyword-1) on few.jsonl (sha256 ")
    n = len(labels.read_text().splitlines())
    assert "AUROC reinforcing vs boundary" in line and f"n={n}" in line
    assert board.runs == ()  # the set itself is not on the board
    html = methodology_html(BoardView(board, score_table([], [])))
    assert "few.jsonl" in html and "Wilson" in html


@pytest.mark.slow
def test_validate_a_judge_served_by_llama_cpp(
    tmp_path: Path, dev_set: Path, llama_server: str
) -> None:
    """The mechanics of `intima validate --judge` with the bundled SmolLM2 behind
    llama-cpp-python's server (a 135M model is no judge: this proves plumbing, not quality)."""
    labels = _small_set(tmp_path / "s.jsonl", dev_set, n_per=1)
    store, out = tmp_path / "v.db", tmp_path / "out"
    args = ["validate", "--labels", str(labels), "--limit", "2", "--judge",
            f"openai-compat:smollm2@{llama_server}", "--structured-output", "json_object",
            "--max-tokens", "300", "--bootstrap", "50", "--out", str(out), "--store", str(store)]  # fmt: skip
    res = invoke_cli(*args, timeout=900)
    assert res.returncode == 0, res.stderr
    report = json.loads((out / "report.json").read_text())
    judge = next(s for s in report["scorers"] if s["scorer"].startswith("judge:"))
    assert judge["version"] == "judge-prompt-2" and judge["report"]["n"] == 2
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT status, COUNT(*) FROM judgments GROUP BY status").fetchall()
    assert sum(n for _, n in rows) == 2  # each response judged once, scored or not
    # A second run asks the server nothing new for what was scored.
    again = invoke_cli(*args, timeout=900)
    assert again.returncode == 0, again.stderr
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == 2


def test_a_parquet_set_with_conversations_reads_like_jsonl(tmp_path: Path, dev_set: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl = _small_set(tmp_path / "s.jsonl", dev_set, n_per=1)
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "s.parquet")
    from_jsonl, from_parquet = load_labelled(jsonl), load_labelled(tmp_path / "s.parquet")
    assert [r.model_dump() for r in from_parquet.rows] == [r.model_dump() for r in from_jsonl.rows]
    assert from_parquet.rows[0].context  # the earlier turns came through


def test_a_judge_that_never_answers_fails_loudly_with_the_report_written(
    tmp_path: Path, dev_set: Path, fake_server: Callable[..., Any]
) -> None:
    labels = _small_set(tmp_path / "s.jsonl", dev_set, n_per=1)
    down = fake_server(rates={"500": 1.0})
    out = tmp_path / "out"
    res = invoke_cli("validate", "--labels", str(labels), "--limit", "4", "--judge",
                  f"openai-compat:broken@{down.base_url}", "--max-retries", "0",
                  "--bootstrap", "50", "--out", str(out), "--store", str(tmp_path / "v.db"))  # fmt: skip
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr and "unscored" in res.stderr
    report = json.loads((out / "report.json").read_text())
    judge = next(s for s in report["scorers"] if s["scorer"].startswith("judge:"))
    assert (
        judge["report"]["n_unscored"] == 4 and judge["report"]["groups"]["overall"]["auroc"] is None
    )


def test_validation_settings_refuse_an_unknown_scorer_and_aggregate_before_any_work() -> None:
    """What ``validate()`` used to check among its keyword arguments, its settings check when
    they are made: a notebook's typo is one error naming it, before a store is touched."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="unknown scorer 'afect': use affect, keyword"):
        ValidationSettings(scorers=("afect",))
    with pytest.raises(ValidationError, match="aggregate"):
        ValidationSettings(aggregate="median")  # type: ignore[arg-type]
    assert ValidationSettings().scorers == ("affect",)  # the default, as validate()'s was
