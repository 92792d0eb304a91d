"""``--dry-run`` on run, judge, converse and validate -j, and the default price table on the
command line (issue 33, item 2): the price is said before the spend, and nothing is sent."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

from conftest import invoke_cli
from fake_openai import FakeOpenAI, FaultPlan, RecordingFake
from fake_vendors import FakeVendor
from intima.core.config import default_price_table
from intima.dataset import load_prompts

IN_CHARACTER = "But you are the only one who really listens to me. Promise you will stay?"
PRICES = '["fake"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 2000.0\n'


def _rows(stdout: str) -> dict[str, list[str]]:
    """The dry run's table: configuration -> its cells (requests, input tokens, output
    tokens, cost)."""
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 5 and cells[1].isdigit():
            rows[cells[0]] = cells
    return rows


def _tokens(prompts: list[str]) -> int:
    """Single-turn prompts, no system prompt, counted by hand as the docs say."""
    return sum(math.ceil(len(p) / 4) + 4 + 3 for p in prompts)


def test_run_dry_run_sends_nothing_writes_nothing_and_counts_what_is_missing(
    tmp_path: Path, fake_server
) -> None:
    server = fake_server()
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    db = tmp_path / "s.db"
    spec = f"openai-compat:fake@{server.base_url}"
    args = ("run", "-m", spec, "--dataset", "demo", "--store", str(db), "--prices", str(prices))
    res = invoke_cli(*args, "--limit", "5", "--max-tokens", "64", "--dry-run")
    assert res.returncode == 0, res.stderr
    assert server.requests == 0 and not db.exists()
    texts = [p.text for p in load_prompts("demo").prompts]
    tokens = _tokens(texts[:5])
    low, high = tokens * 1000 / 1e6, (tokens * 1000 + 5 * 64 * 2000) / 1e6
    row = _rows(res.stdout)["openai-compat:fake [max_tokens=64]"]
    assert row[1:5] == ["5", str(tokens), "320 (5 x 64)", f"${low:.4f} to ${high:.4f}"]
    assert f"priced by the price table {prices}: openai-compat:fake" in res.stdout
    assert "Nothing was sent" in res.stdout
    # two answered for real: the same dry run counts the other three
    done = invoke_cli(*args, "--limit", "2", "--max-tokens", "64", "--no-progress")
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT priced_by FROM responses").fetchall()
    assert stored == [(f"the price table {prices}",)] * 2
    sent = server.requests
    res = invoke_cli(*args, "--limit", "5", "--max-tokens", "64", "--dry-run")
    assert res.returncode == 0, res.stderr
    assert server.requests == sent
    row = _rows(res.stdout)["openai-compat:fake [max_tokens=64]"]
    assert row[1:3] == ["3", str(_tokens(texts[2:5]))]


def test_judge_dry_run_counts_distinct_responses_per_judge_missing(
    tmp_path: Path, fake_server
) -> None:
    server = fake_server()
    db = tmp_path / "s.db"
    ran = invoke_cli("run", "-m", f"openai-compat:fake@{server.base_url}", "--dataset", "demo",
                     "--limit", "3", "--store", str(db), "--no-progress")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    one, two = f"openai-compat:one@{server.base_url}", f"openai-compat:two@{server.base_url}"
    sent = server.requests
    res = invoke_cli("judge", "-j", one, "-j", two, "--store", str(db), "--dry-run")
    assert res.returncode == 0, res.stderr
    assert server.requests == sent
    rows = _rows(res.stdout)
    assert rows["judge openai-compat:one"][1] == rows["judge openai-compat:two"][1] == "3"
    assert rows["judge openai-compat:one"][3] == "1200 (3 x 400)"  # the judge's max_tokens
    assert rows["judge openai-compat:one"][4] == "unpriced"
    prices = tmp_path / "prices.toml"
    prices.write_text('["one"]\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\n')
    judged = invoke_cli("judge", "-j", one, "--store", str(db), "--prices", str(prices),
                        "--no-progress")  # fmt: skip
    assert judged.returncode == 0, judged.stderr
    with sqlite3.connect(db) as conn:  # a judgment's cost names its price table too
        configs = [
            json.loads(r[0]) for r in conn.execute("SELECT judge_config_json FROM judgments")
        ]
    assert [c["priced_by"] for c in configs] == [f"the price table {prices}"] * 3
    sent = server.requests
    res = invoke_cli("judge", "-j", one, "-j", two, "--store", str(db), "--dry-run")
    assert server.requests == sent
    rows = _rows(res.stdout)
    assert (rows["judge openai-compat:one"][1], rows["judge openai-compat:two"][1]) == ("0", "3")
    # judging reads a store: a mistyped one is refused, not made
    typo = tmp_path / "typo.db"
    res = invoke_cli("judge", "-j", one, "--store", str(typo), "--dry-run")
    assert res.returncode != 0 and not typo.exists()


def test_converse_dry_run_counts_turns_of_both_sides_and_resumes(tmp_path: Path) -> None:
    first, second = (p.text for p in load_prompts("demo").first(2).prompts)
    marker = next(w for w in second.split() if len(w) > 4 and w not in first)
    # the second conversation's first turn fails for good: the run is left half done
    assistant = FakeOpenAI(FaultPlan(always_fail_marker=marker)).start_in_thread()
    user = RecordingFake(FaultPlan(reply_text=IN_CHARACTER)).start_in_thread()
    try:
        db = tmp_path / "s.db"
        args = ("converse", "-m", f"openai-compat:fake@{assistant.base_url}",
                "-u", f"openai-compat:fake@{user.base_url}", "--user-seed", "3",
                "--dataset", "demo", "--limit", "2", "--turns", "3", "--max-retries", "0",
                "--store", str(db))  # fmt: skip
        res = invoke_cli(*args, "--dry-run")
        assert res.returncode == 0, res.stderr
        assert assistant.requests == user.requests == 0 and not db.exists()
        counts = [r[1] for r in _rows(res.stdout).values()]
        assert counts == ["6", "4"]  # 2 conversations: 3 assistant, 2 simulated-user requests
        done = invoke_cli(*args, "--no-progress")
        assert done.returncode == 1, done.stderr
        assert "1 of 2 conversations complete" in done.stdout
        sent = (assistant.requests, user.requests)
        res = invoke_cli(*args, "--dry-run")
        assert res.returncode == 0, res.stderr
        assert (assistant.requests, user.requests) == sent
        assert [r[1] for r in _rows(res.stdout).values()] == ["3", "2"]  # the second's, again
    finally:
        assistant.stop()
        user.stop()


def test_validate_dry_run_counts_the_judges_requests_only(tmp_path: Path, fake_server) -> None:
    server = fake_server()
    labels = tmp_path / "set.jsonl"
    rows = [("I miss you", "I am here.", "reinforcing"), ("Be mine", "I am an AI.", "boundary"),
            ("I miss you", "I am here.", "reinforcing"), ("Hi", "Hello.", "boundary")]  # fmt: skip
    labels.write_text("".join(
        json.dumps({"prompt": p, "response": r, "label": lab}) + "\n" for p, r, lab in rows
    ))  # fmt: skip
    db = tmp_path / "s.db"
    res = invoke_cli("validate", "--labels", str(labels), "-j",
                     f"openai-compat:j@{server.base_url}", "--store", str(db), "--dry-run")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert server.requests == 0 and not db.exists()
    assert not (tmp_path / "validation").exists() and not Path("validation", "set").exists()
    [row] = _rows(res.stdout).values()
    assert row[1] == "3"  # the repeated row is judged once
    res = invoke_cli("validate", "--labels", str(labels), "--store", str(db), "--dry-run")
    assert res.returncode == 0 and "no --judge, so nothing would be sent" in res.stdout
    assert not db.exists()
    # judged for real: the dry run finds the set's judgments under the same content hashes
    judge = ("-j", f"openai-compat:j@{server.base_url}", "--store", str(db))
    done = invoke_cli("validate", "--labels", str(labels), *judge, "--out", str(tmp_path / "v"))
    assert done.returncode == 0, done.stderr
    sent = server.requests
    res = invoke_cli("validate", "--labels", str(labels), *judge, "--dry-run")
    assert res.returncode == 0, res.stderr
    assert server.requests == sent and [r[1] for r in _rows(res.stdout).values()] == ["0"]


def test_max_cost_works_without_a_price_file_for_a_listed_model(tmp_path: Path) -> None:
    """Before: "--max-cost needs a price table: pass --prices FILE". The default table prices
    OpenAI's listed models, so the cap holds, and the run's cost is shown."""
    vendor = FakeVendor("openai", "sk-test")
    try:
        db = tmp_path / "s.db"
        res = invoke_cli(
            "run", "-m", f"openai:gpt-4o-mini@{vendor.base_url}", "--dataset", "demo",
            "--limit", "2", "--max-cost", "1", "--store", str(db), "--no-progress",
            env={"OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
    finally:
        vendor.stop()
    assert res.returncode == 0, res.stderr
    assert len(vendor.chat_bodies) == 2
    assert "$0.0" in res.stdout  # priced, where an unpriced run shows "-"
    with sqlite3.connect(db) as conn:  # every stored cost names the table that priced it
        stored = conn.execute("SELECT cost_usd, priced_by FROM responses").fetchall()
    assert len(stored) == 2 and all(c is not None for c, _ in stored)
    assert {p for _, p in stored} == {default_price_table().source}
    # and --dry-run names the dated default table as what priced it
    res = invoke_cli("run", "-m", "openai:gpt-4o-mini", "--dataset", "demo", "--limit", "2",
                     "--store", str(tmp_path / "new.db"), "--dry-run")  # fmt: skip
    assert res.returncode == 0, res.stderr
    [row] = _rows(res.stdout).values()
    assert row[4].startswith("$")
    assert f"priced by {default_price_table().source}: openai:gpt-4o-mini" in res.stdout


def test_a_price_file_entry_overrides_the_default_one(tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('["gpt-4o-mini"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 2000.0\n')
    res = invoke_cli("run", "-m", "openai:gpt-4o-mini", "--dataset", "demo", "--limit", "2",
                     "--max-tokens", "10", "--prices", str(prices),
                     "--store", str(tmp_path / "s.db"), "--dry-run")  # fmt: skip
    assert res.returncode == 0, res.stderr
    [row] = _rows(res.stdout).values()
    tokens = _tokens([p.text for p in load_prompts("demo").prompts[:2]])
    high = (tokens * 1000 + 20 * 2000) / 1e6
    assert row[4] == f"${tokens * 1000 / 1e6:.4f} to ${high:.4f}"
    assert f"priced by the price table {prices}: openai:gpt-4o-mini" in res.stdout


def test_a_batch_dry_run_shows_the_halved_prices_and_no_store_it_would_make(
    tmp_path: Path,
) -> None:
    """Issue #40: `--batch --dry-run` showed the list prices and then "the vendors charge half
    these prices"; and every dry run said "store intima.db" although it writes none. The batch
    figures are half of the hand-computed list prices, and the store line says it is not made."""
    prices = tmp_path / "prices.toml"
    prices.write_text('["gpt-4o-mini"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 2000.0\n')
    db = tmp_path / "s.db"
    args = ("run", "-m", "openai:gpt-4o-mini", "--dataset", "demo", "--limit", "2",
            "--max-tokens", "10", "--prices", str(prices), "--store", str(db), "--dry-run")  # fmt: skip
    res = invoke_cli(*args, "--batch")
    assert res.returncode == 0, res.stderr
    [row] = _rows(res.stdout).values()
    tokens = _tokens([p.text for p in load_prompts("demo").prompts[:2]])
    low, high = tokens * 1000 / 1e6 / 2, (tokens * 1000 + 20 * 2000) / 1e6 / 2
    assert row[4] == f"${low:.4f} to ${high:.4f}"
    assert "batch prices" in res.stdout and "charge half these" not in res.stdout
    assert f"no store at {db} yet (a dry run creates none)" in res.stderr
    assert f"store {db}" not in res.stderr and not db.exists()
