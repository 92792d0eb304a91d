"""The conversation tables: which runs are conversations, which prompt row holds each assistant
turn, the simulated user's messages, and the claims that share conversations between processes.

Assistant turns themselves are ordinary ``prompts`` / ``run_prompts`` / ``responses`` rows, so
judging, scoring, exports and bundles carry them unchanged; these tables only add what a
conversation needs on top.
"""

from __future__ import annotations

from intima.store.schema import Migration, strict_rebuild

# Append-only: never edit or reorder an applied migration; add a new one at the end.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        name="converse_0001_conversations",
        sql="""
        CREATE TABLE conversation_runs (
            run_id TEXT PRIMARY KEY REFERENCES runs(run_id),
            turns INTEGER NOT NULL CHECK (turns >= 1),
            user_config_key TEXT NOT NULL,
            user_config_json TEXT NOT NULL,
            simulator_prompt_version TEXT NOT NULL,
            simulator_prompt_sha256 TEXT NOT NULL,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE conversation_turns (
            run_id TEXT NOT NULL REFERENCES conversation_runs(run_id),
            conversation_id TEXT NOT NULL,
            turn INTEGER NOT NULL CHECK (turn >= 1),
            prompt_id TEXT NOT NULL REFERENCES prompts(prompt_id),
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, conversation_id, turn)
        );
        CREATE TABLE simulated_user_messages (
            run_id TEXT NOT NULL REFERENCES conversation_runs(run_id),
            conversation_id TEXT NOT NULL,
            after_turn INTEGER NOT NULL CHECK (after_turn >= 1),
            text TEXT,
            status TEXT NOT NULL
                CHECK (status IN ('ok', 'broke_character', 'empty', 'error')),
            attempts INTEGER NOT NULL,
            error TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            latency_s REAL,
            served_by TEXT,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, conversation_id, after_turn)
        );
        """,
    ),
    Migration(
        name="converse_0002_conversation_claims",
        operational=("conversation_claims",),
        sql="""
        CREATE TABLE conversation_claims (
            conversation_key TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            expires REAL NOT NULL
        );
        CREATE INDEX conversation_claims_by_owner ON conversation_claims(owner);
        """,
    ),
    # STRICT tables (issue 24): SQLite itself refuses a value of the wrong type.
    Migration(
        name="converse_0003_strict",
        sql=strict_rebuild(
            "conversation_runs",
            """
            run_id TEXT PRIMARY KEY REFERENCES runs(run_id),
            turns INTEGER NOT NULL CHECK (turns >= 1),
            user_config_key TEXT NOT NULL,
            user_config_json TEXT NOT NULL,
            simulator_prompt_version TEXT NOT NULL,
            simulator_prompt_sha256 TEXT NOT NULL,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL
            """,
        )
        + strict_rebuild(
            "conversation_turns",
            """
            run_id TEXT NOT NULL REFERENCES conversation_runs(run_id),
            conversation_id TEXT NOT NULL,
            turn INTEGER NOT NULL CHECK (turn >= 1),
            prompt_id TEXT NOT NULL REFERENCES prompts(prompt_id),
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, conversation_id, turn)
            """,
        )
        + strict_rebuild(
            "simulated_user_messages",
            """
            run_id TEXT NOT NULL REFERENCES conversation_runs(run_id),
            conversation_id TEXT NOT NULL,
            after_turn INTEGER NOT NULL CHECK (after_turn >= 1),
            text TEXT,
            status TEXT NOT NULL CHECK (status IN ('ok', 'broke_character', 'empty', 'error')),
            attempts INTEGER NOT NULL,
            error TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            latency_s REAL,
            served_by TEXT,
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, conversation_id, after_turn)
            """,
        )
        + strict_rebuild(
            "conversation_claims",
            """
            conversation_key TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            expires REAL NOT NULL
            """,
            "CREATE INDEX conversation_claims_by_owner ON conversation_claims(owner);",
        ),
        operational=("conversation_claims",),
    ),
    # Issue 38: where a simulated user's token counts came from (the vendor, a count, or the
    # worst case of a reply without usage; intima.generate.usage). NULL: stored before.
    Migration(
        name="converse_0004_user_message_usage_source",
        sql="ALTER TABLE simulated_user_messages ADD COLUMN usage_source TEXT "
        "CHECK (usage_source IN ('reported', 'counted', 'worst case'))",
    ),
)
