"""The request queue on the Hugging Face Hub: one JSON file per request in a dataset repo.

``hf://datasets/OWNER/requests`` holds ``requests/<request_id>.json``: the request (the same
:class:`RequestRecord` as the local queue), its status and its history. The app's form and
``intima request --queue hf://...`` add files; workers anywhere claim them.

Every change is a read-modify-write of one file, committed with ``parent_commit`` set to the
commit that was read: the Hub refuses the commit (HTTP 412) if anyone committed in between, and
the change is then re-read and re-applied. So two workers never claim the same request, and
two forms never add the same request twice. Claims are leases, as in the local queue: a worker
renews its lease while it works; a lease that has run out may be taken over by another worker.

The request id is derived from the configuration and dataset, so a duplicate request is the
same file: adding a pending, running, finished, under-review or cancelled duplicate returns it
unchanged (``is_new=False``); adding a failed one puts it back in the queue. A cancelled request
stays cancelled until a maintainer reopens it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, Literal

from intima.bundles.publish import hub_repo
from intima.core.config import GenerationSettings, ModelConfig, stable_hash
from intima.core.version import __version__
from intima.service import lease
from intima.service.hub_requests import (
    FOLDER,
    HubQueueDenied,
    HubQueueError,
    HubRequest,
    RequestEvent,
    moved,
    parse_request_file,
)
from intima.service.lease import Clock, Move, Status
from intima.service.queue import (
    DEFAULT_LEASE_S,
    DEFAULT_MAX_ATTEMPTS,
    MAX_REASON_CHARS,
    QueueError,
    redact,
)
from intima.service.request_policy import check_request_id
from intima.service.request_rules import check_request
from intima.store import now

#: commits refused because the repo moved are re-read and retried this many times
MAX_CONFLICTS = 20


Change = Callable[[HubRequest | None], HubRequest | None]
"""Given the current record (None: no such file), the new one (None: leave it unchanged)."""


class HubQueue:
    """The queue in ``url`` (``hf://datasets/OWNER/NAME``); ``token`` for writing (else the
    token huggingface_hub finds: HF_TOKEN or ``hf auth login``)."""

    #: anyone with a write token (the Space holds one) can add files: see RequestQueue.public
    public = True

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        require_review: bool = False,
        clock: Clock = time.time,
    ):
        self.url = url
        self.clock = clock
        self.repo_id, self.repo_type = hub_repo(url, "dataset")
        if self.repo_type != "dataset":
            raise HubQueueError(f"{url[:200]!r}: the request queue must be a dataset repo")
        self.token = token
        self.require_review = require_review
        #: files of the last read that are not valid requests (skipped, with the reason)
        self.problems: list[str] = []
        #: the same, by the request id their file name gives
        self._invalid: dict[str, str] = {}

    # -- reading ----------------------------------------------------------------------------
    def requests(self, status: Status | None = None) -> list[HubRequest]:
        _, records = self._read()
        out = sorted(records.values(), key=lambda r: (r.created_at, r.request_id))
        return [r for r in out if status is None or r.status == status]

    def get(self, request_id: str) -> HubRequest:
        check_request_id(request_id)
        _, records = self._read()
        if request_id not in records:
            raise self._missing(request_id)
        return records[request_id]

    def _missing(self, request_id: str) -> QueueError:
        """No valid request ``request_id``: its file is not a valid request, or there is none."""
        if request_id in self._invalid:
            return QueueError(self._invalid[request_id])
        return QueueError(f"no request {request_id[:40]!r} in {self.url}; see `intima requests`")

    def status(self, request_id: str) -> Status | None:
        return next((r.status for r in self.requests() if r.request_id == request_id), None)

    def idle(self) -> bool:
        return not any(r.status in ("pending", "running") for r in self.requests())

    # -- adding, reviewing -----------------------------------------------------------------
    def add(
        self,
        spec: str,
        requester: str | None = None,
        *,
        dataset: str = "hub",
        system_prompt: str | None = None,
        generation: GenerationSettings | None = None,
    ) -> HubRequest:
        """Validate and queue a request (see the module doc for duplicates). A request on the Hub
        follows the public form's rules whoever writes it, since workers refuse anything else:
        a public Hub model id or an allow-listed API model, never a server or a path."""
        config, requester = check_request(
            spec, requester, dataset, system_prompt, generation, allow_urls=False
        )
        _check_on_hub(config)
        dedup = stable_hash({"config": config.cache_fields(), "dataset": dataset})
        request_id = dedup[:16]
        first: Status = "pending_review" if self.require_review else "pending"
        created: list[bool] = []

        def change(cur: HubRequest | None) -> HubRequest | None:
            created.clear()
            if cur is not None:  # a duplicate; a failed one goes back in the queue
                move = lease.requeue(cur, first)
                created.extend([True] if move else [])
                return None if move is None else moved(cur, move)
            created.append(True)
            stamp = now()
            return HubRequest(
                request_id=request_id,
                spec=config.spec,
                requester=requester,
                dataset=dataset,
                config_key=config.config_key,
                config=config,
                status=first,
                package_version=__version__,
                created_at=stamp,
                updated_at=stamp,
                history=[RequestEvent(at=stamp, status=first, detail="requested")],
            )

        rec = self._update(request_id, change, f"request {request_id}")
        assert rec is not None
        return rec.model_copy(update={"is_new": bool(created)})

    def approve(self, request_id: str, by: str | None = None) -> HubRequest:
        return self._review(request_id, "pending", f"approved by {by or '?'}")

    def cancel(self, request_id: str, by: str | None = None) -> HubRequest:
        return self._review(request_id, "cancelled", f"cancelled by {by or '?'}")

    def reopen(self, request_id: str, by: str | None = None) -> HubRequest:
        """Put a cancelled request back in the queue (pending, whatever ``require_review``
        says: a maintainer decided)."""
        return self._decide(
            request_id,
            lambda r: lease.reopen(r, f"reopened by {by or '?'}"),
            lambda r: lease.reopen_refusal(request_id, r),
            f"reopened {request_id}",
        )

    def _review(
        self, request_id: str, to: Literal["pending", "cancelled"], detail: str
    ) -> HubRequest:
        return self._decide(
            request_id,
            lambda r: lease.review(r, to, detail),
            lambda r: lease.refusal(request_id, r, to),
            f"{to} {request_id}",
        )

    def _decide(
        self,
        request_id: str,
        decide: Callable[[HubRequest], Move | None],
        refused: Callable[[HubRequest], str],
        message: str,
    ) -> HubRequest:
        def change(cur: HubRequest | None) -> HubRequest | None:
            if cur is None:
                raise self._missing(request_id)
            move = decide(cur)
            if move is None:
                raise QueueError(refused(cur))
            return moved(cur, move)

        rec = self._update(request_id, change, message)
        assert rec is not None
        return rec

    # -- the worker's side -----------------------------------------------------------------
    def claim_next(
        self,
        worker_id: str,
        lease_s: float = DEFAULT_LEASE_S,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        skip: Collection[str] = (),
    ) -> HubRequest | None:
        """Take the oldest claimable request (:func:`lease.claim` decides which are, and fails
        one whose workers keep stopping); None if there is none. ``skip``: requests this worker
        gave back and does not take again yet."""
        for _ in range(MAX_CONFLICTS):
            sha, records = self._read()
            at = self.clock()
            mine = (r for r in records.values() if r.request_id not in skip)
            ordered = sorted(mine, key=lambda r: (r.created_at, r.request_id))
            moves = ((r, lease.claim(r, worker_id, at, lease_s, max_attempts)) for r in ordered)
            found = next(((r, m) for r, m in moves if m is not None), None)
            if found is None:
                return None
            new = moved(*found)
            if self._commit(sha, new, f"{new.status} {new.request_id} ({worker_id})"):
                if new.status == "running":
                    return new
        raise HubQueueError(f"{self.url} kept moving while claiming; try again")

    def heartbeat(self, request_id: str, worker_id: str, lease_s: float = DEFAULT_LEASE_S) -> bool:
        """Extend the lease; False if this worker no longer holds it."""
        return self._change(
            request_id,
            lambda r: lease.renew(r, worker_id, self.clock(), lease_s),
            f"lease {request_id} ({worker_id})",
        )

    def finish(
        self, request_id: str, worker_id: str, run_ids: list[str], results: Sequence[str] = ()
    ) -> bool:
        return self._change(
            request_id,
            lambda r: lease.settle(r, worker_id, "finished", None),
            f"finished {request_id} ({worker_id})",
            run_ids=run_ids,
            results=list(results),
        )

    def fail(self, request_id: str, worker_id: str, reason: str) -> bool:
        reason = redact(reason)[:MAX_REASON_CHARS]
        return self._change(
            request_id,
            lambda r: lease.settle(r, worker_id, "failed", reason),
            f"failed {request_id} ({worker_id})",
        )

    def release(self, request_id: str, worker_id: str, detail: str = "released") -> bool:
        return self._change(
            request_id,
            lambda r: lease.release(r, worker_id, detail),
            f"release {request_id} ({worker_id})",
        )

    def _change(
        self,
        request_id: str,
        decide: Callable[[HubRequest], Move | None],
        message: str,
        *,
        run_ids: list[str] | None = None,
        results: list[str] | None = None,
    ) -> bool:
        """Apply what ``decide`` makes of the request as it is; False if it made no change."""
        made: list[bool] = []

        def change(cur: HubRequest | None) -> HubRequest | None:
            made.clear()
            move = None if cur is None else decide(cur)
            if cur is None or move is None:
                return None
            made.append(True)
            extra: dict[str, Any] = {"results": [*cur.results, *(results or [])]}
            if run_ids is not None:
                extra["run_ids"] = run_ids
            return moved(cur, move, **extra)

        self._update(request_id, change, message)
        return bool(made)

    # -- the Hub ------------------------------------------------------------------------------
    def _api(self) -> Any:
        from huggingface_hub import HfApi

        return HfApi(token=self.token)

    def _read(self) -> tuple[str, dict[str, HubRequest]]:
        """The head commit and every valid request at it; files that are not valid requests
        are named in ``self.problems`` (one bad file must not stop the queue)."""
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import RepositoryNotFoundError
        from huggingface_hub.utils import (
            are_progress_bars_disabled,
            disable_progress_bars,
            enable_progress_bars,
        )

        quiet = are_progress_bars_disabled()
        disable_progress_bars()  # a bar per queue read would drown the worker's output
        try:
            sha = self._api().repo_info(self.repo_id, repo_type="dataset").sha
            folder = Path(
                snapshot_download(
                    self.repo_id,
                    repo_type="dataset",
                    revision=sha,
                    allow_patterns=[f"{FOLDER}/*.json"],
                    token=self.token,
                )
            )
        except RepositoryNotFoundError as exc:
            raise HubQueueDenied(
                f"the request queue {self.url} does not exist or is private; create the dataset "
                "repo, or set HF_TOKEN to a token that can read it"
            ) from exc
        except Exception as exc:  # huggingface_hub lets httpx, JSON and OS errors through
            raise HubQueueError(
                f"could not read the request queue {self.url} ({type(exc).__name__}); check the "
                "network, that the repo exists, and HF_TOKEN if it is private"
            ) from exc
        finally:
            if not quiet:
                enable_progress_bars()
        records, self.problems, self._invalid = {}, [], {}
        for path in sorted((folder / FOLDER).glob("*.json")):
            try:
                rec = parse_request_file(path)
            except HubQueueError as exc:
                self.problems.append(str(exc))
                self._invalid[path.name.removesuffix(".json")] = str(exc)
                continue
            records[rec.request_id] = rec
        return str(sha), records

    def _update(self, request_id: str, change: Change, message: str) -> HubRequest | None:
        """Apply ``change`` to one request under the Hub's optimistic lock; the result (the
        unchanged record when ``change`` made none)."""
        check_request_id(request_id)
        for _ in range(MAX_CONFLICTS):
            sha, records = self._read()
            cur = records.get(request_id)
            new = change(cur)
            if new is None:
                return cur
            if self._commit(sha, new, message):
                return new
        raise HubQueueError(f"{self.url} kept moving while writing {request_id}; try again")

    def _commit(self, parent: str, rec: HubRequest, message: str) -> bool:
        """Write one request file on top of ``parent``; False if the repo moved since."""
        from huggingface_hub import CommitOperationAdd
        from huggingface_hub.errors import HfHubHTTPError

        data = rec.model_dump_json(exclude={"is_new"}, indent=1).encode()
        path = f"{FOLDER}/{rec.request_id}.json"
        op = CommitOperationAdd(path_in_repo=path, path_or_fileobj=data)
        try:
            self._api().create_commit(
                self.repo_id,
                [op],
                commit_message=message[:200],
                repo_type="dataset",
                parent_commit=parent,
            )
        except HfHubHTTPError as exc:
            status = exc.response.status_code if exc.response is not None else None
            if status == 412:  # someone committed since we read: re-read and re-apply
                return False
            if status in (401, 403):
                raise HubQueueDenied(
                    f"not allowed to write to {self.url} (HTTP {status}); set HF_TOKEN to a "
                    "token with write access to the repo"
                ) from exc
            raise HubQueueError(
                f"could not write to the request queue {self.url} (HTTP {status})"
            ) from exc
        except Exception as exc:
            raise HubQueueError(
                f"could not write to the request queue {self.url} ({type(exc).__name__})"
            ) from exc
        return True


def _check_on_hub(config: ModelConfig) -> None:
    from intima.service.public import PublicRequestError, check_on_hub

    try:
        check_on_hub(config.parsed)
    except PublicRequestError as exc:
        raise QueueError(str(exc)) from exc
