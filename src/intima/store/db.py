"""The results store: one SQLite file (WAL), one write path, append-only migrations.

Every write goes through :meth:`Store.transaction`, which takes SQLite's write lock up front
(``BEGIN IMMEDIATE``) so that several intima processes can share one store safely.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from intima.core.errors import StoreError
from intima.core.escape import quoted
from intima.core.ids import content_id
from intima.core.version import __version__
from intima.dataset.types import Prompt
from intima.store.access import (
    READ_ONLY_HINT,
    check_openable,
    is_write_failure,
    read_only_connections,
    unreadable,
    while_busy,
    writable,
    write_failed,
)
from intima.store.claims import JUDGMENT_CLAIMS, RESPONSE_CLAIMS, ClaimState, claim
from intima.store.introspect import ColumnInfo, primary_key, table_info
from intima.store.migrate import apply_pending
from intima.store.records import ResponseRecord, RunRecord, RunStatus, StoredResponse
from intima.store.schema import migrations

DEFAULT_STORE = Path("intima.db")
#: Dataset ids of runs that hold an external labelled set rather than benchmark answers.
VALIDATION_PREFIX = "validation:"
BUSY_TIMEOUT_MS = 60_000


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def response_id_for(config_key: str, prompt_id: str) -> str:
    return content_id(config_key, prompt_id, length=32)


class Store:
    """A handle on one store file. Not shared across threads: open one per process/thread."""

    def __init__(self, path: Path, conn: sqlite3.Connection, *, read_only: bool = False) -> None:
        self.path = path
        self._conn = conn
        #: opened read-only because its file or folder cannot be written (a read-only mount):
        #: reading works, and the first write says so in one line
        self.read_only = read_only

    @classmethod
    def open(cls, path: Path | str = DEFAULT_STORE, *, create: bool = True) -> Store:
        """Open (creating and migrating if needed) the store at ``path``. ``create=False`` is
        for commands that only read: a mistyped path or an empty file is refused instead of
        becoming a new, empty store. A file that is not an intima store (another application's
        database) is refused either way, unchanged.

        Several processes may open one new store at once: every step waits for SQLite's lock
        (a busy timeout, and a retry for the steps SQLite will not wait on), so a locked store
        is waited for and reported as busy, never as "not an intima store".
        """
        path = Path(path)
        check_openable(path, BUSY_TIMEOUT_MS / 1000, create=create)
        if not writable(path):
            return cls._open_read_only(path)
        return while_busy(path, BUSY_TIMEOUT_MS / 1000, lambda: cls._open_once(path))

    @classmethod
    def _open_read_only(cls, path: Path) -> Store:
        last: sqlite3.DatabaseError | None = None
        for conn in read_only_connections(path, BUSY_TIMEOUT_MS / 1000):
            try:
                conn.execute("PRAGMA query_only=ON")
                store = cls(path, conn, read_only=True)
                store._check_migrated()
                return store
            except sqlite3.DatabaseError as exc:
                conn.close()
                last = exc
            except BaseException:
                conn.close()
                raise
        assert last is not None
        raise unreadable(path, last) from last

    @classmethod
    def _open_once(cls, path: Path) -> Store:
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            # Switching to WAL takes an exclusive lock that SQLite may refuse at once (no busy
            # wait); open() retries. Once the file is in WAL mode this is a no-op.
            conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable across process crashes in WAL mode; only power loss can undo
            # the last commits, and those are re-done by the next run.
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            store = cls(path, conn)
            store._migrate()
        except BaseException:
            conn.close()
            raise
        return store

    def backup(self, dest: Path) -> None:
        """Copy the whole store, as it is now, to a new file at ``dest`` (SQLite's online
        backup: consistent while others write)."""
        with closing(sqlite3.connect(dest)) as target:
            self._conn.backup(target)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the one write path -------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All writes happen inside this; a crash mid-way leaves nothing half-written.

        A write the disk refuses (full, failing, read-only) is one :class:`StoreError` naming
        the store; what was committed before it is kept."""
        if self.read_only:
            raise StoreError(
                f"{self.path} is read-only and this command writes to it: {READ_ONLY_HINT}"
            )
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                # SQLite may already have rolled back (a full disk does); never mask the cause.
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if is_write_failure(exc):
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise write_failed(self.path, exc) from exc
            raise

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        return self._conn.execute(sql, params).fetchall()

    def columns(self, table: str) -> list[ColumnInfo]:
        return table_info(self._conn, table)

    def primary_key(self, table: str) -> list[str]:
        return primary_key(self._conn, table)

    # -- migrations -----------------------------------------------------------------------
    def _migrate(self) -> None:
        """Apply the subsystems' missing migrations, all in one immediate transaction; what is
        applied is read only after the lock is taken, so two processes never both apply one."""
        # A migration may rebuild a table that others refer to (CREATE, copy, DROP, RENAME):
        # with foreign keys on, DROP would first delete its rows and fail on the rows referring
        # to them. So they are off meanwhile (not settable in a transaction, hence here) and
        # apply_pending runs foreign_key_check before the commit instead.
        self._conn.execute("PRAGMA foreign_keys=OFF")
        try:
            with self.transaction() as conn:
                apply_pending(conn, self.path, now())
        finally:
            self._conn.execute("PRAGMA foreign_keys=ON")

    def _check_migrated(self) -> None:
        """A store opened read-only cannot be migrated: it must already be current."""
        applied = {r[0] for r in self.query("SELECT name FROM _migrations")}
        known = {step.name for step in migrations()}
        if unknown := applied - known:
            raise StoreError(
                f"{self.path} was written by a newer intima (migrations {sorted(unknown)}); "
                "upgrade intima to read it"
            )
        if missing := known - applied:
            raise StoreError(
                f"{self.path} is read-only and needs {len(missing)} schema upgrade(s) this "
                "intima would apply; open it once where it can be written"
            )

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM _migrations ORDER BY rowid")]

    # -- runs -------------------------------------------------------------------------------
    def ensure_run(self, run: RunRecord, prompts: Sequence[Prompt]) -> None:
        """Create the run and its prompt list if new; an existing run is left as it is."""
        stamp = now()
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO runs (run_id, label, model_spec, provider, model_name, "
                "config_key, config_json, dataset_id, dataset_source, dataset_revision, "
                "dataset_sha256, dataset_fingerprint, n_prompts, package_version, created_at, "
                "updated_at, status, dataset_size) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run.run_id,
                    run.label,
                    run.model_spec,
                    run.provider,
                    run.model_name,
                    run.config_key,
                    run.config_json,
                    run.dataset.dataset_id,
                    run.dataset.source,
                    run.dataset.revision,
                    run.dataset.sha256,
                    run.dataset_fingerprint,
                    run.n_prompts,
                    run.package_version,
                    stamp,
                    stamp,
                    run.status,
                    run.dataset.size,
                ),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO prompts "
                "(prompt_id, text, code, dimension, source_model, context_json) "
                "VALUES (?,?,?,?,?,?)",
                [
                    (p.prompt_id, p.text, p.code, str(p.dimension), p.source_model, p.context_json)
                    for p in prompts
                ],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO run_prompts (run_id, prompt_id, position) VALUES (?,?,?)",
                [(run.run_id, p.prompt_id, i) for i, p in enumerate(prompts)],
            )

    def set_run_status(self, run_id: str, status: RunStatus) -> None:
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
        with self.transaction() as conn:
            return claim(conn, RESPONSE_CLAIMS, response_ids, owner, lease_s)

    def claim_judgments(
        self, judgment_ids: Sequence[str], owner: str, lease_s: float
    ) -> list[ClaimState]:
        """Claim judgments to request; each is claimed, done (stored as scored), or busy."""
        with self.transaction() as conn:
            return claim(conn, JUDGMENT_CLAIMS, judgment_ids, owner, lease_s)

    def release_claims(self, owner: str) -> None:
        """Drop this owner's claims, and any claim on finished work (a killed process's)."""
        with self.transaction() as conn:
            for kind in (RESPONSE_CLAIMS, JUDGMENT_CLAIMS):
                conn.execute(f"DELETE FROM {kind.table} WHERE owner = ?", (owner,))
                conn.execute(f"DELETE FROM {kind.table} WHERE {kind.key} IN ({kind.finished})")

    # -- responses -------------------------------------------------------------------------
    def record_responses(self, records: Sequence[ResponseRecord]) -> None:
        """Insert responses; an error row may be replaced by a later success, never the reverse."""
        if not records:
            return
        stamp = now()
        with self.transaction() as conn:
            conn.executemany(
                """
                INSERT INTO responses (response_id, config_key, prompt_id, status, text,
                    finish_reason, prompt_tokens, completion_tokens, latency_s, cost_usd,
                    attempts, error, served_by, package_version, created_at, priced_by,
                    usage_source)
                VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
                ON CONFLICT(response_id) DO UPDATE SET
                    status=excluded.status, text=excluded.text,
                    finish_reason=excluded.finish_reason, prompt_tokens=excluded.prompt_tokens,
                    completion_tokens=excluded.completion_tokens, latency_s=excluded.latency_s,
                    cost_usd=excluded.cost_usd, attempts=responses.attempts + excluded.attempts,
                    error=excluded.error, served_by=excluded.served_by,
                    package_version=excluded.package_version, created_at=excluded.created_at,
                    priced_by=excluded.priced_by, usage_source=excluded.usage_source
                WHERE responses.status != 'ok'
                """,
                [
                    (
                        r.response_id,
                        r.config_key,
                        r.prompt_id,
                        r.status,
                        r.text,
                        r.finish_reason,
                        r.prompt_tokens,
                        r.completion_tokens,
                        r.latency_s,
                        r.cost_usd,
                        r.attempts,
                        r.error,
                        r.served_by,
                        __version__,
                        stamp,
                        r.priced_by,
                        r.usage_source,
                    )
                    for r in records
                ],
            )

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
            raise StoreError(f"{what} matching {quoted(run_id)} in {self.path}; see `intima runs`")
        return rows[0]

    def run_provenance(self, run_id: str) -> dict[str, Any]:
        """The run's row with its configuration decoded (``config``), as exports carry it."""
        return _with_config(self.run(run_id))

    def resolve_runs(self, run_ids: Sequence[str] | None) -> list[str]:
        """Full run ids for the given ids, prefixes or labels. None means every benchmark run:
        runs holding an external labelled set (``intima validate``) are never mixed in."""
        if run_ids is None:
            return [
                r[0]
                for r in self.query(
                    "SELECT run_id FROM runs WHERE dataset_id NOT LIKE ? "
                    "ORDER BY created_at, run_id",
                    (VALIDATION_PREFIX + "%",),
                )
            ]
        return [self.run(r)["run_id"] for r in run_ids]

    def responses(
        self, run_ids: Sequence[str] | None = None, *, distinct: bool = True
    ) -> list[StoredResponse]:
        """The successful responses of the runs (all runs if None), in run and prompt order.

        Runs of one configuration share responses: ``distinct`` lists each once (to judge or
        score it), otherwise under every run it belongs to (to place it on the board)."""
        seen: set[str] = set()
        out = []
        for run_id in self.resolve_runs(run_ids):
            for row in self._conn.execute(_RESPONSES_SQL, (run_id,)):
                if distinct and row[0] in seen:
                    continue
                seen.add(row[0])
                out.append(StoredResponse(*row))
        return out

    def run_rows(self, run_id: str) -> list[dict[str, Any]]:
        """Every prompt of a run with its response (if any), joined with run provenance."""
        rows = self.query(
            """
            SELECT ru.run_id, ru.label, ru.model_spec, ru.provider, ru.model_name,
                   ru.config_key, ru.config_json, ru.dataset_id, ru.dataset_revision,
                   ru.dataset_sha256,
                   p.prompt_id, p.code, p.dimension, p.source_model, p.text AS prompt,
                   p.context_json AS context,
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
        return [_with_config(row) for row in rows]


_RESPONSES_SQL = """
    SELECT r.response_id, ru.run_id, ru.label, ru.model_spec, p.prompt_id, p.code, p.dimension,
           p.text, r.text, p.context_json
    FROM runs ru
    JOIN run_prompts rp ON rp.run_id = ru.run_id
    JOIN prompts p ON p.prompt_id = rp.prompt_id
    JOIN responses r ON r.prompt_id = rp.prompt_id AND r.config_key = ru.config_key
    WHERE ru.run_id = ? AND r.status = 'ok' AND r.text IS NOT NULL
    ORDER BY rp.position
"""


def _with_config(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    out["config"] = json.loads(out.pop("config_json"))
    return out
