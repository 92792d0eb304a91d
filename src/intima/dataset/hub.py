"""The one way intima reads from the Hugging Face Hub: a cached snapshot, one error policy."""

from __future__ import annotations

from pathlib import Path

from intima.core.errors import IntimaError


def snapshot(
    repo_id: str,
    *,
    repo_type: str,
    revision: str | None,
    allow_patterns: list[str],
    error: type[IntimaError],
    hint: str,
) -> Path:
    """Download (or reuse from the cache) a repo; honours HF_HUB_OFFLINE and HF_HUB_CACHE.

    Every failure becomes one ``error`` naming the repo and what to do (``hint``); the cause
    stays chained.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import RevisionNotFoundError

    try:
        return Path(
            snapshot_download(
                repo_id=repo_id,
                repo_type=repo_type,
                revision=revision,
                allow_patterns=allow_patterns,
            )
        )
    except RevisionNotFoundError as exc:
        raise error(
            f"the Hugging Face Hub has no revision {revision!r} of {repo_id}; "
            "pass a branch, tag or commit that exists, or leave out --revision"
        ) from exc
    # Anything else means the Hub could not be used: no network, a proxy, a server that is not
    # the Hub (HTML, cut connections), an HTTP error. huggingface_hub lets several of those
    # through as httpx, JSON or key errors, so the net is wide.
    except Exception as exc:
        raise error(
            f"could not get {repo_id} ({repo_type} repo) from the Hugging Face Hub "
            f"({type(exc).__name__}). Check your network, or {hint}."
        ) from exc
