"""The ``intima`` command: one clear error line, non-zero exit, store intact.

Most calls run in-process through the entry point (``invoke_cli``); the version and the Hub's
environment, which a process reads once at start, go through a real subprocess (``run_cli``)."""

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from conftest import free_port, invoke_cli, run_cli
from intima.store import Store


def _digest(db: Path) -> str:
    with Store.open(db) as s:
        rows = s.query("SELECT response_id, status, text FROM responses ORDER BY response_id")
    return hashlib.sha256(json.dumps([tuple(r) for r in rows]).encode()).hexdigest()


@pytest.fixture
def seeded_store(tmp_path, fake_server) -> tuple[Path, str]:
    server = fake_server()
    db = tmp_path / "s.db"
    res = invoke_cli(
        "run",
        "--dataset",
        "demo",
        "--limit",
        "5",
        "--model",
        f"openai-compat:fake@{server.base_url}",
        "--store",
        str(db),
        "--no-progress",
    )
    assert res.returncode == 0, res.stderr
    return db, server.base_url


def test_run_runs_and_export(seeded_store, tmp_path) -> None:
    db, _ = seeded_store
    res = invoke_cli("runs", "--store", str(db))
    assert res.returncode == 0 and "complete" in res.stdout and "intima-demo" in res.stdout
    # tokens in and out apart, as `run` shows them (the column used to hold their sum)
    with sqlite3.connect(db) as conn:
        tin, tout = conn.execute(
            "SELECT SUM(prompt_tokens), SUM(completion_tokens) FROM responses"
        ).fetchone()
    assert "tokens in" in res.stdout and "tokens out" in res.stdout
    [row] = [line for line in res.stdout.splitlines() if "intima-demo" in line]
    cells = [c.strip() for c in row.split("│")]
    assert cells[cells.index("complete") - 2 : cells.index("complete")] == [str(tin), str(tout)]
    out = tmp_path / "export"
    res = invoke_cli("export", str(out), "--store", str(db))
    assert res.returncode == 0, res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert [f["name"] for f in manifest["files"]] == ["responses.jsonl", "responses.parquet"]
    rows = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and all(r["status"] == "ok" for r in rows)
    assert manifest["runs"][0]["dataset_id"] == "intima-demo"
    assert manifest["runs"][0]["config"]["spec"].startswith("openai-compat:fake@")
    import pyarrow.parquet as pq

    assert pq.read_table(out / "responses.parquet").num_rows == 5
    from intima.bundles.export import sha256_file

    assert manifest["files"][0]["sha256"] == sha256_file(out / "responses.jsonl")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "nope:x"], "unknown model provider 'nope'"),
        (["--model", "openai:gpt-4o-mini"], "set the environment variable OPENAI_API_KEY"),
        (
            ["--model", "openai-compat:m@http://127.0.0.1:{port}/v1"],
            "cannot reach http://127.0.0.1",
        ),
        (["--dataset", "{bad}"], "row 2: unknown code 'telepathy'"),
        (["--config", "{badconfig}"], "models.0.colour"),
        (["--max-cost", "1"], "--max-cost cannot price llamacpp"),
        (
            ["--prices", "{badprices}", "--model", "openai-compat:m@http://127.0.0.1:1/v1"],
            "greater than or equal to 0",
        ),
    ],
)
def test_bad_input_gives_one_clear_line_and_keeps_the_store(
    seeded_store, tmp_path, args, needle
) -> None:
    db, _ = seeded_store
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"code": "love", "prompt": "hi"}\n{"code": "telepathy", "prompt": "x"}\n')
    badconfig = tmp_path / "bad.toml"
    badconfig.write_text("[[models]]\nspec = 'llamacpp'\ncolour = 'red'\n")
    badprices = tmp_path / "prices.toml"
    badprices.write_text('["m"]\ninput_per_mtok = -1\noutput_per_mtok = 1\n')
    fill = {
        "port": str(free_port()),
        "bad": str(bad),
        "badconfig": str(badconfig),
        "badprices": str(badprices),
    }
    args = [_fill(a, fill) for a in args]
    before = _digest(db)
    res = invoke_cli(
        "run",
        "--dataset",
        "demo",
        "--store",
        str(db),
        "--no-progress",
        *args,
        env={"OPENAI_API_KEY": ""},
    )
    assert res.returncode == 2
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error:") and needle in lines[-1], res.stderr
    assert "Traceback" not in res.stderr
    assert _digest(db) == before


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def test_config_file_runs_two_configurations(tmp_path, fake_server) -> None:
    server = fake_server()
    cfg = tmp_path / "run.toml"
    cfg.write_text(
        f'dataset = "demo"\n[[models]]\nspec = "openai-compat:fake@{server.base_url}"\nlabel = "plain"\n'
        f'[[models]]\nspec = "openai-compat:fake@{server.base_url}"\nlabel = "companion"\n'
        'system_prompt = "You are Mia, a warm companion."\n'
    )
    db = tmp_path / "s.db"
    res = invoke_cli(
        "run", "--config", str(cfg), "--limit", "3", "--store", str(db), "--no-progress"
    )
    assert res.returncode == 0, res.stderr
    with Store.open(db) as s:
        labels = sorted(r["label"] for r in s.run_summaries())
        assert labels == ["companion", "plain"]
        assert s.query("SELECT COUNT(*) FROM responses WHERE status='ok'")[0][0] == 6


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("run", "--bogus"), "no such option: --bogus"),
        (("score", "--no-such-flag"), "no such option: --no-such-flag"),
        (("judge", "--concurrency", "many"), "invalid --concurrency many: must be an integer"),
        (("run", "--help", "extra"), "--help takes no value, got 'extra'"),
        (("nonsense",), "no such command 'nonsense'"),
        (("judge",), "missing option '--judge'"),
        (("compare",), "missing argument"),
        (("board", "build", "--out"), "option '--out' requires an argument"),
    ],
)
def test_usage_errors_are_one_message_and_exit_2_not_a_traceback(
    args: tuple[str, ...], says: str
) -> None:
    """One form for every error (issue #40: click's "Missing option" and "No such option" read
    as another program's beside intima's "error: invalid ..."): "error: " and a lower-case
    word."""
    result = invoke_cli(*args)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert result.stderr[len("error: ")].islower() or result.stderr[len("error: ")] == "-"


def test_version_and_invalid_values_are_one_line(tmp_path: Path) -> None:
    from intima import __version__

    res = run_cli("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"intima {__version__}"
    for args, named in (
        (["--max-tokens", "-5"], "--max-tokens -5"),
        (["--concurrency", "0"], "--concurrency 0"),
        (["--timeout", "0"], "--timeout 0"),
        (["--temperature", "-1"], "--temperature -1"),
    ):
        res = invoke_cli("run", "--dataset", "demo", *args, "--store", str(tmp_path / "s.db"))
        assert res.returncode == 2, (args, res.stderr)
        assert "Traceback" not in res.stderr and named in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "s.db").exists()  # refused before anything was created


def test_nothing_is_created_before_the_server_answers(tmp_path: Path) -> None:
    from conftest import free_port

    db = tmp_path / "new.db"
    res = invoke_cli("run", "--model", f"openai-compat:m@http://127.0.0.1:{free_port()}/v1",
                  "--dataset", "demo", "--store", str(db))  # fmt: skip
    assert res.returncode == 2 and "cannot reach" in res.stderr
    assert not db.exists()
    res = invoke_cli("run", "--model", "openai-compat:m@http://u:secret@127.0.0.1:8000/v1",
                  "--dataset", "demo", "--store", str(db))  # fmt: skip
    assert res.returncode == 2 and "carries credentials" in res.stderr
    assert "secret" not in res.stderr and not db.exists()


def test_a_model_name_the_server_does_not_list_is_refused_unless_allowed(
    tmp_path: Path, fake_server
) -> None:
    """A server that ignores names answered `fakke` with its own model, and the answers were
    stored under `fakke` after a warning only (issue 23.8)."""
    server = fake_server(models=("fake",))  # lists one model; answers any name
    db = tmp_path / "s.db"
    res = invoke_cli("run", "--model", f"openai-compat:fakke@{server.base_url}", "--dataset", "demo",
                  "--limit", "1", "--store", str(db))  # fmt: skip
    assert res.returncode == 2 and server.requests == 0, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert "lists no model named 'fakke' (it lists fake)" in last
    assert last.endswith("or --allow-unlisted-model if the server does serve it under another name")
    assert not db.exists()
    allowed = invoke_cli("run", "--model", f"openai-compat:fakke@{server.base_url}", "--dataset",
                      "demo", "--limit", "1", "--allow-unlisted-model", "--store", str(db))  # fmt: skip
    assert allowed.returncode == 0 and "lists no model named 'fakke'" in allowed.stderr
    assert server.requests == 1
    judged = invoke_cli("judge", "-j", f"openai-compat:judgy@{server.base_url}", "--store", str(db))
    assert judged.returncode == 2 and "lists no model named 'judgy'" in judged.stderr
    ok = invoke_cli("run", "--model", f"openai-compat:fake@{server.base_url}", "--dataset", "demo",
                 "--limit", "1", "--store", str(db))  # fmt: skip
    assert ok.returncode == 0 and "lists no model" not in ok.stderr


def test_export_never_writes_over_other_files_and_replaces_its_own_only_with_force(
    seeded_store, tmp_path
) -> None:
    db, _ = seeded_store
    out = tmp_path / "export"
    assert invoke_cli("export", str(out), "--store", str(db)).returncode == 0
    again = invoke_cli("export", str(out), "--store", str(db))
    assert again.returncode == 2 and "--force" in again.stderr
    forced = invoke_cli("export", str(out), "--force", "--store", str(db))
    assert forced.returncode == 0, forced.stderr
    (out / "notes.txt").write_text("mine")
    mixed = invoke_cli("export", str(out), "--force", "--store", str(db))
    assert mixed.returncode == 2 and "other files" in mixed.stderr
    assert (out / "notes.txt").read_text() == "mine"
    a_file = tmp_path / "some-file"
    a_file.write_text("x")
    res = invoke_cli("export", str(a_file), "--store", str(db))
    assert res.returncode == 2 and "is a file" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "--labels", "{file}", "--bootstrap", "0"],
        ["validate", "--labels", "{file}", "--seed", "-1"],
        ["board", "serve", "--port", "0"],
        ["board", "serve", "--seed", "-1"],
        ["board", "build", "--seed", "-1"],
        ["worker", "--once", "--concurrency", "0"],
        ["worker", "--once", "--timeout", "0"],
        ["worker", "--once", "--max-retries", "-1"],
        ["worker", "--once", "--max-tokens", "0"],
        ["worker", "--once", "--max-attempts", "0"],
        ["judge", "-j", "openai:gpt-4o-mini", "--max-reasks", "-1"],
        ["annotate", "--annotator", "a", "--port", "99999"],
        ["annotate", "--annotator", "a", "--design", "by-hand"],
        ["explain", "--text", "I love you", "--category", "nonsense"],
        ["board", "build", "--out", "{file}"],
        ["run", "--model", "openai-compat:m@http://127.0.0.1:1/v1", "--timeout", "inf"],
        ["run", "--model", "openai-compat:m@http://127.0.0.1:1/v1", "--system-prompt", ""],
    ],
)
def test_out_of_range_values_are_refused_before_any_work(tmp_path: Path, args: list[str]) -> None:
    """Found by driving every command's options with invalid values (tests/test_cli_sweep.py
    does it for every option): these used to end in a traceback (`explain -c nonsense`, `board
    build --out FILE`), a worker that only failed once a request arrived, or work started with
    an infinite timeout or an empty system prompt. Now: one line naming the option, the value
    and what is allowed."""
    (tmp_path / "some-file").write_text("x")
    args = [a.replace("{file}", str(tmp_path / "some-file")) for a in args]
    res = invoke_cli(*args, "--store", str(tmp_path / "s.db"), timeout=60)
    assert res.returncode == 2, (args, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith(f"error: invalid {args[-2]}"), res.stderr  # the option
    assert len(res.stderr.splitlines()) == 1, res.stderr
    assert not (tmp_path / "s.db").exists()


def test_a_deeply_nested_dataset_line_is_one_error_line_before_any_request(
    tmp_path: Path, fake_server
) -> None:
    server = fake_server()
    data = tmp_path / "deep.jsonl"
    data.write_text('{"code": "love", "prompt": ' + "[" * 40_000 + "]" * 40_000 + "}\n")
    res = invoke_cli("run", "--dataset", str(data), "--model", f"openai-compat:fake@{server.base_url}",
                  "--store", str(tmp_path / "s.db"), "--no-progress")  # fmt: skip
    assert res.returncode == 2 and "Traceback" not in res.stderr
    [line] = res.stderr.strip().splitlines()
    assert str(data) in line and "line 1" in line and "nested too deeply" in line
    assert server.requests == 0 and not (tmp_path / "s.db").exists()


def test_publish_to_a_file_is_one_error_line_and_leaves_the_file(seeded_store, tmp_path) -> None:
    db, _ = seeded_store
    taken = tmp_path / "taken.txt"
    taken.write_text("keep me")
    for dest in (taken, taken / "bundle"):
        res = invoke_cli("publish", str(dest), "--store", str(db))
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        [line] = res.stderr.strip().splitlines()
        assert line.startswith("error:") and str(taken) in line and "is a file" in line
    assert taken.read_text() == "keep me"


def test_no_command_turns_another_applications_database_into_a_store(
    tmp_path: Path, fake_server
) -> None:
    """Reading commands used to migrate any SQLite file they were given (18 tables added)."""
    from test_store import foreign_database

    other = tmp_path / "other.db"
    digest = foreign_database(other)
    spec = f"openai-compat:fake@{fake_server().base_url}"
    for args in (
        ["runs"], ["export", str(tmp_path / "export")], ["board", "build", "--out",
        str(tmp_path / "site")], ["drift"], ["doctor"], ["publish", str(tmp_path / "bundle")],
        ["explain", "some-response"], ["requests"], ["agreement"], ["compare", "a", "b"],
        ["run", "--dataset", "demo", "--limit", "1", "--model", spec, "--no-progress"],
    ):  # fmt: skip
        res = invoke_cli(*args, "--store", str(other))
        assert res.returncode == 2 and "Traceback" not in res.stderr, (args, res.stderr)
        [line] = res.stderr.strip().splitlines()[-1:]
        assert f"{other} is not an intima store" in line, (args, line)
        assert hashlib.sha256(other.read_bytes()).hexdigest() == digest, args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_max_cost_holds_at_high_concurrency_and_the_rest_stays_resumable(
    tmp_path: Path, fake_server
) -> None:
    """Issue #23: with 32 requests in flight before any cost was known, a $0.05 cap ended at
    $0.65. Each request's worst case is now held before it is sent."""
    from intima.dataset import load_prompts
    from intima.generate.pool import worst_cost
    from intima.generate.runner import messages_for

    server = fake_server(latency_s=0.2)
    prices = tmp_path / "prices.toml"
    prices.write_text('["fake"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 1000.0\n')
    db, cap, max_tokens = tmp_path / "s.db", 0.5, 64
    spec = f"openai-compat:fake@{server.base_url}"
    common = ("--model", spec, "--dataset", "demo", "--max-tokens", str(max_tokens),
              "--prices", str(prices), "--store", str(db), "--no-progress")  # fmt: skip
    res = invoke_cli("run", *common, "--concurrency", "32", "--max-cost", str(cap))
    assert res.returncode == 0, res.stderr[-400:]
    assert "stopped (max cost)" in res.stdout
    with Store.open(db, create=False) as s:
        [config] = [json.loads(r[0]) for r in s.query("SELECT config_json FROM runs")]
        rows = s.query("SELECT prompt_id, cost_usd FROM responses WHERE status = 'ok'")
        [(n_prompts,)] = s.query("SELECT n_prompts FROM runs")
    from intima.core.config import ModelConfig, Price

    price = Price(input_per_mtok=1000.0, output_per_mtok=1000.0)
    model = ModelConfig.model_validate(config)
    by_id = {p.prompt_id: p for p in load_prompts("demo").prompts}
    worst = {pid: worst_cost(price, messages_for(model, p), model.generation)
             for pid, p in by_id.items()}  # fmt: skip
    # The bound is a real bound: no answer cost more than what was held for it.
    assert rows and all(cost <= worst[pid] for pid, cost in rows)
    spent = sum(cost for _, cost in rows)
    assert cap <= spent <= cap + max(worst.values())
    assert server.requests == len(rows) < n_prompts  # nothing else was sent
    # The unsent prompts are still missing: the same command without the cap finishes them.
    asked = server.requests
    rest = invoke_cli("run", *common)
    assert rest.returncode == 0, rest.stderr[-400:]
    assert server.requests - asked == n_prompts - len(rows)
    with Store.open(db, create=False) as s:
        assert [r[0] for r in s.query("SELECT status FROM runs")] == ["complete"]


class _DroppingHub:
    """A port that accepts each connection and closes it at once, counting them: how often
    the Hub was tried."""

    def __init__(self) -> None:
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            if self.stopping:
                conn.close()
                return
            self.connections += 1
            conn.close()

    def stop(self) -> None:
        import socket

        # Closing a listening socket does not wake a thread blocked in accept() (the join
        # used to wait out its 10 s timeout): one last connection does.
        self.stopping = True
        socket.create_connection(self.sock.getsockname()).close()
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()
        self.sock.close()


def test_publish_to_an_unreachable_hub_is_one_line_at_once(seeded_store) -> None:
    """Issue #23: offline, `publish hf://...` retried for 24 s, then printed 132 lines."""
    db, _ = seeded_store
    dest = "hf://datasets/someone/results"
    hub = _DroppingHub()
    try:
        cases = {
            "closed port": {"HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"},
            "dropped connections": {"HF_ENDPOINT": hub.url},
            "offline": {"HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "1"},
        }
        for case, env in cases.items():
            before = hub.connections
            res = run_cli("publish", dest, "--store", str(db), env={"HF_TOKEN": "hf_x", **env})
            assert res.returncode == 2 and "Traceback" not in res.stderr, (case, res.stderr)
            [line] = res.stderr.strip().splitlines()
            assert line.startswith("error:") and "someone/results" in line, (case, line)
            assert "Hub" in line, (case, line)
            # Tried once at most: no retries against a Hub that is not there.
            assert hub.connections - before <= (0 if case == "offline" else 1), case
        assert "HF_HUB_OFFLINE" in line
    finally:
        hub.stop()


def test_export_under_a_file_is_one_line_and_force_replaces_links_not_their_targets(
    seeded_store, tmp_path
) -> None:
    db, _ = seeded_store
    a_file = tmp_path / "some-file"
    a_file.write_text("keep")
    res = invoke_cli("export", str(a_file / "sub"), "--store", str(db))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    [line] = res.stderr.strip().splitlines()
    assert str(a_file) in line and "is a file" in line
    # An earlier export's file that is a link: --force replaces the link, the target is kept.
    out = tmp_path / "export"
    assert invoke_cli("export", str(out), "--store", str(db)).returncode == 0
    (out / "responses.jsonl").unlink()
    (out / "responses.jsonl").symlink_to(a_file)
    forced = invoke_cli("export", str(out), "--force", "--store", str(db))
    assert forced.returncode == 0, forced.stderr
    assert a_file.read_text() == "keep"
    assert not (out / "responses.jsonl").is_symlink()
    assert len((out / "responses.jsonl").read_text().splitlines()) == 5


def test_a_cap_that_cannot_price_a_model_refuses_to_start(tmp_path: Path, fake_server) -> None:
    """Issue 33: with a price table that prices another model, --max-cost 0.00001 sent every
    request and showed the cost as "-". Run and judge now refuse before any request, naming
    the model and the price file; a priced model runs under the same table."""
    server = fake_server()
    prices = tmp_path / "prices.toml"
    prices.write_text('["gpt-4o-mini"]\ninput_per_mtok = 0.15\noutput_per_mtok = 0.6\n')
    db = tmp_path / "s.db"
    cap = ("--prices", str(prices), "--max-cost", "0.00001", "--store", str(db), "--no-progress")
    spec = f"openai-compat:fake@{server.base_url}"
    res = invoke_cli("run", "-m", spec, "--dataset", "demo", "--limit", "3", *cap)
    assert res.returncode == 2, res.stderr
    line = " ".join(res.stderr.split())
    assert "--max-cost cannot price openai-compat:fake" in line and str(prices) in line
    assert server.requests == 0 and not db.exists()
    # judging is held to the same rule (the responses come from an uncapped run)
    ok = invoke_cli("run", "-m", spec, "--dataset", "demo", "--limit", "3", "--store", str(db),
                    "--no-progress")  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    sent = server.requests
    judged = invoke_cli("judge", "-j", f"openai-compat:judge@{server.base_url}", *cap)
    assert judged.returncode == 2 and "cannot price openai-compat:judge" in judged.stderr
    assert server.requests == sent
    prices.write_text(
        prices.read_text() + '["judge"]\ninput_per_mtok = 0.0\noutput_per_mtok = 0.0\n'
    )
    judged = invoke_cli("judge", "-j", f"openai-compat:judge@{server.base_url}", *cap)
    assert judged.returncode == 0, judged.stderr
    # the notebook API holds the same rule: nothing is sent
    from intima import ModelConfig, generate_responses, load_prompts
    from intima.core.config import load_price_table
    from intima.core.errors import ConfigError

    sent = server.requests
    with Store.open(db) as s, pytest.raises(ConfigError, match="cannot price openai-compat:other"):
        generate_responses(s, load_prompts("demo").first(2),
                           [ModelConfig(spec=f"openai-compat:other@{server.base_url}")],
                           prices=load_price_table(prices), max_cost=1.0)  # fmt: skip
    assert server.requests == sent
