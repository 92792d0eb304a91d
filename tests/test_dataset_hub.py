"""The Hub path of ``load_prompts`` end to end, over real HTTP, against a fake Hub on 127.0.0.1.

``test_dataset.py`` only pre-fills the snapshot cache. Here huggingface_hub's own
``snapshot_download`` runs unmodified: it resolves the revision through the repo-info API, lists
the repo tree, then HEADs and GETs each wanted file on its ``resolve`` URL. The server below
speaks exactly that subset of the Hub protocol (as used by huggingface_hub 2.4, plain HTTP, no
Xet) and records every request, so the tests can tell a real download from a cache hit.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path

import huggingface_hub.constants as hf_constants
import pytest
from huggingface_hub import close_session
from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RevisionNotFoundError

from fake_hub import FakeHub, git_blob_oid, point_hf_at
from intima.core.errors import DatasetError
from intima.dataset import HUB_DATASET_ID, load_prompts
from test_dataset import EXPECTED_SHA

REPO_ID = "AI-companionship/INTIMA"
# Any 40-hex string will do; a fixed one keeps failures readable.
COMMIT_A = hashlib.sha1(b"fake INTIMA commit A").hexdigest()
DATA_FILE = "data/train.jsonl"
README = b"---\nlicense: cc-by-4.0\n---\n# INTIMA (fake Hub copy)\n"
GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"
RESOLVE_DATA = f"/datasets/{REPO_ID}/resolve/{COMMIT_A}/{DATA_FILE}"


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "hf-cache"


@pytest.fixture
def hub(
    cache: Path, tmp_path: Path, intima_jsonl: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeHub]:
    """The fake Hub, with huggingface_hub pointed at it (and only at it) for this test."""
    server = FakeHub(
        REPO_ID,
        files={
            DATA_FILE: intima_jsonl.read_bytes(),
            "README.md": README,
            ".gitattributes": GITATTRIBUTES,
        },
        refs={"main": COMMIT_A, "v1": COMMIT_A},
    ).start()
    point_hf_at(server, cache, tmp_path, monkeypatch)
    # The HTTP client is shared process-wide: start from a fresh one, and drop its pooled
    # keep-alive connections to this server afterwards.
    close_session()
    yield server
    close_session()
    server.stop()


def _go_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)


def _repo_cache(cache: Path) -> Path:
    return cache / "datasets--AI-companionship--INTIMA"


def test_first_load_downloads_over_http_and_offline_reuses_the_cache(
    hub: FakeHub, cache: Path, intima_jsonl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ps = load_prompts()
    assert len(ps) == 368
    assert ps.info.dataset_id == HUB_DATASET_ID == "AI-companionship/INTIMA"
    assert ps.info.source == "hf://datasets/AI-companionship/INTIMA"
    assert ps.info.revision == COMMIT_A
    assert ps.info.sha256 == EXPECTED_SHA

    calls = hub.calls()
    assert ("GET", f"/api/datasets/{REPO_ID}/revision/main") in calls
    # The fake tree endpoint always lists the whole subtree: right only if that was asked for.
    trees = [r for r in hub.requests if r.path == f"/api/datasets/{REPO_ID}/tree/{COMMIT_A}"]
    assert [r.query.get("recursive") for r in trees] == [["true"]]
    assert calls.count(("GET", RESOLVE_DATA)) == 1  # the bytes really came over HTTP
    assert not [path for _, path in calls if path.endswith(("README.md", ".gitattributes"))]
    assert all(r.authorization is None for r in hub.requests)

    repo = _repo_cache(cache)
    snapshot = repo / "snapshots" / COMMIT_A
    data = intima_jsonl.read_bytes()
    # The blob is stored under the ETag the server sent, so the cache entry is the download.
    assert (snapshot / DATA_FILE).resolve() == (repo / "blobs" / git_blob_oid(data)).resolve()
    assert (snapshot / DATA_FILE).read_bytes() == data
    assert sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*")) == [
        "data",
        DATA_FILE,
    ]
    assert (repo / "refs" / "main").read_text() == COMMIT_A

    n_requests = len(hub.requests)
    _go_offline(monkeypatch)
    again = load_prompts()
    assert again.info == ps.info
    assert again.prompts == ps.prompts
    assert len(hub.requests) == n_requests


def test_a_tag_resolves_to_its_commit_through_the_hub(
    hub: FakeHub, cache: Path, intima_jsonl: Path
) -> None:
    ps = load_prompts(revision="v1")
    assert ps.info.revision == COMMIT_A
    assert ps.info.sha256 == EXPECTED_SHA
    calls = hub.calls()
    assert ("GET", f"/api/datasets/{REPO_ID}/revision/v1") in calls
    assert ("GET", f"/api/datasets/{REPO_ID}/revision/main") not in calls
    assert calls.count(("GET", RESOLVE_DATA)) == 1
    assert (_repo_cache(cache) / "refs" / "v1").read_text() == COMMIT_A


def test_an_unknown_revision_is_a_dataset_error(hub: FakeHub, cache: Path) -> None:
    with pytest.raises(DatasetError, match="Hugging Face Hub") as err:
        load_prompts(revision="nope")
    # The Hub's 404 was understood as a missing revision, not as a network failure.
    assert isinstance(err.value.__cause__, RevisionNotFoundError)
    assert hub.calls() == [("GET", f"/api/datasets/{REPO_ID}/revision/nope")]
    assert not (_repo_cache(cache) / "snapshots").exists()


def test_a_hub_outage_is_a_dataset_error_without_long_retries(hub: FakeHub) -> None:
    hub.fail_all = 500
    started = time.monotonic()
    with pytest.raises(DatasetError, match="Hugging Face Hub") as err:
        load_prompts()
    assert time.monotonic() - started < 5
    cause = err.value.__cause__
    assert isinstance(cause, LocalEntryNotFoundError)
    # The failure is the server's 500, not e.g. a refused connection.
    assert isinstance(cause.__cause__, HfHubHTTPError)
    assert cause.__cause__.response.status_code == 500
    assert hub.requests
    assert ("GET", RESOLVE_DATA) not in hub.calls()


def test_a_failed_file_download_is_a_dataset_error_and_not_a_usable_cache(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.fail_downloads = 500
    with pytest.raises(DatasetError, match="Hugging Face Hub") as err:
        load_prompts()
    assert isinstance(err.value.__cause__, HfHubHTTPError)
    assert err.value.__cause__.response.status_code == 500
    assert ("GET", RESOLVE_DATA) in hub.calls()
    # The revision ref and tree listing were cached before the download failed; offline, the
    # half-filled snapshot must still be refused rather than loaded as an empty dataset.
    _go_offline(monkeypatch)
    with pytest.raises(DatasetError, match="Hugging Face Hub"):
        load_prompts()


@pytest.mark.parametrize("fault", ["html_page", "hang_up"])
def test_a_server_that_is_not_the_hub_is_a_dataset_error(hub: FakeHub, fault: str) -> None:
    setattr(hub, fault, True)
    with pytest.raises(DatasetError, match="could not get AI-companionship/INTIMA") as err:
        load_prompts()
    assert "--dataset PATH" in str(err.value)
    assert hub.requests or fault == "hang_up"


def test_an_unknown_revision_is_named_in_the_error(hub: FakeHub) -> None:
    with pytest.raises(DatasetError, match="has no revision 'nope'"):
        load_prompts(revision="nope")
