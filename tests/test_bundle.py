"""Results bundles: publish, import, refusal of bad bundles, the Hub path, and no secrets."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import invoke_cli, run_cli
from fake_openai import FakeOpenAI
from intima.bundles.merge import import_bundle
from intima.bundles.publish import BundleError, protocol_versions, publish
from intima.core.config import ModelConfig
from intima.dataset import PromptSet, load_prompts
from intima.generate import runner
from intima.judges.prompt import JUDGE_PROMPT_VERSION
from intima.service.queue import add_request
from intima.service.worker import WorkerSettings, work
from intima.store import Store
from signed import resign

CORE = ("prompts", "runs", "run_prompts", "responses")


def _prompts(n: int) -> PromptSet:
    full = load_prompts("demo")
    return PromptSet(info=full.info.model_copy(update={"n_prompts": n}), prompts=full.prompts[:n])


def _config(server: FakeOpenAI, system_prompt: str | None = None) -> ModelConfig:
    return ModelConfig(spec=f"openai-compat:fake@{server.base_url}", system_prompt=system_prompt)


def _judgment(conn: sqlite3.Connection, content: str) -> None:
    conn.execute(
        "INSERT INTO judgments (judgment_id, content_hash, judge_key, judge_kind, judge_label, "
        "prompt_version, prompt_sha256, rating_protocol_version, status, attempts, "
        "judge_config_json, package_version, created_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (content[:32], content, "jk", "llm", "judge", JUDGE_PROMPT_VERSION, "x", "1", "unscored",
         1, "{}", "0", "2026-01-01"),
    )  # fmt: skip


@pytest.fixture
def source(tmp_path: Path, fake_server: Callable[..., FakeOpenAI]) -> Path:
    """A store with two runs (4 and 3 prompts) and one judgment per response of run one."""
    server = fake_server()
    path = tmp_path / "source.db"
    with Store.open(path) as store:
        runner.generate(store, _prompts(4), [_config(server)])
        runner.generate(store, _prompts(3), [_config(server, "Be brief.")])
        from intima.judges.prompt import content_hash

        first = store.query("SELECT run_id FROM runs ORDER BY created_at LIMIT 1")[0][0]
        with store.transaction() as conn:
            for row in store.run_rows(first):
                _judgment(conn, content_hash(row["prompt"], row["response"]))
    return path


# Written out here, not read from the package, so that a table the package forgets to mark as
# operational makes these tests fail.
OPERATIONAL = {
    "_migrations", "requests", "request_events", "response_claims", "judgment_claims",
    "conversation_claims", "provider_batches", "publishers", "row_publishers",
}  # fmt: skip


def _dump(path: Path, tables: tuple[str, ...] | None = None) -> dict[str, list[tuple]]:
    """Every result table's rows (all tables but the local queue and migration log)."""
    with sqlite3.connect(path) as conn:
        if tables is None:
            names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
            tables = tuple(n for (n,) in names if n not in OPERATIONAL)
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}


def test_publish_then_import_into_a_fresh_store_gives_the_same_rows(
    source: Path, tmp_path: Path
) -> None:
    with Store.open(source) as store:
        manifest = publish(store, str(tmp_path / "bundle"))
    names = {p.name for p in (tmp_path / "bundle").iterdir()}
    for table in (*CORE, "judgments"):
        assert {f"{table}.jsonl", f"{table}.parquet"} <= names
    assert "requests.jsonl" not in names and "_migrations.jsonl" not in names
    assert manifest.protocol == protocol_versions()
    assert {t.name: t.rows for t in manifest.tables}["responses"] == 7

    fresh = tmp_path / "fresh.db"
    with Store.open(fresh) as store:
        reports = import_bundle(store, str(tmp_path / "bundle"))
    assert reports[0].rows_added["responses"] == 7 and reports[0].rows_added["judgments"] == 4
    assert _dump(fresh) == _dump(source)
    # Idempotent: a second import changes nothing.
    with Store.open(fresh) as store:
        again = import_bundle(store, str(tmp_path / "bundle"))
    assert sum(again[0].rows_added.values()) == 0
    assert _dump(fresh) == _dump(source)


def test_parquet_files_hold_the_same_rows(source: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    with Store.open(source) as store:
        publish(store, str(tmp_path / "b"))
    table = pq.read_table(tmp_path / "b" / "responses.parquet").to_pylist()
    lines = (tmp_path / "b" / "responses.jsonl").read_text().splitlines()
    assert sorted(r["response_id"] for r in table) == sorted(
        json.loads(line)["response_id"] for line in lines
    )


def test_publishing_chosen_runs_carries_only_their_rows(source: Path, tmp_path: Path) -> None:
    with sqlite3.connect(source) as conn:
        second = conn.execute("SELECT run_id FROM runs ORDER BY created_at").fetchall()[1][0]
    with Store.open(source) as store:
        manifest = publish(store, str(tmp_path / "b"), [second])
    rows = {t.name: t.rows for t in manifest.tables}
    # Judgments follow content: the fake server answers both runs' shared prompts with the same
    # text, so 3 of run one's 4 judgments are about run two's responses too; the 4th is not.
    expected = {"prompts": 3, "runs": 1, "run_prompts": 3, "responses": 3, "judgments": 3}
    assert {k: rows[k] for k in expected} == expected
    assert all(n == 0 for k, n in rows.items() if k not in expected)  # other tables are empty
    assert [r["run_id"] for r in manifest.runs] == [second]


def _published(source: Path, tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    with Store.open(source) as store:
        publish(store, str(bundle))
    return bundle


def _edit_manifest(bundle: Path, edit: Callable[[dict], None]) -> None:
    path = bundle / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    resign(bundle)  # signed by a trusted publisher: the manifest's own checks must refuse it


def _refused(bundle: Path, tmp_path: Path, match: str, **kw: bool) -> None:
    target = tmp_path / "target.db"
    with Store.open(target) as store:
        before = _dump(target)
        with pytest.raises(BundleError, match=match):
            import_bundle(store, str(bundle), **kw)
    assert _dump(target) == before


def test_a_tampered_file_is_refused_and_the_store_is_unchanged(
    source: Path, tmp_path: Path
) -> None:
    bundle = _published(source, tmp_path)
    path = bundle / "responses.jsonl"
    path.write_text(path.read_text().replace("Thank you", "Thank YOU", 1))
    _refused(bundle, tmp_path, "does not match the manifest's sha256")


@pytest.mark.parametrize("name", ["../evil.jsonl", "/etc/passwd", "sub/responses.jsonl", ".."])
def test_path_traversal_names_are_refused(source: Path, tmp_path: Path, name: str) -> None:
    bundle = _published(source, tmp_path)

    def edit(data: dict) -> None:
        next(t for t in data["tables"] if t["name"] == "responses")["files"][0]["name"] = name

    _edit_manifest(bundle, edit)
    _refused(bundle, tmp_path, "refusing file name")


def test_table_names_outside_the_store_are_refused(source: Path, tmp_path: Path) -> None:
    bundle = _published(source, tmp_path)
    # An operational table (one an older intima published) is never imported: it is skipped.
    _edit_manifest(bundle, lambda d: d["tables"].append(
        {"name": "requests", "rows": 3, "columns": ["request_id"], "files": []}))  # fmt: skip
    with Store.open(tmp_path / "ops.db") as store:
        [report] = import_bundle(store, str(bundle))
        assert report.rows_added["responses"] == 7
        assert store.query("SELECT COUNT(*) FROM requests")[0][0] == 0
    bundle2 = tmp_path / "b2"
    shutil.copytree(source.parent / "bundle", bundle2)
    _edit_manifest(bundle2, lambda d: d["tables"][0].update(name='x"; DROP TABLE runs; --'))
    _refused(bundle2, tmp_path, "refusing table name")


def test_a_protocol_mismatch_is_refused_unless_allowed(source: Path, tmp_path: Path) -> None:
    bundle = _published(source, tmp_path)
    _edit_manifest(bundle, lambda d: d["protocol"].update(taxonomy="0"))
    _refused(bundle, tmp_path, r"taxonomy: bundle '0'.*--allow-protocol-mismatch")
    with Store.open(tmp_path / "target.db") as store:
        reports = import_bundle(store, str(bundle), allow_protocol_mismatch=True)
    assert reports[0].rows_added["responses"] == 7


def test_rows_must_match_the_manifest(source: Path, tmp_path: Path) -> None:
    bundle = _published(source, tmp_path)
    _edit_manifest(bundle, lambda d: next(t for t in d["tables"] if t["name"] == "runs").update(
        rows=5))  # fmt: skip
    _refused(bundle, tmp_path, "2 rows, the manifest says 5")


def test_cli_publish_and_import(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli-bundle"
    published = invoke_cli("publish", str(out), "--store", str(source))
    assert published.returncode == 0, published.stderr
    assert "responses 7" in published.stdout
    again = invoke_cli("publish", str(out), "--store", str(source))
    assert again.returncode == 2 and "is not empty" in again.stderr
    target = tmp_path / "cli-target.db"
    dry = invoke_cli("import", str(out), "--dry-run", "--store", str(target))
    assert dry.returncode == 0 and "would add" in dry.stdout and "responses +7" in dry.stdout
    assert not target.exists()  # a dry run into a new store leaves nothing behind
    imported = invoke_cli("import", str(out), "--store", str(target))
    assert imported.returncode == 0, imported.stderr
    assert _dump(target) == _dump(source)
    (out / "runs.jsonl").write_text("{}\n")
    broken = invoke_cli("import", str(out), "--store", str(target))
    assert broken.returncode == 2 and "sha256" in broken.stderr
    assert "Traceback" not in broken.stderr
    fresh = tmp_path / "never-created.db"
    refused = invoke_cli("import", str(out), "--store", str(fresh))
    assert refused.returncode == 2 and not fresh.exists()  # no empty store left behind


# -- the Hub path, against local folders ---------------------------------------------------------
def _fake_hub(repo: Path) -> Callable[..., None]:
    """An uploader that puts the folder where ``upload_folder`` would, in a local 'repo'."""

    def upload(folder: Path, repo_id: str, repo_type: str, path_in_repo: str, msg: str) -> None:
        assert (repo_id, repo_type) == ("me/intima-results", "dataset")
        assert msg.startswith("intima bundle ")
        shutil.copytree(folder, repo / path_in_repo)

    return upload


def _hf_cache(cache: Path, repo: Path, commit: str = "a" * 40) -> None:
    """The layout huggingface_hub reads offline: refs/main -> snapshots/<commit>/."""
    root = cache / "datasets--me--intima-results"
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(commit)
    # Only what ``import`` asks the Hub for: manifests and JSONL, not the Parquet twins.
    shutil.copytree(repo, root / "snapshots" / commit, ignore=shutil.ignore_patterns("*.parquet"))


def test_hub_publish_and_import_merge_bundles_from_two_machines(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    server = fake_server()
    repo = tmp_path / "repo"
    machines = []
    for i, prompt in enumerate(("machine one", "machine two")):
        path = tmp_path / f"m{i}.db"
        with Store.open(path) as store:
            runner.generate(store, _prompts(2 + i), [_config(server, prompt)])
            manifest = publish(store, "hf://datasets/me/intima-results", uploader=_fake_hub(repo))
        assert (repo / "bundles" / manifest.bundle_id / "manifest.json").is_file()
        machines.append(path)
    assert len(list((repo / "bundles").iterdir())) == 2

    cache = tmp_path / "hf-cache"
    _hf_cache(cache, repo)
    target = tmp_path / "merged.db"
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    result = run_cli("import", "hf://datasets/me/intima-results", "--store", str(target), env=env)
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(target) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 5
    merged = _dump(target, ("responses",))["responses"]
    expected = sorted(
        [r for m in machines for r in _dump(m, ("responses",))["responses"]], key=repr
    )
    assert merged == expected

    missing = run_cli("import", "hf://datasets/me/other", "--store", str(target), env=env)
    assert missing.returncode == 2 and "could not get me/other" in missing.stderr


def test_bad_hub_destinations_are_refused(source: Path) -> None:
    with Store.open(source) as store:
        for dest in ("hf://datasets/only-owner", "hf://datasets/a/b/c", "hf://datasets/a/b@dev"):
            with pytest.raises(BundleError):
                publish(store, dest, uploader=lambda *a: None)


def test_a_sentinel_api_key_never_reaches_a_bundle(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    sentinel = "sk-SENTINEL-7f3a9c1e5b2d4086"
    server = fake_server()
    # A careless proxy that quotes the Authorization header back in its error bodies.
    leaky = fake_server(rates={"500": 1.0}, echo_auth=True)
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        add_request(store, f"openai-compat:fake@{server.base_url}", dataset="demo")
        add_request(store, f"openai-compat:leaky@{leaky.base_url}", dataset="demo")
        # released (issue 33): the key this worker lacks is its own failure, not the request's
        add_request(store, "openai:gpt-4o-mini", dataset="demo")
    env = {"INTIMA_API_KEY": sentinel, "HF_TOKEN": sentinel, "OPENAI_API_KEY": ""}
    worked = run_cli("worker", "--drain", "--limit", "3", "--poll", "0.1", "--max-retries", "0",
                     "--store", str(db), env=env)  # fmt: skip
    # One fails, one is released (issue 33), on purpose; --limit makes the good one a smoke test.
    assert worked.returncode == 1, worked.stderr
    assert "0 finished, 1 failed, 0 lost to another worker, 1 released" in worked.stdout
    assert "1 smoke-tested" in worked.stdout
    # The key was really in use during the run (3 answers, and the model-list check before
    # them), and really echoed back by the leaky server.
    assert server.auth_seen[f"Bearer {sentinel}"] >= 3
    assert leaky.auth_seen[f"Bearer {sentinel}"] >= 3
    with sqlite3.connect(db) as conn:
        errors = [e for (e,) in conn.execute("SELECT error FROM responses WHERE status='error'")]
    assert len(errors) == 3 and all("500" in e for e in errors)
    out = tmp_path / "bundle"
    published = run_cli("publish", str(out), "--store", str(db), env=env)
    assert published.returncode == 0, published.stderr
    files = list(out.iterdir())
    assert len(files) >= 9
    for path in files:
        assert sentinel.encode() not in path.read_bytes(), path.name
    for path in tmp_path.glob("w.db*"):
        assert sentinel.encode() not in path.read_bytes(), path.name


def test_a_bundle_built_by_a_worker_imports_alone(
    tmp_path: Path, fake_server: Callable[..., FakeOpenAI]
) -> None:
    """What a leaderboard machine does: import bundles into an empty store, nothing else."""
    server = fake_server()
    db = tmp_path / "w.db"
    with Store.open(db) as store:
        add_request(store, f"openai-compat:fake@{server.base_url}", dataset="demo")
    assert work(db, WorkerSettings(once=True)).finished == 1
    with Store.open(db) as store:
        publish(store, str(tmp_path / "b"))
    with Store.open(tmp_path / "board.db") as board:
        import_bundle(board, str(tmp_path / "b"))
        summaries = board.run_summaries()
        assert [s["n_ok"] for s in summaries] == [62]
        assert board.query("SELECT COUNT(*) FROM requests")[0][0] == 0
    # The leaderboard is built from the imported bundle alone.
    from intima.leaderboard.site import build_site
    from intima.results.data import load_board

    with Store.open(tmp_path / "board.db") as board:
        data = load_board(board)
    out = tmp_path / "site"
    build_site(data, out, bootstrap=50, seed=0)
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "openai-compat:fake" in html


def test_no_operational_table_is_published_or_imported(source: Path, tmp_path: Path) -> None:
    """Every table holds rows (claims of a killed judge and run, a queued request); the bundle
    carries none of the operational ones, and importing it leaves them empty."""
    from intima.service.queue import add_request
    from intima.store import claim_owner

    with Store.open(source) as store:
        [_run] = store.query("SELECT run_id, config_key FROM runs LIMIT 1")
        rid = store.query("SELECT response_id FROM responses LIMIT 1")[0][0]
        jid = store.query("SELECT judgment_id FROM judgments LIMIT 1")[0][0]
        store.claim_responses([rid + "x"], claim_owner(), 3600)
        store.claim_judgments([jid], claim_owner(), 3600)
        add_request(store, "openai-compat:some-model@http://127.0.0.1:9/v1")
        with store.transaction() as conn:  # a conversation run's claim, as `intima converse`
            conn.execute(
                "INSERT INTO conversation_claims (conversation_key, owner, host, pid, expires) "
                "VALUES ('k', ?, 'host', 1, 1e12)",
                (claim_owner(),),
            )
            conn.execute(  # a vendor batch being polled, as `intima run --batch`
                "INSERT INTO provider_batches (batch_id, provider, purpose, scope, status, "
                "n_items, items_json, created_at, updated_at) "
                "VALUES ('batch-1', 'openai', 'generate', 's', 'submitted', 1, '[]', '1', '1')"
            )
            # who published an imported row (issue 37): derived from signatures, never carried
            conn.execute("INSERT INTO publishers VALUES (?, 'someone', 'a2V5')", ("f" * 32,))
            conn.execute("INSERT INTO row_publishers VALUES ('runs', '[\"x\"]', ?)", ("f" * 32,))
        tables = {n for (n,) in store.query("SELECT name FROM sqlite_master WHERE type='table'")}
        for table in OPERATIONAL:
            assert store.query(f"SELECT COUNT(*) FROM {table}")[0][0] > 0, table
        manifest = publish(store, str(tmp_path / "b"))
    published = {t.name for t in manifest.tables}
    files = {p.name.split(".")[0] for p in (tmp_path / "b").iterdir()}
    assert OPERATIONAL <= tables
    assert not (published | files) & OPERATIONAL
    assert published == tables - OPERATIONAL


def _rewrite(bundle: Path, table: str, edit: Callable[[list[dict]], list[dict]]) -> None:
    """Change a table's rows and re-declare its hash: a bundle crafted by someone who controls
    the manifest, which hashes alone cannot catch."""
    from intima.bundles.export import sha256_file

    path = bundle / f"{table}.jsonl"
    rows = edit([json.loads(line) for line in path.read_text().splitlines()])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (bundle / f"{table}.parquet").unlink(missing_ok=True)

    def fix(d: dict) -> None:
        entry = next(t for t in d["tables"] if t["name"] == table)
        entry["rows"] = len(rows)
        entry["files"] = [
            {**f, "sha256": sha256_file(path)} for f in entry["files"] if f["name"] == path.name
        ]

    _edit_manifest(bundle, fix)


def _set(table: str, **values: object) -> Callable[[list[dict]], list[dict]]:
    def edit(rows: list[dict]) -> list[dict]:
        rows[0].update(values)
        return rows

    return edit


@pytest.mark.parametrize(
    ("table", "values", "match"),
    [
        ("runs", {"config_json": "{not json"}, r"runs.jsonl line 1: config_json is not JSON"),
        (
            "responses",
            {"prompt_tokens": "lots"},
            r"prompt_tokens must be a 64-bit integer, not 'lots'",
        ),
        ("responses", {"latency_s": "inf"}, r"latency_s must be a finite number"),
        ("prompts", {"text": None}, r"prompts.jsonl line 1: text is missing"),
        ("responses", {"config_key": "nobody"}, r"names no run configuration of this bundle"),
        ("runs", {"status": "weird"}, r"breaks a constraint of the store"),
    ],
)
def test_crafted_rows_are_refused_naming_the_row(
    source: Path, tmp_path: Path, table: str, values: dict, match: str
) -> None:
    bundle = _published(source, tmp_path)
    _rewrite(bundle, table, _set(table, **values))
    _refused(bundle, tmp_path, match)


def test_a_row_that_contradicts_the_store_or_itself_is_refused(
    source: Path, tmp_path: Path
) -> None:
    bundle = _published(source, tmp_path)
    target = tmp_path / "target.db"
    with Store.open(target) as store:
        import_bundle(store, str(bundle))
    # The same response key with other text: refused, not "first wins".
    _rewrite(bundle, "responses", _set("responses", text="something else entirely"))
    _refused(bundle, tmp_path, r"responses.jsonl line 1 contradicts a row already in the store")
    # Two rows of one bundle with one key and different text.
    other = tmp_path / "b2"
    with Store.open(source) as store:
        publish(store, str(other))

    def twice(rows: list[dict]) -> list[dict]:
        return [*rows, {**rows[0], "text": "a second, different answer"}]

    _rewrite(other, "responses", twice)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    _refused(other, fresh, r"contradicts an earlier row of the bundle")


def test_a_manifest_without_protocol_versions_and_a_deep_line_are_refused(
    source: Path, tmp_path: Path
) -> None:
    bundle = _published(source, tmp_path)
    _edit_manifest(bundle, lambda d: d.update(protocol={}))
    _refused(bundle, tmp_path, r"states no .* protocol version")
    deep = tmp_path / "deep"
    with Store.open(source) as store:
        publish(store, str(deep))
    _rewrite(deep, "prompts", lambda rows: rows)
    path = deep / "prompts.jsonl"
    path.write_text(path.read_text() + "[" * 200_000 + "]" * 200_000 + "\n")

    def declare(d: dict) -> None:
        from intima.bundles.export import sha256_file

        entry = next(t for t in d["tables"] if t["name"] == "prompts")
        entry["rows"] += 1
        entry["files"][0]["sha256"] = sha256_file(path)

    _edit_manifest(deep, declare)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    _refused(deep, fresh, r"(nests too deep|does not match the manifest's columns)")


def test_a_bundle_downloaded_by_snapshot_download_imports(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """huggingface_hub's real cache (files are links into blobs/) is accepted; a link that
    leaves the cache's repo folder is still refused."""
    from huggingface_hub import close_session

    from test_dataset_hub import COMMIT_A, FakeHub, point_hf_at

    bundle = _published(source, tmp_path)
    files = {p.name: p.read_bytes() for p in bundle.iterdir() if p.suffix == ".jsonl"}
    files["manifest.json"] = (bundle / "manifest.json").read_bytes()
    server = FakeHub("me/results", files=files, refs={"main": COMMIT_A}).start()
    cache = tmp_path / "hf-cache"
    try:
        point_hf_at(server, cache, tmp_path, monkeypatch)
        close_session()
        with Store.open(tmp_path / "hub.db") as store:
            [report] = import_bundle(store, "hf://datasets/me/results")
        assert report.rows_added["responses"] == 7
        snap = cache / "datasets--me--results" / "snapshots" / COMMIT_A
        assert (snap / "responses.jsonl").is_symlink()  # the real cache layout was used
        # Point one snapshot file outside the repo folder: refused, store unchanged.
        outside = tmp_path / "elsewhere.jsonl"
        outside.write_bytes((snap / "runs.jsonl").read_bytes())
        (snap / "runs.jsonl").unlink()
        (snap / "runs.jsonl").symlink_to(outside)
        monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
        _refused_src("hf://datasets/me/results", tmp_path, "link to a file outside the bundle")
    finally:
        close_session()
        server.stop()


def _refused_src(src: str, tmp_path: Path, match: str) -> None:
    target = tmp_path / "target2.db"
    with Store.open(target) as store:
        before = _dump(target)
        with pytest.raises(BundleError, match=match):
            import_bundle(store, src)
    assert _dump(target) == before


def test_a_dry_run_reports_what_would_change_and_changes_nothing(
    source: Path, tmp_path: Path
) -> None:
    bundle = _published(source, tmp_path)
    target = tmp_path / "target.db"
    with Store.open(target) as store:
        before = _dump(target)
        [dry] = import_bundle(store, str(bundle), dry_run=True)
        assert _dump(target) == before
        [real] = import_bundle(store, str(bundle))
    assert dry.rows_added == real.rows_added and dry.rows_added["responses"] == 7


def _rehash(bundle: Path, name: str) -> None:
    """Declare a changed file's new hash in the manifest, as a crafted bundle would."""
    from intima.bundles.export import sha256_file

    def fix(d: dict) -> None:
        for table in d["tables"]:
            for f in table["files"]:
                if f["name"] == name:
                    f["sha256"] = sha256_file(bundle / name)

    _edit_manifest(bundle, fix)


@pytest.mark.parametrize("change", ["text", "row dropped", "not parquet"])
def test_a_parquet_twin_that_differs_from_its_jsonl_is_refused(
    source: Path, tmp_path: Path, change: str
) -> None:
    """Import reads the JSONL, everyone else the Parquet: both must hold the same rows, even
    when both match the (bundle-stated) hashes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    bundle = _published(source, tmp_path)
    path = bundle / "responses.parquet"
    rows = pq.read_table(path).to_pylist()
    if change == "text":
        rows[2]["text"] = "an answer the JSONL does not hold"
    elif change == "row dropped":
        rows = rows[1:]
    if change == "not parquet":
        path.write_bytes(b"PAR1 but not really")
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    _rehash(bundle, "responses.parquet")
    target = tmp_path / "target.db"
    with Store.open(target) as store:
        import_bundle(store, str(_published(source, tmp_path / "other")))  # a non-empty store
    before = _dump(target)
    res = invoke_cli("import", str(bundle), "--store", str(target))
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, res.stderr
    assert len(lines) == 1 and lines[0].startswith("error:") and "responses.parquet" in lines[0]
    assert "Traceback" not in res.stderr
    assert _dump(target) == before


@pytest.mark.parametrize(
    ("what", "edit"),
    [
        # Same (content, judge, prompt version) as a real judgment under another id: a row
        # under one of its table's UNIQUE keys that says something else (bundle_identity).
        (
            "contradicts an earlier row of the bundle with the same "
            r"content_hash/judge_key/prompt_version \(judgment_id differ\)",
            lambda rows: [*rows, {**rows[0], "judgment_id": "f" * 32}],
        ),
        (
            "breaks a constraint of the store.*CHECK constraint",
            lambda rows: [{**rows[0], "judge_kind": "oracle"}, *rows[1:]],
        ),
    ],
    ids=["UNIQUE", "CHECK"],
)
def test_a_row_breaking_a_constraint_is_refused_not_silently_dropped(
    source: Path, tmp_path: Path, what: str, edit: Callable[[list[dict]], list[dict]]
) -> None:
    """Only a row already stored under the same key is skipped on import; a row breaking a
    UNIQUE or CHECK constraint used to vanish (INSERT OR IGNORE) with exit 0."""
    bundle = _published(source, tmp_path)
    _rewrite(bundle, "judgments", edit)
    _refused(bundle, tmp_path, what)


def test_publish_to_an_unreachable_hub_raises_a_bundle_error_from_the_api(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The notebook API, not only the CLI: a transport error used to escape as httpx's own
    exception instead of one BundleError saying what to check, and only after huggingface_hub
    had retried for about 24 s. A Hub out of reach is now refused before any upload; an upload
    the Hub refuses is one BundleError too."""
    from fake_hub import point_hf_at, running_hub
    from intima.bundles.publish import BundleError, publish

    for hub in running_hub():
        point_hf_at(hub, tmp_path / "c", tmp_path, monkeypatch, token="hf_x_0123456789")
        hub.stop()  # nothing answers at its address any more
        with Store.open(source) as store, pytest.raises(BundleError) as err:
            publish(store, "hf://datasets/org/results")
        assert "cannot reach the Hugging Face Hub at http://127.0.0.1:" in str(err.value)
        assert "for hf://datasets/org/results (ConnectError)" in str(err.value)
    for hub in running_hub():  # a new Hub: the stopped one's kept-alive connections still answer
        point_hf_at(hub, tmp_path / "c", tmp_path, monkeypatch, token="hf_x_0123456789")
        with Store.open(source) as store, pytest.raises(BundleError) as err:
            publish(store, "hf://datasets/org/missing")  # reachable; no such repo
        assert "could not upload to dataset org/missing on the Hub" in str(err.value)
        monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
        with Store.open(source) as store, pytest.raises(BundleError, match="HF_HUB_OFFLINE"):
            publish(store, "hf://datasets/org/results")
