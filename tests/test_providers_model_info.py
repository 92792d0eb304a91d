"""What each run's model is (issue 33, item 8): read from the fake Hub for a Hub id, from the
configuration otherwise, stored with the run, never fatal, refreshed by ``intima models
refresh``, published with the run."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import constants as hf_constants

from conftest import invoke_cli
from fake_hub import FakeHub, point_hf_at, running_hub
from fake_openai import FakeOpenAI, FaultPlan
from full_bundle import _prompts
from intima.bundles.publish import publish
from intima.bundles.rules import row_problem
from intima.core.config import ModelConfig
from intima.generate import generate
from intima.providers.model_info import ModelInfo, hub_id_of, record, size_text, stored
from intima.store import Store
from intima.store.provenance import LOCAL, run_publishers

SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct"
SMOL_INFO: dict[str, Any] = {
    "safetensors": {"parameters": {"BF16": 134515008}, "total": 134515008},
    "pipeline_tag": "text-generation",
    "tags": ["transformers", "safetensors", "llama", "conversational", "license:apache-2.0"],
    "cardData": {"license": "apache-2.0", "language": ["en"]},
    "createdAt": "2024-10-31T13:43:30.000Z",
}


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    for server in running_hub():
        point_hf_at(server, tmp_path / "hf-cache", tmp_path, monkeypatch)
        server.add_repo(SMOL, repo_type="model", info=SMOL_INFO)
        server.add_repo("acme/private-model", repo_type="model", private=True)
        server.write_token = "hf_writer_0123456789"  # private: hidden from us (no token)
        yield server


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(FaultPlan()).start_in_thread()
    yield server
    server.stop()


def _run(store_path: Path, llm: FakeOpenAI, *models: str) -> None:
    """Real runs (generation against the fake OpenAI-compatible server) of ``models``."""
    configs = [ModelConfig(spec=f"openai-compat:{m}@{llm.base_url}", max_retries=0) for m in models]
    with Store.open(store_path) as store:
        generate(store, _prompts(2), configs)


def _by_model(store_path: Path) -> dict[str, ModelInfo]:
    with Store.open(store_path) as store:
        names = dict(store.query("SELECT run_id, model_name FROM runs"))
        return {names[k]: v for k, v in stored(store).items()}


def test_a_stored_run_of_a_hub_model_gets_its_card_size_type_licence_and_date(
    hub: FakeHub, llm: FakeOpenAI, tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    _run(path, llm, SMOL, "fake", "acme/private-model", "acme/no-such-model")
    with Store.open(path) as store:
        record(store)
    got = _by_model(path)
    smol = got[SMOL]
    assert (smol.source, smol.parameters, smol.size) == ("hub", 134515008, "135M")
    assert (smol.kind, smol.license, smol.date) == ("instruct", "apache-2.0", "2024-10-31")
    assert smol.url == f"https://huggingface.co/{SMOL}"
    # not a Hub id: what the configuration says, and the Hub is not asked
    assert got["fake"] == ModelInfo(source="config", detail="openai-compat: fake")
    for name in ("acme/private-model", "acme/no-such-model"):  # never fails, says why
        assert got[name].source == "unknown", got[name]
        assert got[name].detail == "private, gated or missing on the Hub"
    asked = [p for m, p in hub.calls() if p.startswith("/api/models/")]
    assert sorted(asked) == sorted(
        f"/api/models/{m}" for m in (SMOL, "acme/private-model", "acme/no-such-model")
    )
    with Store.open(path) as store:  # read once: a second pass asks nothing
        assert record(store) == {}
    assert len([p for _, p in hub.calls() if p.startswith("/api/models/")]) == 3


def test_offline_a_hub_model_is_unknown_at_once_and_the_run_is_not_blocked(
    hub: FakeHub, llm: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HF_HUB_OFFLINE (the normal case here): the run finishes, the Hub is never asked, and
    the board build that reads the info says unknown."""
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    hub.hang_up = True  # were it asked, it would never answer
    path = tmp_path / "s.db"
    _run(path, llm, SMOL)
    with Store.open(path) as store:
        assert store.query("SELECT status FROM runs")[0][0] == "complete"
    res = invoke_cli("board", "build", "--out", str(tmp_path / "site"), "--store", str(path),
                     "--bootstrap", "20")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert _by_model(path)[SMOL] == ModelInfo(
        source="unknown", hub_id=SMOL, detail="the Hub is offline"
    )
    assert hub.requests == []


def test_an_unreachable_hub_gives_unknown_and_never_an_error(
    llm: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for server in running_hub():
        point_hf_at(server, tmp_path / "c", tmp_path, monkeypatch)
        server.fail_all = 503
        path = tmp_path / "s.db"
        _run(path, llm, SMOL, "acme/other-model")
        with Store.open(path) as store:
            record(store)
        for model in (SMOL, "acme/other-model"):
            assert _by_model(path)[model].source == "unknown"
            assert _by_model(path)[model].detail == "the Hub could not be reached"
        # a dead Hub is asked once, not once per model (each could wait for the timeout)
        assert len([p for _, p in server.calls() if p.startswith("/api/models/")]) == 1


def test_models_refresh_reads_the_hub_again(
    hub: FakeHub, llm: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    _run(path, llm, SMOL, "fake")
    with monkeypatch.context() as offline:
        offline.setattr(hf_constants, "HF_HUB_OFFLINE", True)
        with Store.open(path) as store:
            record(store)
    assert _by_model(path)[SMOL].source == "unknown"
    res = invoke_cli("models", "refresh", "--store", str(path))
    assert res.returncode == 0, res.stderr
    assert f"{SMOL}: hub" in res.stdout
    assert "model info of 2 run(s) refreshed" in res.stdout
    assert _by_model(path)[SMOL].size == "135M"
    res = invoke_cli("models", "refresh", "--store", str(tmp_path / "typo.db"))
    assert res.returncode == 2
    assert "no store at" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "typo.db").exists()


def test_the_info_is_published_with_the_run_and_hostile_values_are_refused(
    hub: FakeHub, llm: FakeOpenAI, tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    _run(path, llm, SMOL)
    with Store.open(path) as store:
        record(store)
        [run_id] = [r[0] for r in store.query("SELECT run_id FROM runs")]
        publish(store, str(tmp_path / "bundle"), [run_id])
    rows = (tmp_path / "bundle" / "run_models.jsonl").read_text().splitlines()
    assert json.loads(rows[0])["parameters"] == 134515008
    target = tmp_path / "imported.db"
    res = invoke_cli("import", str(tmp_path / "bundle"), "--store", str(target))
    assert res.returncode == 0, res.stderr
    assert _by_model(target)[SMOL].size == "135M"  # the Space reads bundles: it has them too
    assert row_problem("run_models", {"parameters": -5}) is not None
    with sqlite3.connect(target) as conn, pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE run_models SET source = 'rumour'")
    # Republished after `intima models refresh` (another licence, checked later): the same run,
    # not a conflict that would take both bundles off the board.
    from full_bundle import rewrite

    refreshed = tmp_path / "refreshed"
    shutil.copytree(tmp_path / "bundle", refreshed)
    later = {"license": "mit", "checked_at": "2030-01-01T00:00:00+00:00"}
    rewrite(refreshed, "run_models", lambda rows: [r.update(later) for r in rows])
    res = invoke_cli("import", str(refreshed), "--store", str(target))
    assert res.returncode == 0, res.stderr
    with Store.open(target) as store:
        assert LOCAL not in run_publishers(store, "run_models")[run_id]
    # Read again here: the row is this store's own, no longer "as published by" the bundle's
    # publisher (the refresh used to keep the publisher's entry).
    res = invoke_cli("models", "refresh", "--store", str(target))
    assert res.returncode == 0, res.stderr
    with Store.open(target) as store:
        assert run_publishers(store, "run_models")[run_id] == (LOCAL,)
        assert run_publishers(store, "runs")[run_id] != (LOCAL,)  # the run itself still is


@pytest.mark.parametrize(
    ("n", "text"),
    [(134515008, "135M"), (1711376384, "1.7B"), (7_000_000_000, "7B"), (70_553_706_496, "71B"),
     (360_000_000, "360M"), (None, "unknown"), (0, "unknown")],
)  # fmt: skip
def test_sizes_read_as_model_cards_write_them(n: int | None, text: str) -> None:
    assert size_text(n) == text


def test_which_names_are_hub_ids() -> None:
    assert hub_id_of("hf", f"{SMOL}:fastest") == SMOL
    assert hub_id_of("openai-compat", SMOL) == SMOL
    assert hub_id_of("openai", "gpt-4o-mini") is None
    assert hub_id_of("llamacpp", "/models/x.gguf") is None
    assert hub_id_of("hf", "a/b/../c") is None


@pytest.mark.parametrize(
    "hub_id", ['x/y"><script>alert(1)</script>', "javascript:alert(1)//a/b", "../../etc", None]
)
def test_a_card_link_is_made_only_from_a_plain_hub_id(hub_id: str | None) -> None:
    """A bundle's ``run_models.hub_id`` is hostile input: no link unless it is OWNER/NAME."""
    assert ModelInfo(source="hub", hub_id=hub_id).url is None


def test_the_bundled_model_has_its_size_type_licence_and_card() -> None:
    """Issue #40: the board said "unknown" for the size of the bundled SmolLM2-135M, the one
    model every user runs first. Its facts are the Hub's for the same model (the fake Hub's
    figures above, copied from its card: 134,515,008 parameters), without asking the Hub."""
    from intima.providers.model_info import from_config

    for provider, name in (("transformers", "smollm2"), ("llamacpp", "")):
        info = from_config(provider, name)
        assert (info.size, info.parameters, info.kind) == ("135M", 134515008, "instruct")
        assert info.url == f"https://huggingface.co/{SMOL}" and info.license == "apache-2.0"
        assert info.detail is not None and info.detail.endswith(".gguf, 98 MB")
    other = from_config("llamacpp", "/models/other.gguf")  # any other file: not claimed
    assert (other.size, other.hub_id) == ("unknown", None)
