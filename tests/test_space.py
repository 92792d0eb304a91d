"""The leaderboard as a Hugging Face Space: the folder ``intima board space`` writes, started
with ``python app.py`` against the fake Hub and driven in Chromium, and ``board build --from``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import watched_page
from conftest import free_port, invoke_cli, run_cli, serving
from fake_hub import FakeHub, hf_env, point_hf_at, running_hub
from fake_openai import FakeOpenAI, FaultPlan
from intima.core.version import __version__
from intima.leaderboard.space import SpaceSettings, request_backend, write_space
from signed import new_key, public, trust_file

REQUESTS, RESULTS = "org/requests", "org/results"
TOKEN = "hf_fake_write_token_space_4567"
HUB_MODEL = "Qwen/Qwen3-8B"


# -- the folder ----------------------------------------------------------------------------------
def test_the_space_folder_has_its_metadata_pins_and_no_secret(tmp_path: Path) -> None:
    import gradio

    out = tmp_path / "space"
    made = run_cli("board", "space", "--out", str(out), "--results", f"hf://datasets/{RESULTS}",
                   "--requests", f"hf://datasets/{REQUESTS}", "--title", "Companions <b>",
                   "--refresh", "60", env={"HF_TOKEN": TOKEN})  # fmt: skip
    assert made.returncode == 0, made.stderr
    wheel = f"intima-{__version__}-py3-none-any.whl"
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md", "app.py", wheel, "requirements.txt", "space.json", "trust.toml",
    ]  # fmt: skip
    # Whose bundles it shows: by default the deployer's own publisher key, the public half.
    trust = (out / "trust.toml").read_text()
    assert f'key = "{public()}"' in trust and "PRIVATE" not in trust
    readme = (out / "README.md").read_text()
    meta = readme.split("---\n")[1]
    fields = dict(line.split(": ", 1) for line in meta.splitlines())
    assert fields["sdk"] == "gradio" and fields["app_file"] == "app.py"
    assert fields["sdk_version"] == gradio.__version__
    assert fields["license"] == "apache-2.0"  # pyproject's licence, as the Hub spells it
    assert json.loads(fields["title"]) == "Companions <b>"
    # Issue #40: the default was intima==<version>, which no index had, so the Space could not
    # build. Now a wheel of this checkout, in the folder, and no warning to heed.
    reqs = (out / "requirements.txt").read_text().splitlines()
    assert f"./{wheel}" in reqs and "note:" not in made.stderr
    assert_installs_offline(out)
    # Another requirement line is written as given, and the folder holds no wheel.
    git = "intima @ git+https://github.com/example/intima@v0.1.0"
    other = invoke_cli("board", "space", "--out", str(tmp_path / "s2"), "--results",
                       f"hf://datasets/{RESULTS}", "--requirement", git)  # fmt: skip
    assert other.returncode == 0 and "note:" not in other.stderr, other.stderr
    assert git in (tmp_path / "s2" / "requirements.txt").read_text().splitlines()
    other_key = new_key(tmp_path / "other.key")  # --trust FILE: those publishers instead
    listed = trust_file(tmp_path / "t.toml", other_key)
    chosen = invoke_cli("board", "space", "--out", str(tmp_path / "s4"), "--results",
                        f"hf://datasets/{RESULTS}", "--trust", str(listed))  # fmt: skip
    assert chosen.returncode == 0, chosen.stderr
    written = (tmp_path / "s4" / "trust.toml").read_text()
    assert public(other_key) in written and public() not in written
    assert not list((tmp_path / "s2").glob("*.whl"))
    bad = invoke_cli("board", "space", "--out", str(tmp_path / "s3"), "--results",
                     f"hf://datasets/{RESULTS}", "--requirement",
                     "intima\nevil-package")  # fmt: skip
    assert bad.returncode == 2 and "one pip requirement line" in bad.stderr
    assert not (tmp_path / "s3").exists()
    settings = json.loads((out / "space.json").read_text())
    assert settings["results"] == f"hf://datasets/{RESULTS}" and settings["refresh_s"] == 60
    app = (out / "app.py").read_text()
    assert "intima.leaderboard.space import main" in app and len(app.splitlines()) < 15
    blob = "".join(p.read_text() for p in out.iterdir() if p.suffix != ".whl")
    assert TOKEN not in blob and "hf_" not in blob
    # --force replaces the folder, wheel included
    again = invoke_cli("board", "space", "--out", str(out), "--results",
                       f"hf://datasets/{RESULTS}", "--force")  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert [p.name for p in out.glob("*.whl")] == [wheel]


def assert_installs_offline(space: Path) -> None:
    """pip, with no index (nothing from the network), resolves the folder's requirements.txt
    from what the folder holds and what this environment has: intima itself from the folder
    (installed copies ignored, so it cannot come from this environment), its dependencies
    from the environment."""
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index",
           "--find-links", ".", "-r", "requirements.txt"]  # fmt: skip
    for extra in (["--ignore-installed", "--no-deps"], []):
        done = subprocess.run([*pip, *extra], cwd=space, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"Would install intima-{__version__}" in done.stdout, done.stdout


def test_an_installed_intima_pins_its_version_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from an installed package (no checkout to build), the Space installs the version
    pin, and the command says what to do if that version is not on PyPI."""
    from intima.leaderboard import space_wheel

    monkeypatch.setattr(space_wheel, "checkout", lambda: None)
    out = tmp_path / "space"
    made = invoke_cli("board", "space", "--out", str(out), "--results", f"hf://datasets/{RESULTS}")
    assert made.returncode == 0, made.stderr
    assert f"intima=={__version__}" in (out / "requirements.txt").read_text().splitlines()
    note = " ".join(made.stderr.split())
    assert f"note: requirements.txt installs intima=={__version__} from PyPI" in note
    assert not list(out.glob("*.whl"))


def test_the_space_folder_is_not_written_over_without_force(tmp_path: Path) -> None:
    out = tmp_path / "space"
    settings = SpaceSettings(results=f"hf://datasets/{RESULTS}")
    write_space(out, settings)
    again = invoke_cli("board", "space", "--out", str(out), "--results", f"hf://datasets/{RESULTS}")
    assert again.returncode == 2 and "--force" in again.stderr
    # no wheel (`--requirement`): not the point here
    forced = invoke_cli("board", "space", "--out", str(out), "--results",
                        f"hf://datasets/{RESULTS}", "--title", "New", "--force",
                        "--requirement", "intima")  # fmt: skip
    assert forced.returncode == 0, forced.stderr
    assert json.loads((out / "space.json").read_text())["title"] == "New"
    (out / "notes.txt").write_text("mine")
    other = invoke_cli("board", "space", "--out", str(out), "--results",
                       f"hf://datasets/{RESULTS}", "--force")  # fmt: skip
    assert other.returncode == 2 and "holds other files" in other.stderr
    assert (out / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--results", "hf://models/org/results"], "--results must be hf://datasets/OWNER/NAME"),
        (["--results", "hf://datasets/org/../x"], "--results must be hf://datasets/OWNER/NAME"),
        (["--results", f"hf://datasets/{RESULTS}", "--requests", "org/requests"],
         "--requests must be hf://datasets/OWNER/NAME"),
    ],
)  # fmt: skip
def test_bad_repo_urls_get_one_error_line(tmp_path: Path, args: list[str], message: str) -> None:
    res = invoke_cli("board", "space", "--out", str(tmp_path / "s"), *args)
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        next(line for line in res.stderr.splitlines() if line.startswith("error:"))
    ]
    assert message in res.stderr and not (tmp_path / "s").exists()


def test_the_form_is_read_only_without_a_token_or_a_requests_repo() -> None:
    no_repo = SpaceSettings(results=f"hf://datasets/{RESULTS}")
    assert request_backend(no_repo, TOKEN)[0] is None
    assert "without a requests repo" in str(request_backend(no_repo, TOKEN)[1])
    no_token = no_repo.model_copy(update={"requests": f"hf://datasets/{REQUESTS}"})
    backend, why = request_backend(no_token, None)
    assert backend is None and "no HF_TOKEN secret" in str(why)


# -- the Space against the fake Hub ---------------------------------------------------------
@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    for server in running_hub():
        server.write_token = TOKEN
        server.add_repo(REQUESTS)
        server.add_repo(RESULTS)
        server.add_repo(HUB_MODEL, {"config.json": b"{}"}, repo_type="model")
        yield server


@pytest.fixture(scope="module")
def world(hub: FakeHub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Three judged runs in one store; model-a published, model-c published then tampered
    with on the Hub (a row changed, the manifest not); model-b is published later by a test."""
    tmp = tmp_path_factory.mktemp("space")
    server = FakeOpenAI(FaultPlan()).start_in_thread()
    env = hf_env(hub, tmp / "cache-cli", tmp / "home-cli", TOKEN)
    db = str(tmp / "results.db")
    try:
        models = [f"openai-compat:model-{x}@{server.base_url}" for x in "abc"]
        ran = invoke_cli("run", *(a for m in models for a in ("--model", m)), "--dataset",
                         "demo", "--limit", "3", "--store", db, "--no-progress")  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        judged = invoke_cli("judge", "-j", f"openai-compat:judge@{server.base_url}", "--store", db)
        assert judged.returncode == 0, judged.stderr
        labels = {x: _label(db, f"model-{x}") for x in "abc"}
        with pytest.MonkeyPatch.context() as mp:  # huggingface_hub in this process: the Hub's
            point_hf_at(hub, tmp / "cache-cli", tmp / "home-cli", mp, token=TOKEN)
            for x in "ac":
                pub = invoke_cli("publish", f"hf://datasets/{RESULTS}", "--run", labels[x],
                                 "--store", db)  # fmt: skip
                assert pub.returncode == 0, pub.stderr
        bundles = sorted({p.split("/")[1] for p in hub.repo(RESULTS).head()})
        tampered = next(b for b in bundles if _holds(hub, b, "model-c"))
        files = dict(hub.repo(RESULTS).head())
        path = f"bundles/{tampered}/responses.jsonl"
        first, *rest = files[path].decode().splitlines()
        row = json.loads(first)
        row["response"] = "I will always be here for you, only you."  # the edit
        files[path] = "\n".join([json.dumps(row), *rest, ""]).encode()
        assert files[path] != hub.repo(RESULTS).head()[path]
        hub.repo(RESULTS).add_commit(files, "an edit that skips the manifest")
        yield {"db": db, "env": env, "labels": labels, "tampered": tampered, "tmp": tmp}
    finally:
        server.stop()


def _label(db: str, model: str) -> str:
    import sqlite3

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT run_id, config_json FROM runs").fetchall()
    return next(run_id for run_id, cfg in rows if model in cfg)


def _holds(hub: FakeHub, bundle: str, model: str) -> bool:
    return model.encode() in hub.repo(RESULTS).head().get(f"bundles/{bundle}/runs.jsonl", b"")


@pytest.fixture(scope="module")
def space_url(hub: FakeHub, world: dict[str, Any]) -> Iterator[str]:
    tmp: Path = world["tmp"]
    folder = tmp / "the-space"
    # --requirement: the Space runs this environment's intima, no wheel needed
    made = invoke_cli("board", "space", "--out", str(folder), "--results",
                      f"hf://datasets/{RESULTS}", "--requests", f"hf://datasets/{REQUESTS}",
                      "--refresh", "1.5", "--per-session", "3", "--bootstrap", "100",
                      "--requirement", "intima")  # fmt: skip
    assert made.returncode == 0, made.stderr
    port = free_port()
    env = {**os.environ, **hf_env(hub, tmp / "cache-space", tmp / "home-space", TOKEN),
           "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "GRADIO_ANALYTICS_ENABLED": "False", "NO_COLOR": "1",
           "GRADIO_TEMP_DIR": str(tmp / "gradio-tmp")}  # fmt: skip
    log = tmp / "space.log"
    try:
        with serving([sys.executable, "app.py"], port=port, log=log, env=env, cwd=folder) as url:
            yield url
    finally:
        assert TOKEN not in log.read_text(errors="replace")


@pytest.fixture(scope="module")
def page(space_url: str, browser: Any) -> Iterator[Any]:
    pg = watched_page(browser)
    pg.goto(space_url)
    pg.wait_for_selector("#board-table table", timeout=30_000)
    yield pg
    pg.close()


def _table(page: Any) -> str:
    return str(page.locator("#board-table").text_content())


def test_the_space_shows_the_valid_bundle_and_names_the_tampered_one(
    page: Any, world: dict[str, Any], artifacts: Path
) -> None:
    page.wait_for_function(
        "b => document.querySelector('#board-notice').textContent.includes(b)",
        arg=world["tampered"], timeout=20_000,
    )  # fmt: skip
    notice = page.locator("#board-notice").text_content()
    assert "failed verification" in notice and "sha256" in notice
    assert "model-a" in _table(page) and "model-c" not in _table(page)
    page.screenshot(path=str(artifacts / "space-tampered.png"), full_page=True)
    assert page.errors == []


def test_the_form_writes_to_the_requests_repo_and_refuses_bad_and_excess_requests(
    page: Any, hub: FakeHub
) -> None:
    page.get_by_role("tab", name="Request a model").click()
    spec = page.locator("#req-spec textarea, #req-spec input").first
    who = page.locator("#req-who textarea, #req-who input").first
    hostile = '<img src=x onerror="window.__pwned=1">'
    spec.fill(f"openai-compat:{HUB_MODEL}")
    who.fill(hostile)
    page.locator("#req-submit").click()
    page.wait_for_selector("#req-result .intima-ok", timeout=20_000)
    shown = page.locator("#req-result").text_content()
    assert "Queued request" in shown and HUB_MODEL in shown and hostile in shown
    assert page.locator("#req-result img").count() == 0
    files = {p: c for p, c in hub.repo(REQUESTS).head().items() if p.startswith("requests/")}
    assert len(files) == 1
    stored = json.loads(next(iter(files.values())))
    assert stored["spec"] == f"openai-compat:{HUB_MODEL}" and stored["status"] == "pending"
    assert TOKEN.encode() not in next(iter(files.values()))
    # A local file is not a model: refused, visibly, and nothing written.
    spec.fill("llamacpp:/etc/passwd")
    page.locator("#req-submit").click()
    page.wait_for_function(
        "() => document.querySelector('#req-result .intima-error')"
        " && document.querySelector('#req-result').textContent.includes('/etc/passwd')"
    )
    assert "Rejected" in page.locator("#req-result").text_content()
    # The third post of this session is its last (--per-session 3): the fourth is refused.
    spec.fill("openai-compat:nobody/no-such-model")
    page.locator("#req-submit").click()
    page.wait_for_function(
        "() => document.querySelector('#req-result').textContent.includes('no-such-model')"
        " && document.querySelector('#req-result').textContent.includes('not a public model')"
    )
    spec.fill(f"openai-compat:{HUB_MODEL}")
    page.locator("#req-submit").click()
    page.wait_for_function(
        "() => document.querySelector('#req-result').textContent.includes('last hour')"
    )
    assert "Rejected" in page.locator("#req-result").text_content()
    assert len([p for p in hub.repo(REQUESTS).head() if p.startswith("requests/")]) == 1
    assert page.evaluate("window.__pwned") is None and page.errors == []


def test_a_bundle_published_after_start_appears_without_a_restart(
    page: Any, world: dict[str, Any]
) -> None:
    page.get_by_role("tab", name="Leaderboard").click()
    assert "model-b" not in _table(page)
    pub = run_cli("publish", f"hf://datasets/{RESULTS}", "--run", world["labels"]["b"],
                  "--store", world["db"], env=world["env"])  # fmt: skip
    assert pub.returncode == 0, pub.stderr
    page.wait_for_function(
        "() => document.querySelector('#board-table').textContent.includes('model-b')",
        timeout=30_000,
    )
    assert "model-a" in _table(page) and "model-c" not in _table(page)
    assert world["tampered"] in page.locator("#board-notice").text_content()
    assert page.errors == []
    _the_space_compares_as_the_site_does(page, world)


def _rows(pg: Any) -> list[list[str]]:
    return pg.eval_on_selector_all(
        "#cmp-scores tbody tr", "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))"
    )


def _the_space_compares_as_the_site_does(page: Any, world: dict[str, Any]) -> None:
    """The Space's side-by-side of model-a and model-b (B − A [95%], smallest detectable
    difference, verdict) is the static site's for the same results repo, B and seed."""
    page.get_by_role("tab", name="Compare").click()
    page.locator("#cmp-b input").click()
    page.get_by_role("option", name=re.compile("model-b")).click()
    page.wait_for_function(
        "() => (document.querySelector('#cmp-scores thead') || {textContent: ''})"
        ".textContent.includes('model-b')",
        timeout=20_000,
    )
    space_rows = _rows(page)
    site = world["tmp"] / "site-compare"
    res = run_cli("board", "build", "--from", f"hf://datasets/{RESULTS}", "--out", str(site),
                  "--bootstrap", "100", env=world["env"])  # fmt: skip
    assert res.returncode == 0, res.stderr
    html = (site / "index.html").read_text()
    found = re.search(r'id="board-data">(.*?)</script>', html, re.S)
    assert found
    data = json.loads(found.group(1))
    index = {c["label"]: i for i, c in enumerate(data["configs"])}
    a = next(i for label, i in index.items() if "model-a" in label)
    b = next(i for label, i in index.items() if "model-b" in label)
    other = watched_page(page.context.browser)
    other.goto((site / "index.html").as_uri())
    other.wait_for_selector("body[data-ready='1']")
    other.select_option("#cmp-a", str(a))
    other.select_option("#cmp-b", str(b))
    other.wait_for_selector("#cmp-scores[data-ready='1']")
    site_rows = _rows(other)
    assert other.errors == []
    other.close()
    assert [r[0] for r in space_rows] == [r[0] for r in site_rows]
    assert [r[3:] for r in space_rows] == [r[3:] for r in site_rows]
    # A small world: its prompts may give fewer judged pairs than the documented minimum of 10.
    few = int(space_rows[0][6]) < 10
    assert (
        space_rows[0][5] == "too few judged pairs"
        if few
        else space_rows[0][5]
        in (
            "different",
            "no detectable difference",
        )
    )


def test_board_build_from_the_results_repo(world: dict[str, Any]) -> None:
    site = world["tmp"] / "site"
    scratch = world["tmp"] / "scratch"  # where the temporary stores of --from go
    scratch.mkdir()
    env = {**world["env"], "TMPDIR": str(scratch)}
    # model-b is there only if the test above ran first; model-a always, model-c never.
    res = run_cli("board", "build", "--from", f"hf://datasets/{RESULTS}", "--out", str(site),
                  "--bootstrap", "50", env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"refused bundle {world['tampered']}" in res.stderr
    html = "".join(p.read_text(errors="replace") for p in site.rglob("*.html"))
    assert "model-a" in html and "model-c" not in html
    missing = run_cli("board", "build", "--from", "hf://datasets/org/nothing", "--out",
                      str(world["tmp"] / "site2"), env=env)  # fmt: skip
    assert missing.returncode == 2 and "error:" in missing.stderr
    assert "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    assert list(scratch.iterdir()) == []  # no temporary store left, built or refused


def test_the_space_refuses_uploads(space_url: str, world: dict[str, Any]) -> None:
    """Nothing on the board takes a file: Gradio's upload route (open to anyone, no token) and
    any multipart body are refused, and nothing is written to Gradio's temporary folder."""
    import httpx

    body = b"x" * 2_000_000
    temp = world["tmp"] / "gradio-tmp"
    before = sorted(p for p in temp.rglob("*") if p.is_file()) if temp.exists() else []
    for path in (
        "gradio_api/upload",
        "gradio_api/upload?upload_id=abc",
        "gradio_api/process_recording",
    ):
        res = httpx.post(space_url + path, files={"files": ("big.txt", body)}, timeout=30)
        assert res.status_code == 403, (path, res.status_code, res.text[:200])
    res = httpx.post(space_url + "gradio_api/queue/join", files={"f": ("a.txt", b"a")}, timeout=30)
    assert res.status_code == 403
    after = sorted(p for p in temp.rglob("*") if p.is_file()) if temp.exists() else []
    assert after == before and not any(p.stat().st_size >= len(body) for p in after)
    assert httpx.get(space_url, timeout=30).status_code == 200  # the page itself is served
