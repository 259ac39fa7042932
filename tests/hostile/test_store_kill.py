"""`kill -9` during a new warehouse's first open (issue 36 round four, the unexplained kill of
round three): the first open made the canonical tables one by one, each committed to the
write-ahead log, so a process killed in the middle left a file with some tables (no `chunks`);
every read command then opened it read-only, built its temp views over the missing table and
ended in a traceback ("Table with name chunks does not exist"). Reproduced by
/tmp/h4/hostile/killscan.py (kill 3 of 12 at 1.21 s into an ingest of two runs, 2026-12-04).
Now the schema is made in one transaction (a kill leaves nothing of it), and a read-only open of
a file that lacks a canonical table (made by the code before) sees it as an empty table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb

from pipelines.store import open_store
from pipelines.store.schema import CANONICAL_TABLES, ddl_text

# a child that opens a new warehouse and is killed once the tables exist, before the views
_KILLED_IN_SCHEMA = """
import os, signal, sys
from pipelines.store import relations
from pipelines.store.duckdb_file import FileStore

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

relations.build = killed
FileStore(sys.argv[1]).open()
"""


def test_a_kill_inside_the_first_open_leaves_a_readable_file(tmp_path: Path) -> None:
    target = tmp_path / "w.duckdb"
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_IN_SCHEMA, str(target)],
        capture_output=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL
    assert target.exists()
    session = open_store(warehouse=target).open(read_only=True)
    try:
        assert session.sql("select count(*) from runs").fetchone() == (0,)
        assert session.sql("select count(*) from chunks").fetchone() == (0,)
    finally:
        session.close()
    # the transaction was never committed: the file holds no table of it
    raw = duckdb.connect(str(target), read_only=True)
    try:
        tables = raw.sql("select table_name from duckdb_tables() where not internal").fetchall()
    finally:
        raw.close()
    assert tables == []


def test_a_file_with_some_canonical_tables_opens_read_only(tmp_path: Path) -> None:
    """The file the code before left (runs and kernels made, chunks not): readable, empty."""
    target = tmp_path / "w.duckdb"
    made = duckdb.connect(str(target))
    for table in CANONICAL_TABLES[:2]:
        made.execute(ddl_text(table))
    made.close()
    session = open_store(warehouse=target).open(read_only=True)
    try:
        for table in CANONICAL_TABLES:
            assert session.sql(f"select count(*) from {table}").fetchone() == (0,)
        assert session.sql("select count(*) from fct_chunk_summary").fetchone() == (0,)
    finally:
        session.close()
    # and a writer completes it, the runs it stores readable by the next read-only open
    open_store(warehouse=target).open().close()
    session = open_store(warehouse=target).open(read_only=True)
    try:
        assert session.sql("select count(*) from chunks").fetchone() == (0,)
    finally:
        session.close()
    assert os.path.getsize(target) > 0
