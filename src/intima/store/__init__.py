"""The results store: one SQLite file, one write path, migrations owned by the subsystems."""

from intima.store.claims import ClaimState, claim_owner
from intima.store.db import (
    DEFAULT_STORE,
    Store,
    now,
    response_id_for,
)
from intima.store.records import ResponseRecord, RunRecord, RunStatus, StoredResponse

__all__ = [
    "DEFAULT_STORE",
    "ClaimState",
    "ResponseRecord",
    "RunRecord",
    "RunStatus",
    "Store",
    "StoredResponse",
    "claim_owner",
    "now",
    "response_id_for",
]
