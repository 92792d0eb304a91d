"""The affect measure's table: every factor of every score."""

from __future__ import annotations

from intima.store.schema import Migration, strict_rebuild

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
    # affect-2: NF is continuous in [0, 1]. SQLite cannot alter a CHECK, so rebuild the table;
    # rows of the earlier scorer version are kept as they were (nf 0 or 1 is in range).
    Migration(
        name="affect_0002_nf_real",
        sql="""
        CREATE TABLE affect_scores_new (
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
            nf REAL NOT NULL CHECK (nf >= 0 AND nf <= 1),
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
        INSERT INTO affect_scores_new SELECT
            response_id, category, scorer_version, config_key, sp, els, ssl, dm, ef, em, lr,
            CAST(nf AS REAL), ci, w, measure, level, via, details_json, config_json,
            package_version, created_at
        FROM affect_scores ORDER BY rowid;
        DROP TABLE affect_scores;
        ALTER TABLE affect_scores_new RENAME TO affect_scores;
        CREATE INDEX affect_scores_by_config ON affect_scores(scorer_version, config_key);
        """,
    ),
    # STRICT tables (issue 24): SQLite itself refuses a value of the wrong type.
    Migration(
        name="affect_0003_strict",
        sql=strict_rebuild(
            "affect_scores",
            """
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
            nf REAL NOT NULL CHECK (nf >= 0 AND nf <= 1),
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
            """,
            "CREATE INDEX affect_scores_by_config ON affect_scores(scorer_version, config_key);",
        ),
    ),
)
