"""The results store: one SQLite file (WAL), one write path, append-only migrations.

Every write goes through :meth:`Store.transaction`, which takes SQLite's write lock up front
(``BEGIN IMMEDIATE``) so that several intima processes can share one store safely.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from intima import __version__
from intima.dataset import DatasetInfo, Prompt
from intima.errors import StoreError

DEFAULT_STORE = Path("intima.db")
BUSY_TIMEOUT_MS = 60_000

# Append-only: never edit or reorder an applied migration; add a new one at the end.
MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_core",
        """
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
    (
        "0002_request_queue",
        """
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
    (
        "0002_judgments",
        """
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
    (
        "affect_0001_scores",
        """
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
    (
        "reliability_0001_response_claims",
        """
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
    (
        "reliability_0002_judgment_claims",
        """
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
    # --- end of migrations ---
]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def response_id_for(config_key: str, prompt_id: str) -> str:
    return hashlib.sha256(f"{config_key}\x00{prompt_id}".encode()).hexdigest()[:32]


class RunRecord(BaseModel):
    run_id: str
    label: str
    model_spec: str
    provider: str
    model_name: str
    config_key: str
    config_json: str
    dataset: DatasetInfo
    dataset_fingerprint: str
    n_prompts: int
    package_version: str = __version__
    status: str = "running"


class ResponseRecord(BaseModel):
    response_id: str
    config_key: str
    prompt_id: str
    status: Literal["ok", "error"]
    text: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    attempts: int = 1
    error: str | None = None
    served_by: str | None = None


class Store:
    """A handle on one store file. Not shared across threads: open one per process/thread."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    @classmethod
    def open(cls, path: Path | str = DEFAULT_STORE) -> Store:
        path = Path(path)
        if path.parent and not path.parent.exists():
            raise StoreError(f"store folder {path.parent} does not exist")
        try:
            conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable across process crashes in WAL mode; only power loss can undo
            # the last commits, and those are re-done by the next run.
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path}: not an intima store or unreadable ({exc})") from exc
        store = cls(path, conn)
        store._migrate()
        return store

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the one write path -------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All writes happen inside this; a crash mid-way leaves nothing half-written."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        else:
            self._conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        return self._conn.execute(sql, params).fetchall()

    # -- migrations -----------------------------------------------------------------------
    def _migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
            )
            applied = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
            known = {name for name, _ in MIGRATIONS}
            if unknown := applied - known:
                raise StoreError(
                    f"{self.path} was written by a newer intima (migrations {sorted(unknown)}); "
                    "upgrade intima to read it"
                )
            for name, sql in MIGRATIONS:
                if name in applied:
                    continue
                for statement in _statements(sql):
                    conn.execute(statement)
                conn.execute("INSERT INTO _migrations VALUES (?, ?)", (name, now()))

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM _migrations ORDER BY rowid")]

    # -- runs -------------------------------------------------------------------------------
    def ensure_run(self, run: RunRecord, prompts: Sequence[Prompt]) -> None:
        """Create the run and its prompt list if new; an existing run is left as it is."""
        stamp = now()
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO runs VALUES "
                "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run.run_id, run.label, run.model_spec, run.provider, run.model_name,
                    run.config_key, run.config_json, run.dataset.dataset_id, run.dataset.source,
                    run.dataset.revision, run.dataset.sha256, run.dataset_fingerprint,
                    run.n_prompts, run.package_version, stamp, stamp, run.status,
                ),
            )  # fmt: skip
            conn.executemany(
                "INSERT OR IGNORE INTO prompts VALUES (?,?,?,?,?)",
                [(p.prompt_id, p.text, p.code, str(p.dimension), p.source_model) for p in prompts],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO run_prompts VALUES (?,?,?)",
                [(run.run_id, p.prompt_id, i) for i, p in enumerate(prompts)],
            )

    def set_run_status(self, run_id: str, status: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?",
                (status, now(), run_id),
            )

    def missing_prompt_ids(self, run_id: str, config_key: str) -> list[str]:
        """Prompts of the run without a successful response, in dataset order."""
        rows = self.query(
            """
            SELECT rp.prompt_id FROM run_prompts rp
            LEFT JOIN responses r
              ON r.prompt_id = rp.prompt_id AND r.config_key = ? AND r.status = 'ok'
            WHERE rp.run_id = ? AND r.response_id IS NULL
            ORDER BY rp.position
            """,
            (config_key, run_id),
        )
        return [r[0] for r in rows]

    # -- claims: each piece of work is requested by one process at a time --------------------
    def claim_responses(
        self, response_ids: Sequence[str], owner: str, lease_s: float
    ) -> list[ClaimState]:
        """Claim responses to request; each is claimed, done (stored as ok), or busy."""
        return self._claim(_RESPONSE_CLAIMS, response_ids, owner, lease_s)

    def claim_judgments(
        self, judgment_ids: Sequence[str], owner: str, lease_s: float
    ) -> list[ClaimState]:
        """Claim judgments to request; each is claimed, done (stored as scored), or busy."""
        return self._claim(_JUDGMENT_CLAIMS, judgment_ids, owner, lease_s)

    def release_claims(self, owner: str) -> None:
        """Drop this owner's claims, and any claim on finished work (a killed process's)."""
        with self.transaction() as conn:
            for kind in (_RESPONSE_CLAIMS, _JUDGMENT_CLAIMS):
                conn.execute(f"DELETE FROM {kind.table} WHERE owner = ?", (owner,))
                conn.execute(f"DELETE FROM {kind.table} WHERE {kind.key} IN ({kind.finished})")

    def _claim(
        self, kind: _ClaimKind, keys: Sequence[str], owner: str, lease_s: float
    ) -> list[ClaimState]:
        """Claim several pieces of work in one transaction; each is claimed, done, or busy.

        Work is *done* once stored for good, *busy* while another owner's claim is live.
        A claim is live while its lease lasts and, on this host, while its process is alive:
        a process killed with SIGKILL leaves claims that the next one takes over at once.
        """
        states: list[ClaimState] = []
        expires = time.time() + lease_s
        done_sql = f"SELECT 1 FROM ({kind.finished}) AS f WHERE f.{kind.key} = ?"
        with self.transaction() as conn:
            for key in keys:
                if conn.execute(done_sql, (key,)).fetchone():
                    states.append("done")
                    continue
                row = conn.execute(
                    f"SELECT owner, host, pid, expires FROM {kind.table} WHERE {kind.key} = ?",
                    (key,),
                ).fetchone()
                if row is not None and row["owner"] != owner and _claim_live(row):
                    states.append("busy")
                    continue
                conn.execute(
                    f"INSERT OR REPLACE INTO {kind.table} VALUES (?,?,?,?,?)",
                    (key, owner, _HOST, os.getpid(), expires),
                )
                states.append("claimed")
        return states

    # -- responses -------------------------------------------------------------------------
    def record_responses(self, records: Sequence[ResponseRecord]) -> None:
        """Insert responses; an error row may be replaced by a later success, never the reverse."""
        if not records:
            return
        stamp = now()
        with self.transaction() as conn:
            conn.executemany(
                """
                INSERT INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
                ON CONFLICT(response_id) DO UPDATE SET
                    status=excluded.status, text=excluded.text,
                    finish_reason=excluded.finish_reason, prompt_tokens=excluded.prompt_tokens,
                    completion_tokens=excluded.completion_tokens, latency_s=excluded.latency_s,
                    cost_usd=excluded.cost_usd, attempts=responses.attempts + excluded.attempts,
                    error=excluded.error, served_by=excluded.served_by,
                    package_version=excluded.package_version, created_at=excluded.created_at
                WHERE responses.status != 'ok'
                """,
                [
                    (
                        r.response_id, r.config_key, r.prompt_id, r.status, r.text,
                        r.finish_reason, r.prompt_tokens, r.completion_tokens, r.latency_s,
                        r.cost_usd, r.attempts, r.error, r.served_by, __version__, stamp,
                    )
                    for r in records
                ],
            )  # fmt: skip

    def run_summaries(self) -> list[dict[str, Any]]:
        rows = self.query(
            """
            SELECT ru.run_id, ru.label, ru.model_spec, ru.dataset_id, ru.n_prompts, ru.status,
                   ru.created_at, ru.updated_at,
                   COUNT(CASE WHEN r.status = 'ok' THEN 1 END) AS n_ok,
                   COUNT(CASE WHEN r.status = 'error' THEN 1 END) AS n_error,
                   COALESCE(SUM(r.prompt_tokens), 0) AS prompt_tokens,
                   COALESCE(SUM(r.completion_tokens), 0) AS completion_tokens,
                   SUM(r.cost_usd) AS cost_usd
            FROM runs ru
            LEFT JOIN run_prompts rp ON rp.run_id = ru.run_id
            LEFT JOIN responses r
              ON r.prompt_id = rp.prompt_id AND r.config_key = ru.config_key
            GROUP BY ru.run_id ORDER BY ru.created_at
            """
        )
        return [dict(r) for r in rows]

    def run(self, run_id: str) -> sqlite3.Row:
        rows = self.query("SELECT * FROM runs WHERE run_id = ? OR label = ?", (run_id, run_id))
        if not rows:
            rows = self.query("SELECT * FROM runs WHERE run_id LIKE ?", (run_id + "%",))
        if len(rows) != 1:
            what = "no run" if not rows else f"{len(rows)} runs"
            raise StoreError(f"{what} matching {run_id!r} in {self.path}; see `intima runs`")
        return rows[0]

    def resolve_runs(self, run_ids: Sequence[str] | None) -> list[str]:
        """Full run ids for the given ids, prefixes or labels; every run when None."""
        if run_ids is None:
            return [r[0] for r in self.query("SELECT run_id FROM runs ORDER BY created_at, run_id")]
        return [self.run(r)["run_id"] for r in run_ids]

    def ok_responses(self, run_ids: Sequence[str] | None) -> list[dict[str, Any]]:
        """:meth:`run_rows` of successful responses, once each (runs may share a response)."""
        seen: set[str] = set()
        out = []
        for run_id in self.resolve_runs(run_ids):
            for row in self.run_rows(run_id):
                if row["status"] == "ok" and row["response"] is not None:
                    if row["response_id"] not in seen:
                        seen.add(row["response_id"])
                        out.append(row)
        return out

    def run_rows(self, run_id: str) -> list[dict[str, Any]]:
        """Every prompt of a run with its response (if any), joined with run provenance."""
        rows = self.query(
            """
            SELECT ru.run_id, ru.label, ru.model_spec, ru.provider, ru.model_name,
                   ru.config_key, ru.config_json, ru.dataset_id, ru.dataset_revision,
                   ru.dataset_sha256,
                   p.prompt_id, p.code, p.dimension, p.source_model, p.text AS prompt,
                   r.response_id, r.status, r.text AS response, r.finish_reason,
                   r.prompt_tokens, r.completion_tokens, r.latency_s, r.cost_usd, r.attempts,
                   r.error, r.package_version, r.created_at
            FROM runs ru
            JOIN run_prompts rp ON rp.run_id = ru.run_id
            JOIN prompts p ON p.prompt_id = rp.prompt_id
            LEFT JOIN responses r ON r.prompt_id = rp.prompt_id AND r.config_key = ru.config_key
            WHERE ru.run_id = ?
            ORDER BY rp.position
            """,
            (run_id,),
        )
        out = []
        for row in rows:
            d = dict(row)
            d["config"] = json.loads(d.pop("config_json"))
            out.append(d)
        return out


_HOST = socket.gethostname()

ClaimState = Literal["claimed", "done", "busy"]


class _ClaimKind(BaseModel):
    """A claims table, and the query listing the keys whose work is stored for good."""

    table: str
    key: str
    finished: str


_RESPONSE_CLAIMS = _ClaimKind(
    table="response_claims",
    key="response_id",
    finished="SELECT response_id FROM responses WHERE status = 'ok'",
)
_JUDGMENT_CLAIMS = _ClaimKind(
    table="judgment_claims",
    key="judgment_id",
    finished="SELECT judgment_id FROM judgments WHERE status = 'scored'",
)


def claim_owner() -> str:
    """A fresh owner id for one run of one process."""
    return f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _claim_live(row: sqlite3.Row) -> bool:
    if row["expires"] <= time.time():
        return False
    return row["host"] != _HOST or _pid_alive(int(row["pid"]))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def _statements(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip()]
