"""The real ``intima`` command in a subprocess: one clear error line, non-zero exit, store intact."""

import hashlib
import json
from pathlib import Path

import pytest

from conftest import free_port, run_cli
from intima.store import Store


def _digest(db: Path) -> str:
    with Store.open(db) as s:
        rows = s.query("SELECT response_id, status, text FROM responses ORDER BY response_id")
    return hashlib.sha256(json.dumps([tuple(r) for r in rows]).encode()).hexdigest()


@pytest.fixture
def seeded_store(tmp_path, fake_server) -> tuple[Path, str]:
    server = fake_server()
    db = tmp_path / "s.db"
    res = run_cli(
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
    res = run_cli("runs", "--store", str(db))
    assert res.returncode == 0 and "complete" in res.stdout and "intima-demo" in res.stdout
    out = tmp_path / "export"
    res = run_cli("export", str(out), "--store", str(db))
    assert res.returncode == 0, res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert [f["name"] for f in manifest["files"]] == ["responses.jsonl", "responses.parquet"]
    rows = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and all(r["status"] == "ok" for r in rows)
    assert manifest["runs"][0]["dataset_id"] == "intima-demo"
    assert manifest["runs"][0]["config"]["spec"].startswith("openai-compat:fake@")
    import pyarrow.parquet as pq

    assert pq.read_table(out / "responses.parquet").num_rows == 5
    from intima.service.export import sha256_file

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
        (["--max-cost", "1"], "--max-cost needs a price table"),
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
    res = run_cli(
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
    res = run_cli("run", "--config", str(cfg), "--limit", "3", "--store", str(db), "--no-progress")
    assert res.returncode == 0, res.stderr
    with Store.open(db) as s:
        labels = sorted(r["label"] for r in s.run_summaries())
        assert labels == ["companion", "plain"]
        assert s.query("SELECT COUNT(*) FROM responses WHERE status='ok'")[0][0] == 6


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("run", "--bogus"), "No such option: --bogus"),
        (("score", "--scorer", "affect", "--no-such-flag"), "No such option: --no-such-flag"),
        (("judge", "--concurrency", "many"), "invalid --concurrency many: must be an integer"),
        (("run", "--help", "extra"), "--help takes no value, got 'extra'"),
        (("nonsense",), "No such command 'nonsense'"),
    ],
)
def test_usage_errors_are_one_message_and_exit_2_not_a_traceback(
    args: tuple[str, ...], says: str
) -> None:
    result = run_cli(*args)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stderr.startswith("error:") and len(result.stderr.splitlines()) == 1


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
        res = run_cli("run", "--dataset", "demo", *args, "--store", str(tmp_path / "s.db"))
        assert res.returncode == 2, (args, res.stderr)
        assert "Traceback" not in res.stderr and named in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "s.db").exists()  # refused before anything was created


def test_nothing_is_created_before_the_server_answers(tmp_path: Path) -> None:
    from conftest import free_port

    db = tmp_path / "new.db"
    res = run_cli("run", "--model", f"openai-compat:m@http://127.0.0.1:{free_port()}/v1",
                  "--dataset", "demo", "--store", str(db))  # fmt: skip
    assert res.returncode == 2 and "cannot reach" in res.stderr
    assert not db.exists()
    res = run_cli("run", "--model", "openai-compat:m@http://u:secret@127.0.0.1:8000/v1",
                  "--dataset", "demo", "--store", str(db))  # fmt: skip
    assert res.returncode == 2 and "carries credentials" in res.stderr
    assert "secret" not in res.stderr and not db.exists()


def test_a_model_name_the_server_does_not_list_is_warned_about(tmp_path: Path, fake_server) -> None:
    server = fake_server()  # lists one model, "fake"; answers any name
    res = run_cli("run", "--model", f"openai-compat:fakke@{server.base_url}", "--dataset", "demo",
                  "--limit", "1", "--store", str(tmp_path / "s.db"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "lists no model named 'fakke'" in res.stderr and "fake" in res.stderr
    ok = run_cli("run", "--model", f"openai-compat:fake@{server.base_url}", "--dataset", "demo",
                 "--limit", "1", "--store", str(tmp_path / "s.db"))  # fmt: skip
    assert ok.returncode == 0 and "lists no model" not in ok.stderr


def test_export_never_writes_over_other_files_and_replaces_its_own_only_with_force(
    seeded_store, tmp_path
) -> None:
    db, _ = seeded_store
    out = tmp_path / "export"
    assert run_cli("export", str(out), "--store", str(db)).returncode == 0
    again = run_cli("export", str(out), "--store", str(db))
    assert again.returncode == 2 and "--force" in again.stderr
    forced = run_cli("export", str(out), "--force", "--store", str(db))
    assert forced.returncode == 0, forced.stderr
    (out / "notes.txt").write_text("mine")
    mixed = run_cli("export", str(out), "--force", "--store", str(db))
    assert mixed.returncode == 2 and "other files" in mixed.stderr
    assert (out / "notes.txt").read_text() == "mine"
    a_file = tmp_path / "some-file"
    a_file.write_text("x")
    res = run_cli("export", str(a_file), "--store", str(db))
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
    res = run_cli(*args, "--store", str(tmp_path / "s.db"), timeout=60)
    assert res.returncode == 2, (args, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith(f"error: invalid {args[-2]}"), res.stderr  # the option
    assert len(res.stderr.splitlines()) == 1, res.stderr
    assert not (tmp_path / "s.db").exists()
