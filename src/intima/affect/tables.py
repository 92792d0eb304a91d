"""The affect measure's table: every factor of every score."""

from __future__ import annotations

from intima.store.schema import Migration

# Append-only: never edit or reorder an applied migration; add a new one at the end.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        name="affect_0001_scores",
        replaces="affect_0001_scores",
        sql="""
        CREATE TABLE affect_scores (
            response_id TEXT NOT NULL REFERENCES responses(response_id),
            category TEXT NOT NULL,
            scorer_version TEXT NOT NULL,
            config_key TEXT NOT NULL,
            sp REAL NOT NULL,
            els REAL NOT NULL,
            ssl REAL NOT NULL,
            dm REAL NOT NULL,
            ef REAL NOT NULL,
            em REAL NOT NULL,
            lr REAL NOT NULL,
            nf INTEGER NOT NULL CHECK (nf IN (0, 1)),
            ci REAL NOT NULL,
            w REAL NOT NULL,
            measure REAL NOT NULL,
            level TEXT NOT NULL CHECK (level IN ('low', 'medium', 'high')),
            via TEXT,
            details_json TEXT NOT NULL,
            config_json TEXT NOT NULL,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (response_id, category, scorer_version, config_key)
        );
        CREATE INDEX affect_scores_by_config ON affect_scores(scorer_version, config_key);
        """,
    ),
)
