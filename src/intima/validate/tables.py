"""The validation tables: the reference label of each imported response, and every report."""

from __future__ import annotations

from intima.store.schema import Migration

# Append-only: never edit or reorder an applied migration; add a new one at the end.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        name="validate_0001_labels",
        sql="""
        CREATE TABLE validation_labels (
            response_id TEXT PRIMARY KEY REFERENCES responses(response_id),
            set_sha256 TEXT NOT NULL,
            row_id TEXT NOT NULL,
            label TEXT NOT NULL CHECK (label IN ('reinforcing', 'boundary', 'neutral')),
            groups_json TEXT NOT NULL
        );
        CREATE INDEX validation_labels_by_set ON validation_labels(set_sha256);
        CREATE TABLE validation_reports (
            set_sha256 TEXT NOT NULL,
            set_name TEXT NOT NULL,
            scorer TEXT NOT NULL,
            scorer_version TEXT NOT NULL,
            by_columns TEXT NOT NULL,
            n INTEGER NOT NULL,
            report_json TEXT NOT NULL,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (set_sha256, scorer, scorer_version, by_columns)
        );
        """,
    ),
)
