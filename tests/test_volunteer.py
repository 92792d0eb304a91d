"""docs/hub-service.md §5, walked as written: a new volunteer worker, from "I want to help" to
"my results are on the board", with the trust step (issue 37).

Two people on one fake Hub, each with their own publisher key: the maintainer generates the
Space folder (its ``trust.toml``: the maintainer's key), the volunteer prints their trust
lines with ``intima publisher > alice.toml`` and runs a worker that answers a request and
publishes a signed bundle. The Space refuses it, naming its publisher, until the maintainer
adds the volunteer's lines to the trust file and regenerates the Space; then the Space shows
the volunteer's run, under their name. Real commands (those that reach the Hub in
subprocesses), the Space's own refresh (:class:`~intima.leaderboard.space.LiveBoard`) read from
the generated folder.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from conftest import invoke_cli, run_cli
from fake_hub import FakeHub, hf_env, point_hf_at, running_hub
from fake_openai import FakeOpenAI, FaultPlan
from intima.leaderboard.space import TRUST_FILE, LiveBoard, read_settings, space_trust

REQUESTS, RESULTS = "org/requests", "org/results"
TOKEN = "hf_fake_write_token_volunteer_0123"
MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    for server in running_hub():
        server.write_token = TOKEN
        server.add_repo(REQUESTS)
        server.add_repo(RESULTS)
        server.add_repo(MODEL, {"config.json": b"{}"}, repo_type="model")
        # The Space's own process (here, this one) reads the results repo without a token.
        point_hf_at(server, tmp_path / "cache-space", tmp_path, monkeypatch)
        yield server


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(FaultPlan()).start_in_thread()
    yield server
    server.stop()


def _as(who: str, hub: FakeHub, tmp: Path) -> dict[str, str]:
    """One person's machine: their own Hub cache and publisher key (made on first use)."""
    return {**hf_env(hub, tmp / f"cache-{who}", tmp / f"home-{who}", TOKEN),
            "INTIMA_PUBLISHER_KEY": str(tmp / f"{who}.key"),
            "INTIMA_PUBLISHER_NAME": who}  # fmt: skip


def _space(space: Path, env: Mapping[str, str], *trust: str) -> None:
    made = invoke_cli("board", "space", "--out", str(space), "--force", *trust,
                   "--results", f"hf://datasets/{RESULTS}", "--requests",
                   f"hf://datasets/{REQUESTS}", "--requirement", "intima", "--bootstrap", "20", env={**env})  # fmt: skip
    assert made.returncode == 0, made.stderr[-1500:]


def _refreshed(space: Path, tmp: Path, name: str) -> LiveBoard:
    """The Space's board as the uploaded folder runs it (``space.json``, ``trust.toml``)."""
    (work := tmp / name).mkdir()
    live = LiveBoard(read_settings(space / "space.json"), work, space_trust(space / TRUST_FILE))
    assert live.refresh() is True
    return live


def test_a_volunteer_is_refused_until_trusted_then_shown(
    hub: FakeHub, model: FakeOpenAI, tmp_path: Path
) -> None:
    maintainer, alice = _as("maintainer", hub, tmp_path), _as("alice", hub, tmp_path)
    space = tmp_path / "space"
    _space(space, maintainer)  # step 2: the Space shows the maintainer's own key
    # The volunteer prints their trust lines and sends the file.
    printed = invoke_cli("publisher", env={**alice})
    assert printed.returncode == 0, printed.stderr
    assert "publisher alice (key " in printed.stderr
    (tmp_path / "alice.toml").write_text(printed.stdout)
    # Someone asks for a model; the volunteer's worker answers and publishes it.
    asked = run_cli("request", f"openai-compat:{MODEL}", "--dataset", "demo", "--queue",
                    f"hf://datasets/{REQUESTS}", env=maintainer)  # fmt: skip
    assert asked.returncode == 0, asked.stderr[-1500:]
    worked = run_cli("worker", "--queue", f"hf://datasets/{REQUESTS}", "--results",
                     f"hf://datasets/{RESULTS}", "--base-url", model.base_url,
                     "--allow-unlisted-model", "--judge", f"openai-compat:judge@{model.base_url}",
                     "--once", "--store", str(tmp_path / "alice.db"), env=alice)  # fmt: skip
    assert worked.returncode == 0, worked.stderr[-2000:]
    # Before the trust step: refused and named, nothing shown.
    before = _refreshed(space, tmp_path, "before").current()
    assert before.index.data.runs == () and len(before.refused) == 1, before.refused
    assert "published by alice (key " in before.refused[0][1]
    assert "who is not in the trust file" in before.refused[0][1]
    check = run_cli("board", "build", "--from", f"hf://datasets/{RESULTS}", "--trust",
                    str(space / TRUST_FILE), "--out", str(tmp_path / "site"), env=maintainer)  # fmt: skip
    said = " ".join(check.stderr.split())  # (the terminal wraps long lines)
    assert check.returncode == 2 and "refused bundle" in said and "alice" in said, said
    # Nothing else to show: said as it is (it used to advise `intima run`).
    assert said.endswith("has nothing to show: no bundle taken from it holds responses (any "
                         "refused is named above; a publisher outside the trust set is taken "
                         "with --trust FILE, docs/hub-service.md section 5)"), said  # fmt: skip
    # The trust step, as §5 writes it.
    shutil.copy(space / TRUST_FILE, tmp_path / "trust.toml")
    with (tmp_path / "trust.toml").open("a") as trust:
        trust.write((tmp_path / "alice.toml").read_text())
    _space(space, maintainer, "--trust", str(tmp_path / "trust.toml"))
    after = _refreshed(space, tmp_path, "after").current()
    assert after.refused == [] or after.refused == (), after.refused
    (run,) = after.index.data.runs
    assert MODEL in run.model_spec
    assert [p.split(" ")[0] for p in after.index.data.run_publishers[run.run_id]] == ["alice"]
