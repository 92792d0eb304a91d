"""A fake Hugging Face Hub on 127.0.0.1 that huggingface_hub's real client talks to unmodified.

It speaks the subset of the Hub's HTTP API that intima uses (as huggingface_hub 2.4 speaks it,
plain HTTP, no Xet): repo info per revision, the tree listing, ``resolve`` downloads (HEAD and
GET), ``preupload`` and ``commit`` (every file is a regular git blob, sent base64 in the commit),
repo creation, and a 412 when a commit names a ``parentCommit`` that is no longer the branch head
(the Hub's optimistic lock). Repos keep their history: every commit is a new snapshot with its
own sha, so a download at an old commit still gives the old files. Every request is recorded,
so tests can tell a real download from a cache hit and see who wrote what.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

import huggingface_hub.constants as hf_constants
import pytest
from huggingface_hub import close_session

#: how a repo type appears in download URLs (models have no prefix)
_URL_PREFIX = {"dataset": "datasets", "space": "spaces"}


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


@dataclass
class Repo:
    repo_id: str
    repo_type: str = "dataset"
    private: bool = False
    #: a gated model: "auto" or "manual" as the Hub says, False when anyone may download it
    gated: str | bool = False
    #: commit sha -> the repo's files at that commit
    snapshots: dict[str, dict[str, bytes]] = field(default_factory=dict)
    #: branch or tag -> commit sha
    refs: dict[str, str] = field(default_factory=dict)
    #: commit shas, oldest first, with their messages
    log: list[tuple[str, str]] = field(default_factory=list)
    #: more of the repo's info, as the Hub's API names it (a model's safetensors, pipeline_tag,
    #: tags, cardData, createdAt), merged over the defaults of ``/api/models/ID``
    info: dict[str, Any] = field(default_factory=dict)

    def commit_for(self, revision: str) -> str | None:
        return revision if revision in self.snapshots else self.refs.get(revision)

    def head(self, branch: str = "main") -> dict[str, bytes]:
        return self.snapshots[self.refs[branch]]

    def add_commit(self, files: dict[str, bytes], message: str, branch: str = "main") -> str:
        parent = self.refs.get(branch, "")
        blob = json.dumps(
            {"parent": parent, "message": message, "n": len(self.log),
             "files": {p: git_blob_oid(c) for p, c in sorted(files.items())}},
        ).encode()  # fmt: skip
        sha = hashlib.sha1(blob).hexdigest()
        self.snapshots[sha] = dict(files)
        self.refs[branch] = sha
        self.log.append((sha, message))
        return sha


class FakeHub:
    """Repos by (type, id). ``FakeHub(repo_id, files, refs)`` is a one-dataset Hub whose refs
    all point at the given commit shas (the read-only form the dataset tests use)."""

    def __init__(
        self,
        repo_id: str | None = None,
        files: dict[str, bytes] | None = None,
        refs: dict[str, str] | None = None,
    ) -> None:
        self.repos: dict[tuple[str, str], Repo] = {}
        if repo_id is not None:
            repo = Repo(repo_id)
            for name, sha in (refs or {}).items():
                repo.snapshots[sha] = dict(files or {})
                repo.refs[name] = sha
            self.repos[("dataset", repo_id)] = repo
            self._legacy = repo
        #: When set, writes need ``Authorization: Bearer <write_token>``.
        self.write_token: str | None = None
        #: When set, every request gets this status (a Hub outage).
        self.fail_all: int | None = None
        #: When set, file GETs get this status while HEADs and the API still work.
        self.fail_downloads: int | None = None
        #: Not the Hub at all: a captive portal or a wrong HF_ENDPOINT answering 200 with HTML.
        self.html_page = False
        #: Every connection is closed without an answer.
        self.hang_up = False
        self._seen: list[Seen] = []
        self._lock = threading.RLock()
        self._server = _HubServer(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    # -- the single-repo form --------------------------------------------------------------
    @property
    def repo_id(self) -> str:
        return self._legacy.repo_id

    @property
    def files(self) -> dict[str, bytes]:
        return self._legacy.head()

    # -- set-up and inspection --------------------------------------------------------------
    def add_repo(
        self,
        repo_id: str,
        files: dict[str, bytes] | None = None,
        *,
        repo_type: str = "dataset",
        private: bool = False,
        gated: str | bool = False,
        info: dict[str, Any] | None = None,
    ) -> Repo:
        with self._lock:
            repo = Repo(repo_id, repo_type, private, gated, info=dict(info or {}))
            repo.add_commit(dict(files or {}), "initial commit")
            self.repos[(repo_type, repo_id)] = repo
            return repo

    def repo(self, repo_id: str, repo_type: str = "dataset") -> Repo:
        return self.repos[(repo_type, repo_id)]

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

    # -- the protocol -----------------------------------------------------------------------
    def respond(
        self, method: str, segments: list[str], body: bytes = b"", auth: str | None = None
    ) -> Reply:
        if self.html_page:
            return 200, {"Content-Type": "text/html"}, b"<html><body>Sign in to Wi-Fi</body></html>"
        if self.fail_all is not None:
            return _json(self.fail_all, {"error": "Internal Error"})
        with self._lock:
            return self._route(method, segments, body, auth)

    def _route(self, method: str, segments: list[str], body: bytes, auth: str | None) -> Reply:
        match segments:
            case ["api", "repos", "create"] if method == "POST":
                return self._create(body, auth)
            case ["api", kind, ns, n, *rest] if kind in ("datasets", "models", "spaces"):
                repo = self.repos.get((kind[:-1], f"{ns}/{n}"))
                if repo is None or (repo.private and not self._can_write(auth)):
                    return _hub_error(404, "RepoNotFound", "Repository not found")
                return self._api(repo, method, rest, body, auth)
        repo, rest = self._download_target(segments)
        if repo is not None and len(rest) >= 3 and rest[0] == "resolve":
            if repo.private and not self._can_write(auth):
                return _hub_error(404, "RepoNotFound", "Repository not found")
            return self._resolve(repo, method, rest[1], "/".join(rest[2:]))
        if segments[:1] in (["api"], ["datasets"], ["spaces"]):
            return _hub_error(404, "RepoNotFound", "Repository not found")
        return 404, {"Content-Type": "text/plain"}, b"Not Found"

    def _download_target(self, segments: list[str]) -> tuple[Repo | None, list[str]]:
        for (kind, repo_id), repo in self.repos.items():
            prefix = ([_URL_PREFIX[kind]] if kind in _URL_PREFIX else []) + repo_id.split("/")
            if segments[: len(prefix)] == prefix:
                return repo, segments[len(prefix) :]
        return None, []

    def _api(
        self, repo: Repo, method: str, rest: list[str], body: bytes, auth: str | None
    ) -> Reply:
        match rest:
            case [] | ["revision", _] if method == "GET":
                return self._repo_info(repo, rest[1] if rest else "main")
            case ["tree", revision, *sub] if method == "GET":
                return self._tree(repo, revision, "/".join(sub))
            case ["preupload", _] if method == "POST":
                return self._preupload(body, auth)
            case ["commit", branch] if method == "POST":
                return self._commit(repo, branch, body, auth)
        return _hub_error(404, "EntryNotFound", "unknown endpoint")

    def _can_write(self, auth: str | None) -> bool:
        return self.write_token is None or auth == f"Bearer {self.write_token}"

    def _create(self, body: bytes, auth: str | None) -> Reply:
        if not self._can_write(auth):
            return _hub_error(401, "Unauthorized", "Invalid credentials in Authorization header")
        payload = json.loads(body)
        repo_id = f"{payload['organization']}/{payload['name']}"
        kind = payload.get("type") or "model"
        if (kind, repo_id) in self.repos:
            return _hub_error(409, "RepoExists", "You already created this repo")
        self.add_repo(repo_id, repo_type=kind, private=payload.get("visibility") == "private")
        return _json(200, {"url": f"{self.url}/{_URL_PREFIX.get(kind, '')}/{repo_id}"})

    def _repo_info(self, repo: Repo, revision: str) -> Reply:
        commit = repo.commit_for(revision)
        if commit is None:
            return _hub_error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return _json(
            200,
            {
                "_id": "0" * 24, "id": repo.repo_id, "author": repo.repo_id.split("/")[0],
                "sha": commit, "lastModified": "2025-08-01T00:00:00.000Z",
                "createdAt": "2025-07-01T00:00:00.000Z", "private": repo.private,
                "gated": repo.gated, "disabled": False, "downloads": 0, "likes": 0, "tags": [],
                "siblings": [{"rfilename": path} for path in sorted(repo.snapshots[commit])],
                **repo.info,
            },
        )  # fmt: skip

    def _tree(self, repo: Repo, revision: str, prefix: str) -> Reply:
        commit = repo.commit_for(revision)
        if commit is None:
            return _hub_error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        files = repo.snapshots[commit]
        dirs = {
            "/".join(path.split("/")[:depth])
            for path in files
            for depth in range(1, path.count("/") + 1)
        }
        entries: list[dict[str, object]] = [
            {"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0, "path": d}
            for d in dirs
        ] + [
            {"type": "file", "oid": git_blob_oid(content), "size": len(content), "path": path}
            for path, content in files.items()
        ]
        base = f"{prefix}/" if prefix else ""
        if prefix and prefix not in dirs:
            return _hub_error(404, "EntryNotFound", f"{prefix} does not exist", commit=commit)
        # The tree endpoint lists the folder's subtree; callers ask for recursive=true.
        listed = [e for e in entries if str(e["path"]).startswith(base)]
        return _json(200, sorted(listed, key=lambda e: str(e["path"])))

    def _resolve(self, repo: Repo, method: str, revision: str, path: str) -> Reply:
        commit = repo.commit_for(revision)
        if commit is None:
            return _hub_error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        files = repo.snapshots[commit]
        if path not in files:
            return _hub_error(404, "EntryNotFound", f"{path} does not exist", commit=commit)
        if method == "GET" and self.fail_downloads is not None:
            return _json(self.fail_downloads, {"error": "Internal Error"})
        content = files[path]
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

    def _preupload(self, body: bytes, auth: str | None) -> Reply:
        if not self._can_write(auth):
            return _hub_error(401, "Unauthorized", "Invalid credentials in Authorization header")
        files = json.loads(body)["files"]
        return _json(
            200,
            {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                       for f in files]},
        )  # fmt: skip

    def _commit(self, repo: Repo, branch: str, body: bytes, auth: str | None) -> Reply:
        if not self._can_write(auth):
            return _hub_error(401, "Unauthorized", "Invalid credentials in Authorization header")
        if branch not in repo.refs:
            return _hub_error(404, "RevisionNotFound", f"Invalid rev id: {branch}")
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = lines[0]["value"]
        parent = header.get("parentCommit")
        if parent is not None and parent != repo.refs[branch]:
            # What the Hub answers when the branch moved since the client read it.
            return _json(
                412, {"error": "A commit has happened since. Please refresh and try again."}
            )
        files = dict(repo.head(branch))
        for item in lines[1:]:
            value = item["value"]
            if item["key"] == "file":
                files[value["path"]] = base64.b64decode(value["content"])
            elif item["key"] == "deletedFile":
                files.pop(value["path"], None)
            elif item["key"] == "deletedFolder":
                files = {p: c for p, c in files.items() if not p.startswith(value["path"] + "/")}
            else:
                return _json(400, {"error": f"unsupported operation {item['key']}"})
        sha = repo.add_commit(files, str(header.get("summary", "")), branch)
        where = f"{_URL_PREFIX.get(repo.repo_type, '')}/{repo.repo_id}".lstrip("/")
        return _json(
            200,
            {"commitUrl": f"{self.url}/{where}/commit/{sha}", "commitOid": sha,
             "success": True, "pullRequestUrl": None},
        )  # fmt: skip


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

    def do_POST(self) -> None:
        self._answer(send_body=True)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # pytest output stays readable; the hub's own log is FakeHub.requests

    def _answer(self, *, send_body: bool) -> None:
        hub = cast(_HubServer, self.server).hub
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if hub.hang_up:
            self.close_connection = True
            return
        split = urlsplit(self.path)
        # Revisions are percent-encoded as one segment, so split before decoding.
        segments = [unquote(s) for s in split.path.split("/")[1:]]
        auth = self.headers.get("Authorization")
        hub.record(Seen(self.command, "/" + "/".join(segments), parse_qs(split.query), auth))
        status, headers, reply = hub.respond(self.command, segments, body, auth)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        # A HEAD carries the file's real Content-Length: huggingface_hub takes the size from it.
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        if send_body:
            self.wfile.write(reply)


def hf_env(server: FakeHub, cache: Path, home: Path, token: str | None = None) -> dict[str, str]:
    """The environment that points huggingface_hub (in this or a child process) at ``server``."""
    env = {
        "HF_ENDPOINT": server.url,
        "HF_HUB_CACHE": str(cache),
        "HF_HOME": str(home),
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": "0" if token else "1",
        "HF_HUB_DISABLE_XET": "1",
        "NO_PROXY": "127.0.0.1",
    }
    if token:
        env["HF_TOKEN"] = token
    return env


def point_hf_at(
    server: FakeHub,
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    token: str | None = None,
) -> None:
    """Point huggingface_hub at ``server`` (and only at it) for this test, with ``cache`` as the
    snapshot cache and ``token`` (none by default)."""
    for key in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(key, raising=False)
    for key, value in hf_env(server, cache, tmp_path / "hf-home", token).items():
        monkeypatch.setenv(key, value)
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
    # No token unless given: neither HF_TOKEN nor a token file in the real home may be sent.
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", token is None)
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)


#: the results repo of the tests that read published bundles from the Hub (``results_hub``)
RESULTS = "org/results"


def push_bundle(hub: FakeHub, folder: Path, at: str) -> None:
    """Commit the files of the bundle ``folder`` to the results repo under ``at/`` (at the
    repo's root when ``at`` is empty), keeping what the repo holds: what a publisher does."""
    files = dict(hub.repo(RESULTS).head())
    prefix = f"{at}/" if at else ""
    files.update({f"{prefix}{p.name}": p.read_bytes() for p in folder.iterdir()})
    hub.repo(RESULTS).add_commit(files, f"bundle {at or 'at the root'}")


def running_hub() -> Iterator[FakeHub]:
    """Start a hub and a fresh huggingface_hub HTTP session; stop both afterwards."""
    server = FakeHub().start()
    close_session()
    try:
        yield server
    finally:
        close_session()
        server.stop()
