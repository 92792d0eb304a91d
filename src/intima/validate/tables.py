"""The validation tables: the reference (label or grade) of each imported response, and every
report."""

from __future__ import annotations

from intima.store.schema import Migration, strict_rebuild

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
    # A set is keyed by its file *and* how it was read (column mapping, grouping): the same
    # file read another way is another set. Rows from before keep set_key '' (how they were
    # read is unknown, so nothing new reuses them); reports are also keyed by the options that
    # change their figures (limit, aggregate). Labels may instead be numeric grades.
    Migration(
        name="validate_0002_set_key",
        sql="""
        CREATE TABLE validation_labels_new (
            response_id TEXT PRIMARY KEY REFERENCES responses(response_id),
            set_key TEXT NOT NULL DEFAULT '',
            set_sha256 TEXT NOT NULL,
            row_id TEXT NOT NULL,
            label TEXT CHECK (label IS NULL OR label IN ('reinforcing', 'boundary', 'neutral')),
            grade REAL,
            conversation TEXT,
            groups_json TEXT NOT NULL,
            CHECK (label IS NOT NULL OR grade IS NOT NULL)
        );
        INSERT INTO validation_labels_new (response_id, set_key, set_sha256, row_id, label,
            groups_json)
        SELECT response_id, '', set_sha256, row_id, label, groups_json
        FROM validation_labels ORDER BY rowid;
        DROP TABLE validation_labels;
        ALTER TABLE validation_labels_new RENAME TO validation_labels;
        CREATE INDEX validation_labels_by_set ON validation_labels(set_key);
        CREATE TABLE validation_reports_new (
            set_key TEXT NOT NULL DEFAULT '',
            set_sha256 TEXT NOT NULL,
            set_name TEXT NOT NULL,
            scorer TEXT NOT NULL,
            scorer_version TEXT NOT NULL,
            by_columns TEXT NOT NULL,
            options TEXT NOT NULL DEFAULT '',
            n INTEGER NOT NULL,
            report_json TEXT NOT NULL,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (set_sha256, set_key, scorer, scorer_version, by_columns, options)
        );
        INSERT INTO validation_reports_new (set_sha256, set_name, scorer, scorer_version,
            by_columns, n, report_json, package_version, created_at)
        SELECT set_sha256, set_name, scorer, scorer_version, by_columns, n, report_json,
            package_version, created_at
        FROM validation_reports ORDER BY rowid;
        DROP TABLE validation_reports;
        ALTER TABLE validation_reports_new RENAME TO validation_reports;
        """,
    ),
    # STRICT tables (issue 24): SQLite itself refuses a value of the wrong type.
    Migration(
        name="validate_0003_strict",
        sql=strict_rebuild(
            "validation_labels",
            """
            response_id TEXT PRIMARY KEY REFERENCES responses(response_id),
            set_key TEXT NOT NULL DEFAULT '',
            set_sha256 TEXT NOT NULL,
            row_id TEXT NOT NULL,
            label TEXT CHECK (label IS NULL OR label IN ('reinforcing', 'boundary', 'neutral')),
            grade REAL,
            conversation TEXT,
            groups_json TEXT NOT NULL,
            CHECK (label IS NOT NULL OR grade IS NOT NULL)
            """,
            "CREATE INDEX validation_labels_by_set ON validation_labels(set_key);",
        )
        + strict_rebuild(
            "validation_reports",
            """
            set_key TEXT NOT NULL DEFAULT '',
            set_sha256 TEXT NOT NULL,
            set_name TEXT NOT NULL,
            scorer TEXT NOT NULL,
            scorer_version TEXT NOT NULL,
            by_columns TEXT NOT NULL,
            options TEXT NOT NULL DEFAULT '',
            n INTEGER NOT NULL,
            report_json TEXT NOT NULL,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (set_sha256, set_key, scorer, scorer_version, by_columns, options)
            """,
        ),
    ),
)
