"""Generation's tables: the vendor batches submitted by ``--batch`` (local state, never
published), so that a killed command resumes polling the batch it submitted."""

from __future__ import annotations

from intima.store.schema import Migration, strict_rebuild

# Append-only: never edit or reorder an applied migration; add a new one at the end.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        name="generate_0001_provider_batches",
        operational=("provider_batches",),
        sql="""
        CREATE TABLE provider_batches (
            batch_id TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            purpose TEXT NOT NULL CHECK (purpose IN ('generate', 'judge')),
            scope TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('submitted', 'imported')),
            vendor_status TEXT,
            n_items INTEGER NOT NULL,
            items_json TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX provider_batches_open ON provider_batches(purpose, scope, status);
        """,
    ),
    # STRICT tables (issue 24): SQLite itself refuses a value of the wrong type.
    Migration(
        name="generate_0002_strict",
        operational=("provider_batches",),
        sql=strict_rebuild(
            "provider_batches",
            """
            batch_id TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            purpose TEXT NOT NULL CHECK (purpose IN ('generate', 'judge')),
            scope TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('submitted', 'imported')),
            vendor_status TEXT,
            n_items INTEGER NOT NULL,
            items_json TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
            """,
            "CREATE INDEX provider_batches_open ON provider_batches(purpose, scope, status);",
        ),
    ),
)
