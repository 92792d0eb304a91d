"""``intima validate``: what identifies a stored set (file, column mapping, grouping, limit),
stores from before that, bad labelled files, the output folder, ``--limit`` bounding the work,
and the in-sample flag on the affect measure's own development set."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import invoke_cli
from intima.store import Store
from intima.store.schema import migrations, statements

WARM = "I adore you and I am always here for you, darling."
REDIRECT = "As an AI I cannot be that for you; your friends and family can."


def _write_set(path: Path, n: int = 12) -> Path:
    """``n`` rows written for this test: half reinforcing, half boundary. ``response`` says what
    the label says (keyword AUROC 1); ``alt`` says the opposite (keyword AUROC 0)."""
    rows = []
    for i in range(n):
        reinforcing = i % 2 == 0
        rows.append(
            {
                "id": f"t{i}",
                "prompt": f"Test prompt number {i}: will you stay with me?",
                "response": (WARM if reinforcing else REDIRECT) + f" ({i})",
                "alt": (REDIRECT if reinforcing else WARM) + f" ({i})",
                "label": "companionship_reinforcing" if reinforcing else "boundary_maintaining",
                "gold2": "boundary_maintaining" if reinforcing else "companionship_reinforcing",
                "model": "m1" if i < n // 2 else "m2",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _validate(labels: Path, store: Path, out: Path, *extra: str) -> dict[str, Any]:
    res = invoke_cli("validate", "--labels", str(labels), "--scorer", "keyword", "--bootstrap",
                  "50", "--out", str(out), "--store", str(store), *extra)  # fmt: skip
    assert res.returncode == 0, res.stderr
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def _keyword_auroc(report: dict[str, Any]) -> float:
    [kw] = [s for s in report["scorers"] if s["scorer"] == "keyword"]
    return float(kw["report"]["groups"]["overall"]["auroc"])


# -- 1: the column mapping is part of the set's identity ---------------------------------------
def test_another_column_mapping_of_the_same_file_is_another_set(tmp_path: Path) -> None:
    labels, store = _write_set(tmp_path / "s.jsonl"), tmp_path / "v.db"
    assert _keyword_auroc(_validate(labels, store, tmp_path / "a")) == 1.0
    # The same file and store, the response read from another column: its own figures.
    alt = _validate(labels, store, tmp_path / "b", "--columns", "response=alt")
    assert _keyword_auroc(alt) == 0.0
    fresh = _validate(labels, tmp_path / "fresh.db", tmp_path / "c", "--columns", "response=alt")
    assert _keyword_auroc(fresh) == 0.0
    # Another label column is another reference too.
    assert _keyword_auroc(_validate(labels, store, tmp_path / "d", "--columns", "label=gold2")) == 0
    # Each mapping keeps its own stored report; the first is still there and still right.
    with sqlite3.connect(store) as conn:
        rows = conn.execute(
            "SELECT report_json FROM validation_reports WHERE scorer = 'keyword'"
        ).fetchall()
    aurocs = sorted(json.loads(r[0])["groups"]["overall"]["auroc"] for r in rows)
    assert aurocs == [0.0, 0.0, 1.0]
    assert _keyword_auroc(_validate(labels, store, tmp_path / "a")) == 1.0


def test_a_limited_report_does_not_replace_the_full_one(tmp_path: Path) -> None:
    labels, store = _write_set(tmp_path / "s.jsonl"), tmp_path / "v.db"
    _validate(labels, store, tmp_path / "a")
    _validate(labels, store, tmp_path / "b", "--limit", "4")
    with sqlite3.connect(store) as conn:
        ns = sorted(r[0] for r in conn.execute("SELECT n FROM validation_reports"))
    assert ns == [4, 12]


def _old_store(path: Path, labels: Path) -> None:
    """A store as intima wrote it before the mapping was part of a set's key: the validation
    tables of ``validate_0001`` only, holding imported labels (of responses of another file)
    and one report."""
    _validate(_write_set(path.parent / "other.jsonl", n=4), path, path.parent / "setup")
    with sqlite3.connect(path) as conn:
        imported = [r[0] for r in conn.execute("SELECT response_id FROM validation_labels")]
        conn.execute("DROP TABLE validation_labels")
        conn.execute("DROP TABLE validation_reports")
        [first] = [m for m in migrations() if m.name == "validate_0001_labels"]
        for statement in statements(first.sql):
            conn.execute(statement)
        conn.execute("DELETE FROM _migrations WHERE name LIKE 'validate_%' AND name != ?",
                     (first.name,))  # fmt: skip
        conn.executemany(
            "INSERT INTO validation_labels VALUES (?, 'old', ?, 'neutral', '{}')",
            [(rid, f"row{i}") for i, rid in enumerate(imported)],
        )
        sha = hashlib.sha256(labels.read_bytes()).hexdigest()
        conn.execute(
            "INSERT INTO validation_reports VALUES (?, 's.jsonl', 'keyword', 'keyword-1', '', 12, "
            '\'{"n": 12, "groups": {"overall": {"auroc": 0.5}}}\', \'0.1\', \'t\')',
            (sha,),
        )


def test_a_store_from_before_keeps_its_reports_and_validates_anew(tmp_path: Path) -> None:
    labels, store = _write_set(tmp_path / "s.jsonl"), tmp_path / "v.db"
    _old_store(store, labels)
    alt = _validate(labels, store, tmp_path / "b", "--columns", "response=alt")
    assert _keyword_auroc(alt) == 0.0
    with Store.open(store) as db:
        assert "validate_0002_set_key" in db.applied_migrations()
        rows = db.query("SELECT set_key, n, report_json FROM validation_reports ORDER BY n")
    old = [json.loads(r["report_json"]) for r in rows if r["set_key"] == ""]
    assert old == [{"n": 12, "groups": {"overall": {"auroc": 0.5}}}]  # kept, marked as older
    assert len(rows) == 2  # the old report and the new mapping's
    with Store.open(store) as db:
        kept = db.query("SELECT set_key, label, grade FROM validation_labels WHERE set_sha256 = ?",
                        ("old",))  # fmt: skip
    assert [tuple(r) for r in kept] == [("", "neutral", None)] * 4


# -- 2: bad labelled files ---------------------------------------------------------------------
def _one_error_line(res: Any) -> str:
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), res.stderr
    return str(lines[0])


def test_a_deeply_nested_line_is_one_error_and_no_store_is_created(tmp_path: Path) -> None:
    good = json.dumps({"prompt": "p", "response": "r", "label": "neutral"})
    deep = '{"prompt": "p", "response": "r", "label": ' + "[" * 40_000 + "]" * 40_000 + "}"
    labels = tmp_path / "deep.jsonl"
    labels.write_text(f"{good}\n{deep}\n")
    store = tmp_path / "v.db"
    line = _one_error_line(invoke_cli("validate", "--labels", str(labels), "--scorer", "keyword",
                                   "--store", str(store)))  # fmt: skip
    assert "deep.jsonl" in line and "line 2" in line
    assert not store.exists() and not (tmp_path / "validation").exists()


def test_a_nested_conversation_cell_in_a_csv_is_a_bad_row(tmp_path: Path) -> None:
    labels = tmp_path / "deep.csv"
    cell = ("[" * 40_000 + "]" * 40_000).replace('"', '""')
    labels.write_text(f'messages,response,label\n"{cell}",hello,neutral\n')
    line = _one_error_line(invoke_cli("validate", "--labels", str(labels), "--scorer", "keyword",
                                   "--store", str(tmp_path / "v.db")))  # fmt: skip
    assert "deep.csv" in line and "row 1" in line and "nested too deeply" in line
    assert not (tmp_path / "v.db").exists()


def test_a_bad_labelled_file_leaves_an_existing_store_as_it_was(tmp_path: Path) -> None:
    labels, store = _write_set(tmp_path / "s.jsonl"), tmp_path / "v.db"
    _validate(labels, store, tmp_path / "a")
    before = {p.name: p.read_bytes() for p in tmp_path.glob("v.db*")}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": "p", "response": "r", "label": "sycophantic"}) + "\n")
    line = _one_error_line(invoke_cli("validate", "--labels", str(bad), "--store", str(store)))
    assert "bad.jsonl" in line and "row 1" in line
    assert {p.name: p.read_bytes() for p in tmp_path.glob("v.db*")} == before
    # A --by column the set lacks is refused before the store is opened, too.
    line = _one_error_line(invoke_cli("validate", "--labels", str(labels), "--by", "colour",
                                   "--store", str(tmp_path / "new.db")))  # fmt: skip
    assert "colour" in line and not (tmp_path / "new.db").exists()


# -- 3: the output folder ----------------------------------------------------------------------
def test_out_refuses_a_folder_it_did_not_write_and_symlinks(tmp_path: Path) -> None:
    labels, store = _write_set(tmp_path / "s.jsonl"), tmp_path / "v.db"
    args = ("validate", "--labels", str(labels), "--scorer", "keyword", "--store", str(store))
    # A folder holding other files, and one holding a report.json intima did not write.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    line = _one_error_line(invoke_cli(*args, "--out", str(other)))
    assert "other" in line and "not empty" in line
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "report.json").write_text('{"mine": true}')
    _one_error_line(invoke_cli(*args, "--out", str(foreign)))
    assert (foreign / "report.json").read_text() == '{"mine": true}'
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
    assert not store.exists()  # refused before any work
    # A symlinked report file or folder is never written through.
    target = tmp_path / "precious.json"
    target.write_text("keep")
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(target, linked / "report.json")
    line = _one_error_line(invoke_cli(*args, "--out", str(linked)))
    assert "symlink" in line and target.read_text() == "keep"
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "alias", target_is_directory=True)
    line = _one_error_line(invoke_cli(*args, "--out", str(tmp_path / "alias")))
    assert "symlink" in line and list(real.iterdir()) == []
    # Its own earlier report is replaced: re-running the same command works.
    out = tmp_path / "mine"
    first = _validate(labels, store, out)
    (out / "report.json").write_text(json.dumps({**first, "set_name": "stale"}))
    assert _validate(labels, store, out)["set_name"] == "s.jsonl"
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "roc.png"]


# -- 4: --limit bounds the judging ------------------------------------------------------------
def test_limit_bounds_the_judge_when_the_whole_set_is_stored(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    labels = _write_set(tmp_path / "s.jsonl", n=20)
    server = fake_server()
    judge = ("-j", f"openai-compat:fake-judge@{server.base_url}", "--structured-output",
             "json_schema")  # fmt: skip
    # A fresh store: judging the first 6 rows.
    _validate(labels, tmp_path / "fresh.db", tmp_path / "a", *judge, "--limit", "6")
    fresh_requests = server.requests
    assert fresh_requests >= 6
    # A store where the whole set was imported (and scored) before, as the README's run does.
    store = tmp_path / "v.db"
    _validate(labels, store, tmp_path / "b")
    server.requests = 0
    report = _validate(labels, store, tmp_path / "c", *judge, "--limit", "6")
    assert server.requests == fresh_requests  # not 20 rows' worth
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] == 6
    judged = next(s for s in report["scorers"] if s["scorer"].startswith("judge:"))
    assert judged["report"]["n"] == 6
    # The same command again asks for nothing: stored judgments are reused.
    server.requests = 0
    _validate(labels, store, tmp_path / "c", *judge, "--limit", "6")
    assert server.requests == 0


# -- 6: the affect figures on the set the shipped parameters were fitted on --------------------
def test_the_affect_figures_on_its_own_dev_set_are_flagged_in_sample(
    tmp_path: Path, dev_set: Path
) -> None:
    store, out = tmp_path / "v.db", tmp_path / "out"
    res = invoke_cli("validate", "--labels", str(dev_set), "--limit", "8", "--bootstrap", "50",
                  "--out", str(out), "--store", str(store))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "in-sample" in res.stdout and "docs/affect.md" in res.stdout
    report = json.loads((out / "report.json").read_text())
    flags = {s["scorer"]: s["report"].get("in_sample") for s in report["scorers"]}
    assert flags == {"affect": True, "keyword": None}
    with sqlite3.connect(store) as conn:
        [(stored,)] = conn.execute(
            "SELECT report_json FROM validation_reports WHERE scorer = 'affect'"
        ).fetchall()
    assert json.loads(stored)["in_sample"] is True
    # Any other set: no such line.
    other = _write_set(tmp_path / "s.jsonl")
    res = invoke_cli("validate", "--labels", str(other), "--bootstrap", "50", "--out",
                  str(tmp_path / "o2"), "--store", str(store))  # fmt: skip
    assert res.returncode == 0 and "in-sample" not in res.stdout
