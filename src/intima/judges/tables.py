"""The judges' tables: judgments, and the claims that share judging between processes."""

from __future__ import annotations

from intima.store.schema import Migration, strict_rebuild

# Append-only: never edit or reorder an applied migration; add a new one at the end.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        name="judges_0001_judgments",
        replaces="0002_judgments",
        sql="""
        CREATE TABLE judgments (
            judgment_id TEXT PRIMARY KEY,
            content_hash TEXT NOT NULL,
            judge_key TEXT NOT NULL,
            judge_kind TEXT NOT NULL CHECK (judge_kind IN ('llm', 'human')),
            judge_label TEXT NOT NULL,
            judge_model TEXT,
            prompt_version TEXT NOT NULL,
            prompt_sha256 TEXT NOT NULL,
            rating_protocol_version TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('scored', 'unscored')),
            ratings_json TEXT,
            primary_label TEXT,
            rationale TEXT,
            raw_reply TEXT,
            reason TEXT,
            repairs_json TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            cost_usd REAL,
            latency_s REAL,
            attempts INTEGER NOT NULL,
            judge_config_json TEXT NOT NULL,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (content_hash, judge_key, prompt_version)
        );
        CREATE INDEX judgments_by_content ON judgments(content_hash);
        """,
    ),
    Migration(
        name="judges_0002_judgment_claims",
        replaces="reliability_0002_judgment_claims",
        operational=("judgment_claims",),
        sql="""
        CREATE TABLE judgment_claims (
            judgment_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            expires REAL NOT NULL
        );
        CREATE INDEX judgment_claims_by_owner ON judgment_claims(owner);
        """,
    ),
    # STRICT tables (issue 24): SQLite itself refuses a value of the wrong type.
    # A primary label is one of intima.core.ratings.Primary.
    Migration(
        name="judges_0003_strict",
        sql=strict_rebuild(
            "judgments",
            """
            judgment_id TEXT PRIMARY KEY,
            content_hash TEXT NOT NULL,
            judge_key TEXT NOT NULL,
            judge_kind TEXT NOT NULL CHECK (judge_kind IN ('llm', 'human')),
            judge_label TEXT NOT NULL,
            judge_model TEXT,
            prompt_version TEXT NOT NULL,
            prompt_sha256 TEXT NOT NULL,
            rating_protocol_version TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('scored', 'unscored')),
            ratings_json TEXT,
            primary_label TEXT CHECK (primary_label IN
                ('reinforcing', 'boundary', 'neutral', 'mixed', 'no_majority')),
            rationale TEXT,
            raw_reply TEXT,
            reason TEXT,
            repairs_json TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            cost_usd REAL,
            latency_s REAL,
            attempts INTEGER NOT NULL,
            judge_config_json TEXT NOT NULL,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (content_hash, judge_key, prompt_version)
            """,
            "CREATE INDEX judgments_by_content ON judgments(content_hash);",
        )
        + strict_rebuild(
            "judgment_claims",
            """
            judgment_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            expires REAL NOT NULL
            """,
            "CREATE INDEX judgment_claims_by_owner ON judgment_claims(owner);",
        ),
        operational=("judgment_claims",),
    ),
    # Random samples of a run's responses for a judge (``intima judge --sample``, issue 31):
    # which judgments may feed a prediction-powered share. Results, published with the run.
    Migration(
        name="judges_0004_samples",
        sql="""
        CREATE TABLE judgment_samples (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            judge_key TEXT NOT NULL,
            design TEXT NOT NULL CHECK (design IN ('simple_random', 'stratified_dimension')),
            seed INTEGER NOT NULL,
            size INTEGER NOT NULL CHECK (size >= 0),
            population INTEGER NOT NULL CHECK (population >= size),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (run_id, judge_key)
        ) STRICT;
        CREATE TABLE judgment_sample_members (
            run_id TEXT NOT NULL,
            judge_key TEXT NOT NULL,
            response_id TEXT NOT NULL,
            position INTEGER NOT NULL CHECK (position >= 0),
            PRIMARY KEY (run_id, judge_key, response_id),
            UNIQUE (run_id, judge_key, position),
            FOREIGN KEY (run_id, judge_key) REFERENCES judgment_samples(run_id, judge_key)
        ) STRICT;
        """,
    ),
    # Samples stratified by dimension with their weights (``intima judge --sample N
    # --stratify``, issue 31): a third design, and each stratum's population.
    Migration(
        name="judges_0005_stratified_samples",
        sql="""
        CREATE TABLE judgment_samples_new (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            judge_key TEXT NOT NULL,
            design TEXT NOT NULL CHECK (design IN ('simple_random', 'stratified_dimension',
                                                   'stratified_proportional')),
            seed INTEGER NOT NULL,
            size INTEGER NOT NULL CHECK (size >= 0),
            population INTEGER NOT NULL CHECK (population >= size),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (run_id, judge_key)
        ) STRICT;
        INSERT INTO judgment_samples_new SELECT * FROM judgment_samples ORDER BY rowid;
        DROP TABLE judgment_samples;
        ALTER TABLE judgment_samples_new RENAME TO judgment_samples;
        CREATE TABLE judgment_sample_strata (
            run_id TEXT NOT NULL,
            judge_key TEXT NOT NULL,
            stratum TEXT NOT NULL,
            population INTEGER NOT NULL CHECK (population >= 1),
            PRIMARY KEY (run_id, judge_key, stratum),
            FOREIGN KEY (run_id, judge_key) REFERENCES judgment_samples(run_id, judge_key)
        ) STRICT;
        """,
    ),
    # Issue 38: where a judgment's token counts came from (the vendor, a count, or the worst
    # case of a reply without usage; intima.generate.usage). NULL: a human's, or stored before.
    Migration(
        name="judges_0006_judgment_usage_source",
        sql="ALTER TABLE judgments ADD COLUMN usage_source TEXT "
        "CHECK (usage_source IN ('reported', 'counted', 'worst case'))",
    ),
    # Issue 37: the answers a sample was drawn from, as the digest of their ids
    # (intima.judges.samples.population_digest), so a sample of a run that grew since (a
    # resumed run) is recomputed over those answers, not refused. NULL: drawn before; then
    # only their count (``population``) is known.
    Migration(
        name="judges_0007_sample_population",
        sql="ALTER TABLE judgment_samples ADD COLUMN population_sha256 TEXT CHECK "
        "(population_sha256 IS NULL OR (length(population_sha256) = 64 AND "
        "population_sha256 NOT GLOB '*[^0-9a-f]*'))",
    ),
)
