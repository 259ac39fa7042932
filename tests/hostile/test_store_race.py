"""Two writers on one new warehouse (issue 36 round three campaign, 2026-12-04): DuckDB makes the
file, locks it and then writes its header, so a second `tracereplay ingest` starting at that
instant saw an empty file and was refused ("is an empty file, not a DuckDB warehouse"), exit 2,
its run not stored. An empty file someone holds the lock of is being made: the open waits for
it; an empty file nobody holds for 2 s is what a creation killed before its header leaves: a
writer makes the warehouse anew, a reader is refused in one line."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from pipelines.store.base import StoreError
from pipelines.store.duckdb_file import check_warehouse_file


def _hold_lock(path: str, ready, release) -> None:
    import fcntl

    with open(path, "r+b") as handle:
        fcntl.lockf(handle, fcntl.LOCK_EX)
        ready.set()
        release.wait(30)


def test_an_empty_file_another_process_holds_is_being_made(tmp_path: Path) -> None:
    target = tmp_path / "w.duckdb"
    target.write_bytes(b"")
    context = multiprocessing.get_context("spawn")
    ready, release = context.Event(), context.Event()
    holder = context.Process(target=_hold_lock, args=(str(target), ready, release))
    holder.start()
    try:
        assert ready.wait(30)
        started = time.monotonic()
        check_warehouse_file(target)  # no error: the open that follows waits for the lock
        assert time.monotonic() - started < 1.5
    finally:
        release.set()
        holder.join(30)


def test_an_empty_file_nobody_holds_is_refused_in_one_line(tmp_path: Path) -> None:
    target = tmp_path / "w.duckdb"
    target.write_bytes(b"")
    with pytest.raises(StoreError) as refused:
        check_warehouse_file(target)
    assert "is an empty file, not a DuckDB warehouse (a creation cut off?)" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_writer_makes_a_warehouse_anew_over_an_empty_file_nobody_holds(tmp_path: Path) -> None:
    """What `kill -9` between DuckDB making the file and writing its header leaves: ingest
    into it works (it held nothing) instead of being refused until someone removes it."""
    from pipelines.store.duckdb_file import FileStore

    target = tmp_path / "w.duckdb"
    target.write_bytes(b"")
    store = FileStore(target)
    store.open().close()
    check_warehouse_file(target)  # a DuckDB file now
    con = store.open(read_only=True)
    try:
        assert con.sql("select count(*) from runs").fetchone() == (0,)
    finally:
        con.close()
