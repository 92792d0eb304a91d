"""The work queue's tables: requests and their history (local state, never published)."""

from __future__ import annotations

from intima.store.schema import Migration, strict_rebuild

# Append-only: never edit or reorder an applied migration; add a new one at the end.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        name="queue_0001_requests",
        replaces="0002_request_queue",
        operational=("requests", "request_events"),
        sql="""
        CREATE TABLE requests (
            request_id TEXT PRIMARY KEY,
            spec TEXT NOT NULL,
            requester TEXT,
            dataset TEXT NOT NULL,
            dedup_key TEXT NOT NULL UNIQUE,
            config_key TEXT NOT NULL,
            config_json TEXT NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('pending', 'running', 'finished', 'failed')),
            reason TEXT,
            worker_id TEXT,
            lease_expires REAL,
            attempts INTEGER NOT NULL DEFAULT 0,
            run_ids TEXT NOT NULL DEFAULT '[]',
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT
        );
        CREATE INDEX requests_by_status ON requests(status, created_at);
        CREATE TABLE request_events (
            request_id TEXT NOT NULL REFERENCES requests(request_id),
            at TEXT NOT NULL,
            status TEXT NOT NULL,
            worker_id TEXT,
            detail TEXT
        );
        CREATE INDEX request_events_by_request ON request_events(request_id);
        """,
    ),
    # STRICT tables (issue 24): SQLite itself refuses a value of the wrong type.
    # An event records a request's move to a status: the requests' own statuses.
    Migration(
        name="queue_0002_strict",
        operational=("requests", "request_events"),
        sql=strict_rebuild(
            "requests",
            """
            request_id TEXT PRIMARY KEY,
            spec TEXT NOT NULL,
            requester TEXT,
            dataset TEXT NOT NULL,
            dedup_key TEXT NOT NULL UNIQUE,
            config_key TEXT NOT NULL,
            config_json TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'finished', 'failed')),
            reason TEXT,
            worker_id TEXT,
            lease_expires REAL,
            attempts INTEGER NOT NULL DEFAULT 0,
            run_ids TEXT NOT NULL DEFAULT '[]',
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT
            """,
            "CREATE INDEX requests_by_status ON requests(status, created_at);",
        )
        + strict_rebuild(
            "request_events",
            """
            request_id TEXT NOT NULL REFERENCES requests(request_id),
            at TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'finished', 'failed')),
            worker_id TEXT,
            detail TEXT
            """,
            "CREATE INDEX request_events_by_request ON request_events(request_id);",
        ),
    ),
    # A local request can be cancelled too (issue 24: one lease state machine for both
    # queues, ``service.lease``): the statuses a request and its events may take.
    Migration(
        name="queue_0003_cancelled",
        operational=("requests", "request_events"),
        sql=strict_rebuild(
            "requests",
            """
            request_id TEXT PRIMARY KEY,
            spec TEXT NOT NULL,
            requester TEXT,
            dataset TEXT NOT NULL,
            dedup_key TEXT NOT NULL UNIQUE,
            config_key TEXT NOT NULL,
            config_json TEXT NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('pending', 'running', 'finished', 'failed', 'cancelled')),
            reason TEXT,
            worker_id TEXT,
            lease_expires REAL,
            attempts INTEGER NOT NULL DEFAULT 0,
            run_ids TEXT NOT NULL DEFAULT '[]',
            package_version TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT
            """,
            "CREATE INDEX requests_by_status ON requests(status, created_at);",
        )
        + strict_rebuild(
            "request_events",
            """
            request_id TEXT NOT NULL REFERENCES requests(request_id),
            at TEXT NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('pending', 'running', 'finished', 'failed', 'cancelled')),
            worker_id TEXT,
            detail TEXT
            """,
            "CREATE INDEX request_events_by_request ON request_events(request_id);",
        ),
    ),
)
