"""The Hub path of ``load_prompts`` end to end, over real HTTP, against a fake Hub on 127.0.0.1.

``test_dataset.py`` only pre-fills the snapshot cache. Here huggingface_hub's own
``snapshot_download`` runs unmodified: it resolves the revision through the repo-info API, lists
the repo tree, then HEADs and GETs each wanted file on its ``resolve`` URL. The server below
speaks exactly that subset of the Hub protocol (as used by huggingface_hub 2.4, plain HTTP, no
Xet) and records every request, so the tests can tell a real download from a cache hit.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

import huggingface_hub.constants as hf_constants
import pytest
from huggingface_hub import close_session
from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RevisionNotFoundError

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


def git_blob_oid(content: bytes) -> str:
    """The Hub's ETag for a file stored in git (not LFS) is its git blob id."""
    return hashlib.sha1(b"blob %d\x00" % len(content) + content).hexdigest()


@dataclass(frozen=True)
class Seen:
    """One request as the server received it (path segments already percent-decoded)."""

    method: str
    path: str
    query: dict[str, list[str]]
    authorization: str | None


Reply = tuple[int, dict[str, str], bytes]


def _json(status: int, body: object, headers: dict[str, str] | None = None) -> Reply:
    return (
        status,
        {"Content-Type": "application/json; charset=utf-8", **(headers or {})},
        json.dumps(body).encode(),
    )


def _hub_error(status: int, code: str, message: str, commit: str | None = None) -> Reply:
    # huggingface_hub maps errors to exception types by X-Error-Code, not by status or body.
    headers = {"X-Error-Code": code, "X-Error-Message": message}
    if commit is not None:
        headers["X-Repo-Commit"] = commit
    return _json(status, {"error": message}, headers)


class FakeHub:
    """A one-repo dataset Hub: repo info per revision, tree listing, and ``resolve`` downloads."""

    def __init__(self, repo_id: str, files: dict[str, bytes], refs: dict[str, str]) -> None:
        self.repo_id = repo_id
        self.files = files
        self.refs = refs
        #: When set, every request gets this status (a Hub outage).
        self.fail_all: int | None = None
        #: When set, file GETs get this status while HEADs and the API still work.
        self.fail_downloads: int | None = None
        #: Not the Hub at all: a captive portal or a wrong HF_ENDPOINT answering 200 with HTML.
        self.html_page = False
        #: Every connection is closed without an answer.
        self.hang_up = False
        self._seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server = _HubServer(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> FakeHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def record(self, seen: Seen) -> None:
        with self._lock:
            self._seen.append(seen)

    @property
    def requests(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)

    def calls(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.requests]

    def _commit_for(self, revision: str) -> str | None:
        commits = set(self.refs.values())
        return revision if revision in commits else self.refs.get(revision)

    def respond(self, method: str, segments: list[str]) -> Reply:
        if self.html_page:
            return 200, {"Content-Type": "text/html"}, b"<html><body>Sign in to Wi-Fi</body></html>"
        if self.fail_all is not None:
            return _json(self.fail_all, {"error": "Internal Error"})
        namespace, name = self.repo_id.split("/")
        match segments:
            case ["api", "datasets", ns, n, "revision", revision] if (ns, n) == (namespace, name):
                return self._repo_info(revision)
            case ["api", "datasets", ns, n, "tree", revision, *sub] if (ns, n) == (namespace, name):
                return self._tree(revision, "/".join(sub))
            case ["datasets", ns, n, "resolve", revision, *parts] if (ns, n) == (
                namespace,
                name,
            ) and parts:
                return self._resolve(method, revision, "/".join(parts))
            case ["api", "datasets", *_] | ["datasets", *_]:
                return _hub_error(404, "RepoNotFound", "Repository not found")
        return 404, {"Content-Type": "text/plain"}, b"Not Found"

    def _repo_info(self, revision: str) -> Reply:
        commit = self._commit_for(revision)
        if commit is None:
            return _hub_error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return _json(
            200,
            {
                "_id": "0" * 24,
                "id": self.repo_id,
                "author": self.repo_id.split("/")[0],
                "sha": commit,
                "lastModified": "2025-08-01T00:00:00.000Z",
                "createdAt": "2025-07-01T00:00:00.000Z",
                "private": False,
                "gated": False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "siblings": [{"rfilename": path} for path in sorted(self.files)],
            },
        )

    def _tree(self, revision: str, prefix: str) -> Reply:
        if self._commit_for(revision) is None:
            return _hub_error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        dirs = {
            "/".join(path.split("/")[:depth])
            for path in self.files
            for depth in range(1, path.count("/") + 1)
        }
        entries: list[dict[str, object]] = [
            {"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0, "path": d}
            for d in dirs
        ] + [
            {"type": "file", "oid": git_blob_oid(content), "size": len(content), "path": path}
            for path, content in self.files.items()
        ]
        base = f"{prefix}/" if prefix else ""
        # The tree endpoint lists the folder's subtree; callers ask for recursive=true.
        listed = [e for e in entries if str(e["path"]).startswith(base)]
        return _json(200, sorted(listed, key=lambda e: str(e["path"])))

    def _resolve(self, method: str, revision: str, path: str) -> Reply:
        commit = self._commit_for(revision)
        if commit is None:
            return _hub_error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        if path not in self.files:
            return _hub_error(404, "EntryNotFound", f"{path} does not exist", commit=commit)
        if method == "GET" and self.fail_downloads is not None:
            return _json(self.fail_downloads, {"error": "Internal Error"})
        content = self.files[path]
        # Without X-Repo-Commit and an ETag, huggingface_hub refuses the file as not Hub-served.
        return (
            200,
            {
                "Content-Type": "text/plain; charset=utf-8",
                "ETag": f'"{git_blob_oid(content)}"',
                "X-Repo-Commit": commit,
                "Accept-Ranges": "bytes",
            },
            content,
        )


class _HubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, hub: FakeHub) -> None:
        super().__init__(("127.0.0.1", 0), _HubHandler)
        self.hub = hub


class _HubHandler(BaseHTTPRequestHandler):
    # Keep-alive like the real Hub, so the client's pooled connections get exercised too.
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # pytest output stays readable; the hub's own log is FakeHub.requests

    def _answer(self, *, send_body: bool) -> None:
        hub = cast(_HubServer, self.server).hub
        if hub.hang_up:
            self.close_connection = True
            return
        split = urlsplit(self.path)
        # Revisions are percent-encoded as one segment, so split before decoding.
        segments = [unquote(s) for s in split.path.split("/")[1:]]
        hub.record(
            Seen(
                method=self.command,
                path="/" + "/".join(segments),
                query=parse_qs(split.query),
                authorization=self.headers.get("Authorization"),
            )
        )
        status, headers, body = hub.respond(self.command, segments)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        # A HEAD carries the file's real Content-Length: huggingface_hub takes the size from it.
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)


def point_hf_at(
    server: FakeHub, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point huggingface_hub at ``server`` (and only at it) for this test, with ``cache`` as the
    snapshot cache and no token."""
    env = {
        "HF_ENDPOINT": server.url,
        "HF_HUB_CACHE": str(cache),
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
        "HF_HUB_DISABLE_XET": "1",
        "NO_PROXY": "127.0.0.1",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(key, raising=False)
    # huggingface_hub reads the environment once, at import: the env above is for any code that
    # re-reads it, the constants are what this process actually uses.
    monkeypatch.setattr(hf_constants, "ENDPOINT", server.url)
    # Derived from ENDPOINT at import and used as is to build resolve URLs.
    monkeypatch.setattr(
        hf_constants,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        server.url + "/{repo_id}/resolve/{revision}/{filename}",
    )
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    # Telemetry off also stops the user-agent code fetching {ENDPOINT}/api/agent-harnesses.
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_TELEMETRY", True)
    # No token: neither HF_TOKEN nor a token file in the real home may be sent anywhere.
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", True)
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)


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
