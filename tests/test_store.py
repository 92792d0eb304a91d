import hashlib
import sqlite3
from pathlib import Path

import pytest

from intima.core.errors import StoreError
from intima.dataset import load_prompts
from intima.store import ResponseRecord, RunRecord, Store, response_id_for
from intima.store.schema import migrations


def _run(store: Store) -> RunRecord:
    ps = load_prompts("demo")
    rec = RunRecord(
        run_id="r1",
        label="x",
        model_spec="llamacpp",
        provider="llamacpp",
        model_name="",
        config_key="k",
        config_json="{}",
        dataset=ps.info,
        dataset_fingerprint=ps.fingerprint,
        n_prompts=len(ps),
    )
    store.ensure_run(rec, ps.prompts)
    return rec


def test_migrations_apply_once_and_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store.open(path) as s:
        assert s.applied_migrations() == [m.name for m in migrations()]
    with Store.open(path) as s:  # re-opening applies nothing twice
        assert len(s.applied_migrations()) == len(migrations())
        assert s.query("PRAGMA journal_mode")[0][0] == "wal"


def test_store_from_a_newer_intima_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO _migrations VALUES ('9999_future', 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer intima"):
        Store.open(path)


def test_error_rows_are_replaced_by_success_but_never_the_reverse(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as s:
        run = _run(s)
        pid = s.missing_prompt_ids(run.run_id, "k")[0]
        rid = response_id_for("k", pid)
        s.record_responses(
            [
                ResponseRecord(
                    response_id=rid, config_key="k", prompt_id=pid, status="error", error="500"
                )
            ]
        )
        assert pid in s.missing_prompt_ids(run.run_id, "k")
        s.record_responses(
            [
                ResponseRecord(
                    response_id=rid,
                    config_key="k",
                    prompt_id=pid,
                    status="ok",
                    text="hello",
                    attempts=2,
                )
            ]
        )
        s.record_responses(
            [
                ResponseRecord(
                    response_id=rid, config_key="k", prompt_id=pid, status="error", error="late"
                )
            ]
        )
        row = s.query("SELECT status, text, attempts FROM responses WHERE response_id=?", (rid,))[0]
        assert tuple(row) == ("ok", "hello", 3)
        assert pid not in s.missing_prompt_ids(run.run_id, "k")


def test_a_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as s:
        _run(s)
        with pytest.raises(RuntimeError), s.transaction() as conn:
            conn.execute("UPDATE runs SET status='complete'")
            raise RuntimeError("crash")
        assert s.query("SELECT status FROM runs")[0][0] == "running"


# -- claims --------------------------------------------------------------------------------------
def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(proc.stdout)


@pytest.mark.parametrize("kind", ["responses", "judgments"])
def test_claims_are_exclusive_until_released(tmp_path: Path, kind: str) -> None:
    with Store.open(tmp_path / "s.db") as s:
        claim = s.claim_responses if kind == "responses" else s.claim_judgments
        assert claim(["a", "b"], "A", 60) == ["claimed", "claimed"]
        assert claim(["a", "b", "c"], "B", 60) == ["busy", "busy", "claimed"]
        assert claim(["a"], "A", 60) == ["claimed"]  # an owner may renew its own claim
        s.release_claims("A")
        assert claim(["a", "b"], "B", 60) == ["claimed", "claimed"]


@pytest.mark.parametrize("kind", ["responses", "judgments"])
def test_claims_of_dead_processes_and_lapsed_leases_are_taken_over(
    tmp_path: Path, kind: str
) -> None:
    with Store.open(tmp_path / "s.db") as s:
        claim = s.claim_responses if kind == "responses" else s.claim_judgments
        table, key = ("response_claims", "response_id") if kind == "responses" else (
            "judgment_claims", "judgment_id")  # fmt: skip
        assert claim(["dead", "lapsed"], "A", 60) == ["claimed", "claimed"]
        with s.transaction() as conn:
            conn.execute(f"UPDATE {table} SET pid = ? WHERE {key} = 'dead'", (_dead_pid(),))
            conn.execute(f"UPDATE {table} SET expires = 0 WHERE {key} = 'lapsed'")
        assert claim(["dead", "lapsed"], "B", 60) == ["claimed", "claimed"]


def test_stored_work_is_done_and_its_stale_claims_are_dropped(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as s:
        run = _run(s)
        pid = s.missing_prompt_ids(run.run_id, "k")[0]
        rid = response_id_for("k", pid)
        assert s.claim_responses([rid], "A", 60) == ["claimed"]
        s.record_responses(
            [ResponseRecord(response_id=rid, config_key="k", prompt_id=pid, status="ok", text="x")]
        )
        assert s.claim_responses([rid], "B", 60) == ["done"]
        s.release_claims("B")  # not A's process, yet A's claim on finished work goes
        assert s.query("SELECT COUNT(*) FROM response_claims")[0][0] == 0


def test_migration_names_are_unique_and_name_their_subsystem() -> None:
    names = [m.name for m in migrations()]
    assert len(set(names)) == len(names)
    for name in names:
        subsystem, number, _what = name.split("_", 2)
        assert subsystem in {
            "core",
            "queue",
            "judges",
            "affect",
            "validate",
            "converse",
            "generate",
        }, name
        assert number.isdigit(), name


def test_a_store_from_before_the_renaming_keeps_its_data(tmp_path: Path) -> None:
    """Stores written when migrations had their old names are renamed, not migrated twice."""
    path = tmp_path / "s.db"
    with Store.open(path) as s:
        _run(s)
    with sqlite3.connect(path) as conn:
        for m in migrations():
            if m.replaces:
                conn.execute("UPDATE _migrations SET name = ? WHERE name = ?", (m.replaces, m.name))
        conn.execute("DELETE FROM _migrations WHERE name = 'core_0003_run_status_check'")
        conn.execute("DROP TRIGGER IF EXISTS runs_status_insert")  # gone with core_0005
        conn.execute("DROP TRIGGER IF EXISTS runs_status_update")
    with Store.open(path) as s:
        assert s.applied_migrations()[-1] == "core_0003_run_status_check"
        assert sorted(s.applied_migrations()) == sorted(m.name for m in migrations())
        assert s.run("r1")["label"] == "x"


def test_a_run_status_outside_the_list_is_refused(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as s:
        _run(s)
        with pytest.raises(sqlite3.IntegrityError, match="not a run status"):
            s.set_run_status("r1", "weird")  # type: ignore[arg-type]


def _open_at_barrier(path: str, barrier: object, results: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    try:
        Store.open(path).close()
        results.put("ok")  # type: ignore[attr-defined]
    except Exception as exc:  # report, do not hang the parent
        results.put(f"{type(exc).__name__}: {exc}")  # type: ignore[attr-defined]


def test_processes_opening_one_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    """Six processes released together by a barrier open one store that does not exist yet,
    40 times over: every open succeeds (it failed in about 3% of opens before opening waited
    for the lock), and the store is migrated exactly once."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    failures = []
    for round_ in range(40):
        path = str(tmp_path / f"s{round_}.db")
        barrier, results = ctx.Barrier(6), ctx.Queue()
        procs = [
            ctx.Process(target=_open_at_barrier, args=(path, barrier, results)) for _ in range(6)
        ]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=120) for _ in procs]
        for p in procs:
            p.join()
        failures += [o for o in outcomes if o != "ok"]
        with Store.open(path) as s:
            assert s.applied_migrations() == [m.name for m in migrations()]
    assert failures == []


def foreign_database(path: Path, journal: str = "delete", table: str = "notes") -> str:
    """Another application's SQLite file; returns its sha256."""
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode={journal}")
    conn.execute(f"CREATE TABLE {table} (body TEXT)")
    conn.execute(f"INSERT INTO {table} VALUES ('not intima')")
    conn.commit()
    conn.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_another_applications_database_is_refused_and_left_byte_identical(
    tmp_path: Path,
) -> None:
    other, wal, odd = tmp_path / "other.db", tmp_path / "wal.db", tmp_path / "odd.db"
    digests = {other: foreign_database(other), wal: foreign_database(wal, "wal"),
               odd: foreign_database(odd, table="_migrations")}  # fmt: skip
    empty = tmp_path / "empty.db"
    empty.touch()
    for path in digests:
        for create in (False, True):  # reading never migrates it, and writing never adopts it
            with pytest.raises(StoreError, match=f"{path} is not an intima store"):
                Store.open(path, create=create)
    with pytest.raises(StoreError, match=f"{empty} is not an intima store"):
        Store.open(empty, create=False)
    assert all(hashlib.sha256(p.read_bytes()).hexdigest() == d for p, d in digests.items())
    assert empty.stat().st_size == 0
    assert sorted(tmp_path.iterdir()) == [empty, odd, other, wal]  # no -wal or -shm beside
    with Store.open(empty) as s:  # an empty file is a new store for a command that writes
        assert s.applied_migrations() == [m.name for m in migrations()]
