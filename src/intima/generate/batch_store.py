"""``provider_batches`` (declared in :mod:`intima.generate.tables`): every read and write of it,
in one place, for ``generate.batch`` and ``judges.batch``.

A row is written as an intent (its id the ``pending-`` token) before the vendor is asked, then
confirmed under the vendor's batch id, then marked imported once its results are stored.
"""

from __future__ import annotations

import json
from datetime import datetime

from intima.store import Store, now


def record_batch(
    store: Store, batch_id: str, provider: str, purpose: str, scope: str, refs: dict[str, str]
) -> None:
    """A submission (or its intent) and the items it carries (custom id -> our id)."""
    stamp = now()
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO provider_batches (batch_id, provider, purpose, scope, status, "
            "vendor_status, n_items, items_json, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, 'submitted', NULL, ?, ?, ?, ?)",
            (
                batch_id,
                provider,
                purpose,
                scope,
                len(refs),
                json.dumps(refs, sort_keys=True),
                stamp,
                stamp,
            ),
        )


def open_batch(store: Store, purpose: str, scope: str) -> tuple[str, dict[str, str]] | None:
    """The oldest submitted, not yet imported batch of this purpose and scope, with its items."""
    rows = store.query(
        "SELECT batch_id, items_json FROM provider_batches WHERE purpose = ? AND scope = ? "
        "AND status = 'submitted' ORDER BY created_at LIMIT 1",
        (purpose, scope),
    )
    return (rows[0]["batch_id"], json.loads(rows[0]["items_json"])) if rows else None


def confirm_batch(store: Store, token: str, batch_id: str) -> None:
    """The intent ``token`` is the vendor's batch ``batch_id``."""
    with store.transaction() as conn:
        conn.execute(
            "UPDATE provider_batches SET batch_id = ?, updated_at = ? WHERE batch_id = ?",
            (batch_id, now(), token),
        )


def drop_intent(store: Store, token: str) -> None:
    """An intent the vendor never received: the next submission starts afresh."""
    with store.transaction() as conn:
        conn.execute("DELETE FROM provider_batches WHERE batch_id = ?", (token,))


def intent_created(store: Store, token: str) -> datetime:
    [row] = store.query("SELECT created_at FROM provider_batches WHERE batch_id = ?", (token,))
    return datetime.fromisoformat(row["created_at"])


def batch_ids(store: Store) -> set[str]:
    """Every batch id stored (intents' tokens included)."""
    return {r[0] for r in store.query("SELECT batch_id FROM provider_batches")}


def mark_imported(store: Store, batch_id: str, vendor_status: str) -> None:
    """After the results are stored: the next run submits anew for whatever is still missing."""
    with store.transaction() as conn:
        conn.execute(
            "UPDATE provider_batches SET status = 'imported', vendor_status = ?, updated_at = ? "
            "WHERE batch_id = ?",
            (vendor_status, now(), batch_id),
        )
