"""Batch mode against local stand-ins for OpenAI's Batch API (files, batches, output and error
files) and Anthropic's Message Batches (create, retrieve, results), tests/fake_vendors.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from conftest import invoke_cli, run_cli, wait_for
from fake_vendors import USAGE_IN, USAGE_OUT, FakeVendor
from intima.core.config import ModelConfig, Price, PriceTable
from intima.dataset import PromptSet, load_prompts
from intima.generate.batch import agenerate_batch
from intima.generate.runner import run_record
from intima.judges.batch import ajudge_batch
from intima.store import Store

KEYS = {"openai": "sk-SENTINEL-batch-openai", "anthropic": "sk-ant-SENTINEL-batch"}
ENV = {"OPENAI_API_KEY": KEYS["openai"], "ANTHROPIC_API_KEY": KEYS["anthropic"]}
PRICE = Price(input_per_mtok=2.0, output_per_mtok=8.0)


@pytest.fixture(params=["openai", "anthropic"])
def vendor(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVendor]:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    server = FakeVendor(request.param, KEYS[request.param])
    yield server
    server.stop()


def _five() -> PromptSet:
    demo = load_prompts("demo")
    return PromptSet(info=demo.info, prompts=demo.prompts[:5])


async def _no_wait(_: float) -> None:
    """Polls come back at once; the fake decides when a batch ends."""


def test_batch_generates_records_expired_and_failed_items_and_reasks_them(tmp_path, vendor) -> None:
    vendor.polls_to_finish, vendor.expire_first, vendor.fail_first = 3, 1, 1
    config = ModelConfig(spec=f"{vendor.vendor}:m@{vendor.base_url}")
    prices = PriceTable(prices={"m": PRICE})
    seen: list[tuple[int, int]] = []
    with Store.open(tmp_path / "s.db") as store:
        [first] = asyncio.run(agenerate_batch(store, _five(), [config], prices=prices,
                                              on_progress=lambda e: seen.append((e.done, e.total)),
                                              sleep=_no_wait))  # fmt: skip
        assert (first.generated, first.failed, first.status) == (3, 2, "incomplete")
        assert first.cost_usd == pytest.approx(3 * PRICE.cost(USAGE_IN, USAGE_OUT) / 2)
        errors = sorted(
            r[0] for r in store.query("SELECT error FROM responses WHERE status='error'")
        )
        assert any("expired" in e for e in errors) and any("invalid" in e for e in errors)
        [batch] = store.query("SELECT status, n_items FROM provider_batches")
        assert (batch["status"], batch["n_items"]) == ("imported", 5)
        assert seen[-1] == (5, 5) and vendor.polls >= 3  # progress followed the polls
        [second] = asyncio.run(agenerate_batch(store, _five(), [config], prices=prices,
                                               sleep=_no_wait))  # fmt: skip
        assert (second.already_done, second.generated, second.status) == (3, 2, "complete")
        assert vendor.submissions == 2 and len(vendor.batch_items[_second_id(vendor)]) == 2
        [judged] = asyncio.run(ajudge_batch(store, [config], prices=prices, sleep=_no_wait))
    assert (judged.scored, judged.unscored, vendor.submissions) == (5, 0, 3)
    assert judged.cost_usd == pytest.approx(5 * PRICE.cost(USAGE_IN, USAGE_OUT) / 2)
    [item, *_] = vendor.batch_items[sorted(vendor.batch_items)[-1]]
    if vendor.vendor == "openai":
        assert item["body"]["response_format"]["type"] == "json_schema"
    else:
        assert item["body"]["tool_choice"]["type"] == "tool" and "seed" not in item["body"]
    # stored as the same judgment made live would be: with the form it was sent in
    with Store.open(tmp_path / "s.db") as store:
        used = {json.loads(r[0]).get("structured_output_used")
                for r in store.query("SELECT judge_config_json FROM judgments")}  # fmt: skip
    assert used == {"json_schema" if vendor.vendor == "openai" else "tool"}


def _second_id(vendor: FakeVendor) -> str:
    return next(b for b in vendor.batch_items if b.endswith("_2"))


def test_a_killed_batch_run_resumes_the_same_batch_and_never_submits_twice(
    tmp_path, vendor
) -> None:
    store = tmp_path / "s.db"
    spec = f"{vendor.vendor}:m@{vendor.base_url}"
    args = ["run", "-m", spec, "--dataset", "demo", "--limit", "4", "--batch",
            "--poll-every", "0.05", "--store", str(store)]  # fmt: skip
    vendor.hold.set()  # the batch stays in progress until the first process is dead
    proc = subprocess.Popen(
        [sys.executable, "-m", "intima", *args],
        env={**os.environ, **ENV, "NO_COLOR": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(vendor.polled.is_set, 60, "the first poll of the submitted batch")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    with Store.open(store) as db:
        [row] = db.query("SELECT status FROM provider_batches")
        assert row["status"] == "submitted"
        assert db.query("SELECT COUNT(*) FROM responses")[0][0] == 0
    vendor.hold.clear()
    again = run_cli(*args, env=ENV)
    assert again.returncode == 0, again.stderr
    assert vendor.submissions == 1
    judged = run_cli("judge", "-j", spec, "--batch", "--poll-every", "0.05", "--store", str(store),
                     env=ENV)  # fmt: skip
    assert judged.returncode == 0, judged.stderr
    assert vendor.submissions == 2
    with Store.open(store) as db:
        assert db.query("SELECT COUNT(*) FROM responses WHERE status = 'ok'")[0][0] == 4
        assert db.query("SELECT COUNT(*) FROM judgments WHERE status = 'scored'")[0][0] == 4
        assert {r[0] for r in db.query("SELECT status FROM provider_batches")} == {"imported"}
    for text in (again.stdout + again.stderr, judged.stdout + judged.stderr):
        assert "SENTINEL" not in text
    assert b"SENTINEL" not in store.read_bytes()


def test_batch_refuses_a_provider_without_a_batch_api_and_max_cost(tmp_path) -> None:
    store = str(tmp_path / "s.db")
    no_api = invoke_cli("run", "-m", "openai-compat:m@http://127.0.0.1:9/v1", "--dataset",
                        "demo", "--batch", "--store", store)  # fmt: skip
    assert no_api.returncode != 0 and "Traceback" not in no_api.stderr
    prices = tmp_path / "prices.toml"
    prices.write_text("[m]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n")
    capped = invoke_cli("run", "-m", "openai:m", "--dataset", "demo", "--batch", "--max-cost",
                        "1", "--prices", str(prices), "--store", store, env=ENV)  # fmt: skip
    assert capped.returncode != 0 and "--max-cost" in capped.stderr


def test_every_configuration_and_judge_is_submitted_before_any_is_waited_for(
    tmp_path, vendor
) -> None:
    """Batches take hours: a second model's batch must not wait for the first one's answers."""
    configs = [ModelConfig(spec=f"{vendor.vendor}:{m}@{vendor.base_url}") for m in ("a", "b")]
    polls_while_held = 0

    async def release_once_both_are_in(_: float) -> None:
        nonlocal polls_while_held
        if vendor.hold.is_set():
            polls_while_held += 1
            assert polls_while_held < 50, "the second batch was never submitted"
            if vendor.submissions in (2, 4):
                vendor.hold.clear()

    with Store.open(tmp_path / "s.db") as store:
        vendor.hold.set()
        runs = asyncio.run(agenerate_batch(store, _five(), configs, sleep=release_once_both_are_in))
        assert [r.generated for r in runs] == [5, 5] and vendor.submissions == 2
        vendor.hold.set()
        panel = asyncio.run(ajudge_batch(store, configs, sleep=release_once_both_are_in))
    assert [s.scored for s in panel] == [5, 5] and vendor.submissions == 4  # same texts: 5


def test_a_batch_the_vendor_refused_whole_is_recorded_and_submitted_again(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEYS["openai"])
    server = FakeVendor("openai", KEYS["openai"])
    server.refuse_first_batch = True
    config = ModelConfig(spec=f"openai:m@{server.base_url}")
    try:
        with Store.open(tmp_path / "s.db") as store:
            [first] = asyncio.run(agenerate_batch(store, _five(), [config], sleep=_no_wait))
            errors = {r[0] for r in store.query("SELECT error FROM responses")}
            [again] = asyncio.run(agenerate_batch(store, _five(), [config], sleep=_no_wait))
    finally:
        server.stop()
    assert (first.failed, first.status) == (5, "incomplete")
    assert errors == {"batch failed: fake: the input file was refused"}
    assert (again.generated, again.status, server.submissions) == (5, "complete", 2)


def test_a_submission_killed_before_its_id_was_stored_is_found_not_submitted_again(
    tmp_path, vendor, monkeypatch
) -> None:
    """The window between the vendor's answer and the store's commit: the stored intent's token
    (OpenAI: batch metadata; Anthropic: the custom ids its results carry) finds the batch."""
    from intima.generate import batch as batch_mod

    config = ModelConfig(spec=f"{vendor.vendor}:m@{vendor.base_url}")

    def killed(*_: object) -> None:
        raise SystemExit("killed before the batch id was stored")

    with Store.open(tmp_path / "s.db") as store:
        with monkeypatch.context() as patch:
            patch.setattr(batch_mod, "confirm_batch", killed)
            with pytest.raises(SystemExit):
                asyncio.run(agenerate_batch(store, _five(), [config], sleep=_no_wait))
        [pending] = store.query("SELECT batch_id FROM provider_batches")
        assert pending["batch_id"].startswith("pending-") and vendor.submissions == 1
        [run] = asyncio.run(agenerate_batch(store, _five(), [config], sleep=_no_wait))
        [row] = store.query("SELECT batch_id, status FROM provider_batches")
    assert (run.generated, vendor.submissions) == (5, 1)
    assert (row["batch_id"], row["status"]) == (next(iter(vendor.batches)), "imported")


def test_an_intent_the_vendor_never_received_is_dropped_and_submitted(tmp_path, vendor) -> None:
    from intima.generate import batch as batch_mod
    from intima.providers import get_model

    config = ModelConfig(spec=f"{vendor.vendor}:m@{vendor.base_url}")
    with Store.open(tmp_path / "s.db") as store:
        model = get_model(config)
        run_id = run_record(model.config, _five()).run_id
        job = batch_mod.BatchJob(model, "generate", run_id, "label", config.generation)
        batch_mod.record_batch(
            store, "pending-never-sent", vendor.vendor, job.purpose, job.scope, {"x": "y"}
        )
        [run] = asyncio.run(agenerate_batch(store, _five(), [config], sleep=_no_wait))
        ids = [r[0] for r in store.query("SELECT batch_id FROM provider_batches")]
    assert (run.generated, vendor.submissions) == (5, 1) and "pending-never-sent" not in ids


class _Killed(BaseException):
    """The process dies here: nothing after it runs (BaseException, as a kill is no error)."""


def _kill_before_recording(monkeypatch: pytest.MonkeyPatch) -> None:
    """The window between the vendor's answer and the store's commit, held open: the batch
    ids are never stored."""
    from intima.generate import batch as batch_mod

    monkeypatch.setattr(batch_mod, "confirm_batch", lambda *_: None)


def test_a_judge_panel_killed_before_its_batch_ids_were_stored_resumes_to_its_own_batches(
    tmp_path, vendor, monkeypatch
) -> None:
    """Every panel's judges ask for equally many items: each intent must find its own batch
    (Anthropic keeps no tag: by the custom ids its results carry), never the other's."""
    configs = [ModelConfig(spec=f"{vendor.vendor}:{m}@{vendor.base_url}") for m in ("a", "b")]

    async def killed_once_both_are_in(_: float) -> None:
        if vendor.submissions == 3:
            raise _Killed

    with Store.open(tmp_path / "s.db") as store:
        asyncio.run(agenerate_batch(store, _five(), configs[:1], sleep=_no_wait))
        vendor.hold.set()
        with monkeypatch.context() as patch:
            _kill_before_recording(patch)
            with pytest.raises(_Killed):
                asyncio.run(ajudge_batch(store, configs, sleep=killed_once_both_are_in))
        pending = store.query("SELECT 1 FROM provider_batches WHERE batch_id LIKE 'pending-%'")
        assert len(pending) == 2 and vendor.submissions == 3
        vendor.hold.clear()
        panel = asyncio.run(ajudge_batch(store, configs, sleep=_no_wait))
        rows = store.query("SELECT batch_id, status FROM provider_batches WHERE purpose='judge'")
        again = asyncio.run(ajudge_batch(store, configs, sleep=_no_wait))
    assert [(s.scored, s.unscored) for s in panel] == [(5, 0), (5, 0)]
    assert sorted(r["batch_id"] for r in rows) == sorted(b for b in vendor.batches)[1:]
    assert {r["status"] for r in rows} == {"imported"} and vendor.submissions == 3
    assert [s.already_done for s in again] == [5, 5] and vendor.submissions == 3


def test_a_submission_is_found_behind_more_than_a_page_of_newer_batches(
    tmp_path, vendor, monkeypatch
) -> None:
    """Listings come a page at a time (at most 100): 150 batches submitted since (by others,
    of the same size) must not hide the intent's batch, or it is submitted and paid twice."""
    config = ModelConfig(spec=f"{vendor.vendor}:m@{vendor.base_url}")

    async def killed(_: float) -> None:
        raise _Killed

    with Store.open(tmp_path / "s.db") as store:
        vendor.hold.set()
        with monkeypatch.context() as patch:
            _kill_before_recording(patch)
            with pytest.raises(_Killed):
                asyncio.run(agenerate_batch(store, _five(), [config], sleep=killed))
        [ours] = list(vendor.batches)
        vendor.add_foreign_batches(150, n_items=5)
        vendor.hold.clear()
        [run] = asyncio.run(agenerate_batch(store, _five(), [config], sleep=_no_wait))
        [row] = store.query("SELECT batch_id, status FROM provider_batches")
    assert (run.generated, run.failed, vendor.submissions) == (5, 0, 1)
    assert (row["batch_id"], row["status"]) == (ours, "imported")


def _result_line(vendor: str, text: str) -> tuple[dict, dict]:
    """A result line, and what holds its reply (OpenAI: the response; Anthropic: the result)."""
    line = json.loads(text)
    return line, line["response"] if vendor == "openai" else line["result"]


def _break_lines(vendor: str) -> Callable[[list[str]], list[str]]:
    """Five answers: the first intact, then not JSON, a list, no body, usage "lots"."""
    reply = "body" if vendor == "openai" else "message"

    def mangle(lines: list[str]) -> list[str]:
        no_body, holder = _result_line(vendor, lines[3])
        del holder[reply]
        lots, holder = _result_line(vendor, lines[4])
        holder[reply]["usage"] = "lots"
        return [lines[0], "this is not JSON {", "[1, 2]", json.dumps(no_body), json.dumps(lots)]

    return mangle


def test_malformed_result_lines_fail_their_items_and_the_good_answers_are_imported(
    tmp_path, vendor
) -> None:
    config = ModelConfig(spec=f"{vendor.vendor}:m@{vendor.base_url}")
    vendor.mangle = _break_lines(vendor.vendor)
    with Store.open(tmp_path / "s.db") as store:
        [first] = asyncio.run(agenerate_batch(store, _five(), [config], sleep=_no_wait))
        [batch] = store.query("SELECT batch_id, status FROM provider_batches")
        errors = [r[0] for r in store.query("SELECT error FROM responses WHERE status='error'")]
        vendor.mangle = None
        [second] = asyncio.run(agenerate_batch(store, _five(), [config], sleep=_no_wait))
    assert (first.generated, first.failed, first.status) == (1, 4, "incomplete")
    assert batch["status"] == "imported" and len(errors) == 4 and all(errors)
    assert sum("malformed line(s)" in e for e in errors) == 2  # not JSON, a list: no custom id
    assert sum("without a" in e for e in errors) == 1  # no body
    [warning] = [n for n in first.notes if batch["batch_id"] in n]
    assert "malformed result line" in warning and "\n" not in warning
    assert (second.generated, second.status, vendor.submissions) == (4, "complete", 2)


def test_an_item_answered_twice_is_counted_and_stored_once(tmp_path, vendor) -> None:
    """A repeated custom id: the first answer counts; an item's failure does not hide a later
    answer to it."""
    config = ModelConfig(spec=f"{vendor.vendor}:m@{vendor.base_url}")
    prices = PriceTable(prices={"m": PRICE})

    def repeat(lines: list[str]) -> list[str]:
        failed, _ = _result_line(vendor.vendor, lines[1])
        if vendor.vendor == "openai":
            failed["response"] = {"status_code": 500, "body": {"error": {"message": "fake"}}}
        else:
            error = {"type": "error", "error": {"type": "api_error", "message": "fake"}}
            failed["result"] = {"type": "errored", "error": error}
        return [lines[0], json.dumps(failed), *lines[1:], lines[0]]

    vendor.mangle = repeat
    with Store.open(tmp_path / "s.db") as store:
        [run] = asyncio.run(agenerate_batch(store, _five(), [config], prices=prices,
                                            sleep=_no_wait))  # fmt: skip
        stored = store.query("SELECT status, COUNT(*) FROM responses GROUP BY status")
        [judged] = asyncio.run(ajudge_batch(store, [config], prices=prices, sleep=_no_wait))
        judgments = store.query("SELECT COUNT(*) FROM judgments")[0][0]
    assert (run.generated, run.failed, run.status) == (5, 0, "complete")
    assert run.cost_usd == pytest.approx(5 * PRICE.cost(USAGE_IN, USAGE_OUT) / 2)
    assert [tuple(r) for r in stored] == [("ok", 5)]
    assert any("answered more than once" in n for n in run.notes)
    assert (judged.scored, judged.unscored, judged.requests, judgments) == (5, 0, 5, 5)
    assert judged.cost_usd == pytest.approx(5 * PRICE.cost(USAGE_IN, USAGE_OUT) / 2)
    assert any("answered more than once" in n for n in judged.notes)


def test_answers_the_store_cannot_hold_fail_their_items_alone(tmp_path, vendor) -> None:
    """A lone surrogate (JSON can spell one), a negative or a huge token count: before, the
    store refused the whole batch's answers and every rerun failed the same way. The surrogate
    is replaced (U+FFFD) and the paid-for answer kept, as a live reply's is; the counts fail
    their items alone."""
    config = ModelConfig(spec=f"{vendor.vendor}:m@{vendor.base_url}")
    reply = "body" if vendor.vendor == "openai" else "message"
    tokens = "completion_tokens" if vendor.vendor == "openai" else "output_tokens"

    def unstorable(lines: list[str]) -> list[str]:
        out = [*lines[:2]]
        for n, change in ((2, "text"), (3, -3), (4, 10**30)):
            line, holder = _result_line(vendor.vendor, lines[n])
            if change == "text" and vendor.vendor == "openai":
                holder[reply]["choices"][0]["message"]["content"] = "he\ud800llo"
            elif change == "text":
                holder[reply]["content"][0]["text"] = "he\ud800llo"
            else:
                holder[reply]["usage"][tokens] = change
            out.append(json.dumps(line))
        return out

    vendor.mangle = unstorable
    with Store.open(tmp_path / "s.db") as store:
        [run] = asyncio.run(agenerate_batch(store, _five(), [config], sleep=_no_wait))
        [batch] = store.query("SELECT status FROM provider_batches")
        errors = [r[0] for r in store.query("SELECT error FROM responses WHERE status='error'")]
        texts = [r[0] for r in store.query("SELECT text FROM responses WHERE status='ok'")]
    assert (run.generated, run.failed, batch["status"]) == (3, 2, "imported"), errors
    assert "he\ufffdllo" in texts
    assert len(errors) == 2 and any("is -3, not a count" in e for e in errors)
    assert any("not a count (a whole number, at most 1,000,000,000)" in e for e in errors)


def _errors(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """The error lines a command printed; a traceback fails the test first."""
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")]


def test_a_vendor_out_of_reach_is_one_line_for_run_and_judge_and_a_rerun_works(
    tmp_path, vendor
) -> None:
    store = str(tmp_path / "s.db")
    spec = f"{vendor.vendor}:m@{vendor.base_url}"
    batch = ("--batch", "--poll-every", "0.01", "--store", store)
    first = invoke_cli("run", "-m", spec, "--dataset", "demo", "--limit", "2", *batch, env=ENV)
    assert first.returncode == 0, first.stderr
    port = vendor.port
    vendor.stop()  # the vendor is gone: nothing listens on its port
    for args in (("run", "-m", spec, "--dataset", "demo", "--limit", "3", *batch),
                 ("judge", "-j", spec, *batch)):  # fmt: skip
        down = invoke_cli(*args, env=ENV)
        [line] = _errors(down)
        assert down.returncode == 2 and "cannot reach" in line and vendor.base_url in line
    with Store.open(store) as db:  # nothing written: no new run, no intent, no judgment
        assert db.query("SELECT COUNT(*) FROM runs")[0][0] == 1
        assert {r[0] for r in db.query("SELECT status FROM provider_batches")} == {"imported"}
        assert db.query("SELECT COUNT(*) FROM judgments")[0][0] == 0
    back = FakeVendor(vendor.vendor, KEYS[vendor.vendor], port=port)  # back where it was
    back.submissions = vendor.submissions  # the same vendor: its batch ids go on, not restart
    try:
        again = invoke_cli("run", "-m", spec, "--dataset", "demo", "--limit", "3", *batch, env=ENV)
        judged = invoke_cli("judge", "-j", spec, *batch, env=ENV)
    finally:
        back.stop()
    assert again.returncode == judged.returncode == 0, again.stderr + judged.stderr
    assert back.submissions == 3  # one run and one judge batch, each submitted once
    with Store.open(store) as db:
        assert db.query("SELECT COUNT(*) FROM responses WHERE status = 'ok'")[0][0] == 3
        assert db.query("SELECT COUNT(*) FROM judgments WHERE status = 'scored'")[0][0] == 3


def test_a_submission_lost_on_the_way_keeps_its_intent_and_a_refused_one_drops_it(
    tmp_path, vendor
) -> None:
    store = str(tmp_path / "s.db")
    spec = f"{vendor.vendor}:m@{vendor.base_url}"
    args = ("run", "-m", spec, "--dataset", "demo", "--batch", "--poll-every", "0.01",
            "--store", store)  # fmt: skip
    vendor.create_faults.append(500)  # the vendor may or may not have made the batch
    lost = invoke_cli(*args, "--limit", "2", env=ENV)
    [line] = _errors(lost)
    assert lost.returncode == 2 and "nothing is lost" in line and "run the command again" in line
    with Store.open(store) as db:
        [row] = db.query("SELECT batch_id, status FROM provider_batches")
        assert row["batch_id"].startswith("pending-") and row["status"] == "submitted"
        [run] = db.query("SELECT status FROM runs")
        assert run["status"] == "failed"
    again = invoke_cli(*args, "--limit", "2", env=ENV)  # the vendor never made it: submitted now
    assert again.returncode == 0, again.stderr
    assert vendor.submissions == 1
    vendor.create_faults.append(400)  # refused: no batch exists, so no intent is kept
    refused = invoke_cli(*args, "--limit", "3", env=ENV)
    [line] = _errors(refused)
    assert refused.returncode == 2 and "HTTP 400" in line
    with Store.open(store) as db:
        assert {r[0] for r in db.query("SELECT status FROM provider_batches")} == {"imported"}
        assert db.query("SELECT COUNT(*) FROM responses WHERE status = 'ok'")[0][0] == 2
    last = invoke_cli(*args, "--limit", "3", env=ENV)
    assert last.returncode == 0, last.stderr
    assert vendor.submissions == 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_server_without_a_batch_api_says_so_and_keeps_nothing(
    tmp_path, monkeypatch, provider
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    # OpenAI's chat protocol only (the router's stand-in), or, for Anthropic's SDK, a server
    # that speaks another protocol: both answer 404 to the batch routes.
    server = FakeVendor("hf" if provider == "openai" else "openai", KEYS[provider])
    url = server.base_url if provider == "openai" else f"http://127.0.0.1:{server.port}"
    store = str(tmp_path / "s.db")
    try:
        for args in (
            ("run", "-m", f"{provider}:m@{url}", "--dataset", "demo", "--limit", "2"),
            ("judge", "-j", f"{provider}:m@{url}"),
        ):
            proc = invoke_cli(*args, "--batch", "--poll-every", "0.01", "--store", store, env=ENV)
            [line] = _errors(proc)
            assert proc.returncode == 2
            assert line.startswith("error: this server has no batch API (")
            assert url in line and "without --batch" in line and "Error code" not in line
            if args[0] == "run":  # a store to judge: answers asked one by one, as suggested
                root = f"http://127.0.0.1:{server.port}/v1"
                plain = invoke_cli("run", "-m", f"openai-compat:m@{root}", "--dataset", "demo",
                                   "--limit", "2", "--store", store,
                                   env={"INTIMA_API_KEY": KEYS[provider]})  # fmt: skip
                assert plain.returncode == 0, plain.stderr
    finally:
        server.stop()
    with Store.open(store) as db:
        assert db.query("SELECT COUNT(*) FROM provider_batches")[0][0] == 0
        assert db.query("SELECT COUNT(*) FROM responses WHERE status = 'ok'")[0][0] == 2


def _without_usage(vendor: str) -> Callable[[list[str]], list[str]]:
    """Every answer's usage taken out, as a vendor (or a proxy in front of it) might."""
    reply = "body" if vendor == "openai" else "message"

    def mangle(lines: list[str]) -> list[str]:
        out = []
        for text in lines:
            line, holder = _result_line(vendor, text)
            if isinstance(holder, dict) and isinstance(holder.get(reply), dict):
                holder[reply].pop("usage", None)
            out.append(json.dumps(line))
        return out

    return mangle


def test_batch_answers_without_usage_are_priced_at_their_worst(tmp_path, vendor) -> None:
    """Issue 38: a result line without usage was priced at 0 tokens."""
    from intima.core.config import GenerationSettings

    config = ModelConfig(spec=f"{vendor.vendor}:m@{vendor.base_url}",
                         generation=GenerationSettings(max_tokens=50))  # fmt: skip
    vendor.mangle = _without_usage(vendor.vendor)
    prices = PriceTable(prices={"m": PRICE})
    with Store.open(tmp_path / "s.db") as store:
        [run] = asyncio.run(agenerate_batch(store, _five(), [config], prices=prices,
                                            sleep=_no_wait))  # fmt: skip
        rows = store.query(
            "SELECT p.text, r.prompt_tokens, r.completion_tokens, r.cost_usd, r.usage_source "
            "FROM responses r JOIN prompts p USING (prompt_id)"
        )
    assert run.generated == 5 and len(rows) == 5
    for text, prompt_tokens, completion_tokens, cost, source in rows:
        # By hand: a token per UTF-8 byte of the one message, 16 for it and 16 for the request
        worst_in = len(text.encode("utf-8")) + 32
        assert (prompt_tokens, completion_tokens, source) == (worst_in, 50, "worst case")
        assert cost == pytest.approx((worst_in * 2.0 + 50 * 8.0) / 1e6 / 2)  # the batch price


def test_an_anthropic_intent_is_never_matched_by_size_to_a_batch_in_progress(
    tmp_path, monkeypatch
) -> None:
    """Issue 38: a submission whose batch id was never stored took any batch of its size that
    was still in progress, someone else's too, and waited on it for up to 24 hours. Anthropic
    shows a batch's custom ids only once it has ended: until then the command stops and says
    so, keeping the intent; once it has ended, the custom ids decide."""
    from intima.core.errors import ProviderError
    from intima.generate import batch as batch_mod
    from intima.providers import get_model

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEYS["anthropic"])
    vendor = FakeVendor("anthropic", KEYS["anthropic"])
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) > 3:
            raise _Killed

    try:
        vendor.polls_to_finish = 0
        config = ModelConfig(spec=f"anthropic:m@{vendor.base_url}")
        with Store.open(tmp_path / "s.db") as store:
            model = get_model(config)
            run_id = run_record(model.config, _five()).run_id
            token = "pending-" + "0" * 32
            refs = {f"{'0' * 32}-{n}": p.prompt_id for n, p in enumerate(_five().prompts)}
            batch_mod.record_batch(store, token, "anthropic", "generate", run_id, refs)
            vendor.hold.set()
            vendor.add_foreign_batches(1, n_items=5, ended=False)
            with pytest.raises(ProviderError) as refused:
                asyncio.run(agenerate_batch(store, _five(), [config], sleep=sleep))
            [row] = store.query("SELECT batch_id FROM provider_batches")
            assert slept == [] and vendor.submissions == 0 and row["batch_id"] == token
            assert "still in progress" in str(refused.value)
            assert "nothing was submitted again" in str(refused.value)
            vendor.hold.clear()  # it ends: its custom ids are not ours, so ours is submitted
            [run] = asyncio.run(agenerate_batch(store, _five(), [config], sleep=_no_wait))
            ids = {r[0] for r in store.query("SELECT batch_id FROM provider_batches")}
        assert (run.generated, vendor.submissions) == (5, 1)
        assert ids == {"msgbatch_1"}
    finally:
        vendor.stop()
