"""The core tables: runs, their prompts and responses, and response claims."""

from __future__ import annotations

from intima.store.schema import Migration, strict_rebuild

_RUN_STATUSES = "'running', 'complete', 'incomplete', 'interrupted', 'failed', 'stopped (max cost)'"

# Append-only: never edit or reorder an applied migration; add a new one at the end.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        name="core_0001_runs",
        replaces="0001_core",
        sql="""
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            label TEXT NOT NULL,
            model_spec TEXT NOT NULL,
            provider TEXT NOT NULL,
            model_name TEXT NOT NULL,
            config_key TEXT NOT NULL,
            config_json TEXT NOT NULL,
            dataset_id TEXT NOT NULL,
            dataset_source TEXT NOT NULL,
            dataset_revision TEXT,
            dataset_sha256 TEXT NOT NULL,
            dataset_fingerprint TEXT NOT NULL,
            n_prompts INTEGER NOT NULL,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            status TEXT NOT NULL
        );
        CREATE TABLE prompts (
            prompt_id TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            code TEXT NOT NULL,
            dimension TEXT NOT NULL,
            source_model TEXT
        );
        CREATE TABLE run_prompts (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            prompt_id TEXT NOT NULL REFERENCES prompts(prompt_id),
            position INTEGER NOT NULL,
            PRIMARY KEY (run_id, prompt_id)
        );
        CREATE TABLE responses (
            response_id TEXT PRIMARY KEY,
            config_key TEXT NOT NULL,
            prompt_id TEXT NOT NULL REFERENCES prompts(prompt_id),
            status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
            text TEXT,
            finish_reason TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            latency_s REAL,
            cost_usd REAL,
            attempts INTEGER NOT NULL,
            error TEXT,
            served_by TEXT,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (config_key, prompt_id)
        );
        CREATE INDEX responses_by_prompt ON responses(prompt_id);
        """,
    ),
    Migration(
        name="core_0002_response_claims",
        replaces="reliability_0001_response_claims",
        operational=("response_claims",),
        sql="""
        CREATE TABLE response_claims (
            response_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            expires REAL NOT NULL
        );
        CREATE INDEX response_claims_by_owner ON response_claims(owner);
        """,
    ),
    Migration(
        name="core_0003_run_status_check",
        # SQLite cannot add a CHECK to an existing table; triggers give the same guarantee.
        sql="""
        CREATE TRIGGER runs_status_insert BEFORE INSERT ON runs
        WHEN NEW.status NOT IN ('running', 'complete', 'incomplete', 'interrupted', 'failed',
                                'stopped (max cost)')
        BEGIN SELECT RAISE(ABORT, 'runs.status: not a run status'); END;
        CREATE TRIGGER runs_status_update BEFORE UPDATE OF status ON runs
        WHEN NEW.status NOT IN ('running', 'complete', 'incomplete', 'interrupted', 'failed',
                                'stopped (max cost)')
        BEGIN SELECT RAISE(ABORT, 'runs.status: not a run status'); END;
        """,
    ),
    Migration(
        name="core_0004_prompt_context",
        # A prompt may be the last user turn of a conversation: the earlier turns, as JSON.
        sql="ALTER TABLE prompts ADD COLUMN context_json TEXT",
    ),
    # STRICT tables (issue 24): SQLite itself refuses a value of the wrong type ('lots' in an
    # INTEGER column) and a run status outside the list (a CHECK replaces the triggers).
    Migration(
        name="core_0005_strict",
        sql=strict_rebuild(
            "runs",
            f"""
            run_id TEXT PRIMARY KEY,
            label TEXT NOT NULL,
            model_spec TEXT NOT NULL,
            provider TEXT NOT NULL,
            model_name TEXT NOT NULL,
            config_key TEXT NOT NULL,
            config_json TEXT NOT NULL,
            dataset_id TEXT NOT NULL,
            dataset_source TEXT NOT NULL,
            dataset_revision TEXT,
            dataset_sha256 TEXT NOT NULL,
            dataset_fingerprint TEXT NOT NULL,
            n_prompts INTEGER NOT NULL,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            status TEXT NOT NULL,
            CONSTRAINT "runs.status: not a run status" CHECK (status IN ({_RUN_STATUSES}))
            """,
        )
        + strict_rebuild(
            "prompts",
            """
            prompt_id TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            code TEXT NOT NULL,
            dimension TEXT NOT NULL,
            source_model TEXT,
            context_json TEXT
            """,
        )
        + strict_rebuild(
            "run_prompts",
            """
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            prompt_id TEXT NOT NULL REFERENCES prompts(prompt_id),
            position INTEGER NOT NULL,
            PRIMARY KEY (run_id, prompt_id)
            """,
        )
        + strict_rebuild(
            "responses",
            """
            response_id TEXT PRIMARY KEY,
            config_key TEXT NOT NULL,
            prompt_id TEXT NOT NULL REFERENCES prompts(prompt_id),
            status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
            text TEXT,
            finish_reason TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            latency_s REAL,
            cost_usd REAL,
            attempts INTEGER NOT NULL,
            error TEXT,
            served_by TEXT,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (config_key, prompt_id)
            """,
            "CREATE INDEX responses_by_prompt ON responses(prompt_id);",
        )
        + strict_rebuild(
            "response_claims",
            """
            response_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            expires REAL NOT NULL
            """,
            "CREATE INDEX response_claims_by_owner ON response_claims(owner);",
        ),
    ),
    # Issue 33: a stored cost says which price table priced it (a file given with --prices, or
    # the default table with its date), so a cost is never a number without its source.
    Migration(
        name="core_0006_response_priced_by",
        sql="ALTER TABLE responses ADD COLUMN priced_by TEXT",
    ),
    # Issue 33: what each run's model is (its card, size, type, licence, date), read once from
    # the Hub for a Hub id or from the configuration otherwise (intima.providers.model_info).
    # Public facts about a public model: published with the run.
    Migration(
        name="core_0007_run_models",
        sql="""
        CREATE TABLE run_models (
            run_id TEXT PRIMARY KEY REFERENCES runs(run_id),
            source TEXT NOT NULL CHECK (source IN ('hub', 'config', 'unknown')),
            hub_id TEXT,
            parameters INTEGER,
            kind TEXT,
            license TEXT,
            model_date TEXT,
            detail TEXT,
            checked_at TEXT NOT NULL
        ) STRICT;
        """,
    ),
    # Issue 37: who published each imported row (a bundle's verified signer,
    # intima.bundles.signing), by the row's primary key; a row with none was made here.
    # Derived on import from the signature, never taken from a bundle's rows: operational.
    Migration(
        name="core_0008_publishers",
        sql="""
        CREATE TABLE publishers (
            fingerprint TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            public_key TEXT NOT NULL
        ) STRICT;
        CREATE TABLE row_publishers (
            table_name TEXT NOT NULL,
            row_key TEXT NOT NULL,
            publisher TEXT NOT NULL REFERENCES publishers(fingerprint),
            PRIMARY KEY (table_name, row_key, publisher)
        ) STRICT, WITHOUT ROWID;
        """,
        operational=("publishers", "row_publishers"),
    ),
    # Issue 38: a reply without ``usage`` is priced from a count or its worst case, never at
    # nothing; the row says which (see intima.generate.usage). NULL: no answer, or stored before.
    Migration(
        name="core_0009_response_usage_source",
        sql="ALTER TABLE responses ADD COLUMN usage_source TEXT "
        "CHECK (usage_source IN ('reported', 'counted', 'worst case'))",
    ),
    # Issue 40: how many prompts the whole dataset holds, beside the run's own n_prompts, so a
    # run of `--limit 40` reads as "40 of 368 prompts" wherever it is shown. NULL: a run stored
    # before this was recorded (the board then takes it from another run of the same dataset).
    Migration(
        name="core_0010_run_dataset_size",
        sql="ALTER TABLE runs ADD COLUMN dataset_size INTEGER CHECK (dataset_size > 0)",
    ),
)
