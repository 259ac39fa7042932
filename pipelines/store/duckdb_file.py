"""The DuckDB-file store: the canonical tables and derived views in one DuckDB database file.

One writer at a time (DuckDB's file lock): a command that finds the file locked waits for it
(`wait_s`, default $TRACEREPLAY_WAIT or 300 s) and says once who holds it; ingest opens the file
per write so other processes can write in between (FileStore.writer). A writable open creates the
file, its folder and the schema (the DDL of sql/schema, columns a newer DDL adds ALTERed in) and
(re)builds the derived views unless they were built from these sql/ files (relations
.views_signature); a read-only open never creates anything and shows current views as temp views
when the stored ones are stale."""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
import polars as pl

from pipelines.paths import printable
from pipelines.store import catalog, functions, queries, relations
from pipelines.store.base import Session, Store, StoreError, WriteSessions
from pipelines.store.insert import insert_frame, memory_limited
from pipelines.store.schema import (
    CANONICAL_TABLES,
    RUN_TABLES,
    canonical_tables,
    ddl_text,
    declared_columns,
)

DEFAULT_WAIT_S = 300.0  # how long a command waits for another process's write lock
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<exe>.*?) \(PID (?P<pid>\d+)\)")
_POLL_S = 0.25
# A DuckDB database file: an 8-byte checksum, then the magic "DUCK" (DuckDB's storage format,
# src/storage/storage_info.cpp MainHeader::MAGIC_BYTES; read off files written by 1.5.6 here).
DUCKDB_MAGIC = b"DUCK"
DUCKDB_MAGIC_OFFSET = 8
MEMORY = ":memory:"


def check_warehouse_file(target: Path, replace_empty: bool = False) -> None:
    """Refuse an existing path that is not a DuckDB database (a directory, an empty file, JSON,
    CSV, SQLite ...): DuckDB would otherwise open an in-memory database or fail obscurely. A
    folder named with a `?` is refused too: DuckDB (1.5) names the write-ahead log by putting
    `.wal` before the first `?` of the resolved path, even through a link, so every commit
    there failed with a traceback ("Cannot open file .../d.wal?x/w.duckdb")."""
    folder = os.path.dirname(os.path.abspath(target))
    if "?" in folder:
        raise StoreError(
            f"{printable(folder)} holds a '?': DuckDB cannot keep a database in such a folder"
            " (it reads what follows '?' as options); give a path without one"
        )
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"{target} cannot be used: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(mode):
        raise StoreError(f"{target} is a directory, not a DuckDB warehouse file")
    if not stat.S_ISREG(mode):
        # a FIFO, socket or device: opening it to read the magic would block or consume it
        raise StoreError(f"{target} is not a regular file (a pipe or device); give a file path")
    try:
        with target.open("rb") as handle:
            head = handle.read(DUCKDB_MAGIC_OFFSET + len(DUCKDB_MAGIC))
    except OSError as exc:
        raise StoreError(f"{target} cannot be read: {exc.strerror or exc}") from exc
    if not head:
        # DuckDB makes the file, locks it, then writes its header: another writer starting
        # at that instant saw an empty file and gave up (two writers on one new warehouse)
        state = _empty_file_state(target)
        if state == "locked":
            return  # being made: the open waits for its lock
        if state == "filled":
            return check_warehouse_file(target, replace_empty)
        if replace_empty:
            # nobody made it for 2 s: what a creation killed before its header leaves; a writer
            # makes the warehouse anew (it held nothing), so re-ingest after `kill -9` works
            target.unlink(missing_ok=True)
            return
        raise StoreError(
            f"{target} is an empty file, not a DuckDB warehouse (a creation cut off?); remove"
            " it or give another path"
        )
    if head[DUCKDB_MAGIC_OFFSET:] != DUCKDB_MAGIC:
        kind = "an SQLite database" if head.startswith(b"SQLite format") else "not a DuckDB file"
        raise StoreError(f"{target} exists and is {kind}; give a new path or a DuckDB warehouse")


def _empty_file_state(target: Path, wait_s: float = 2.0) -> str:
    """What an empty warehouse file is, watched for up to `wait_s`: "filled" (its header came, or
    the file went), "locked" (a process holds its lock: DuckDB is making it) or "empty" (a file
    nobody is making, such as one left by a creation killed before its header)."""
    import fcntl

    deadline = time.monotonic() + wait_s
    while True:
        try:
            if target.stat().st_size > 0:
                return "filled"
            with target.open("rb") as handle:
                try:
                    fcntl.lockf(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except OSError:
                    return "locked"
                fcntl.lockf(handle, fcntl.LOCK_UN)
        except FileNotFoundError:
            return "filled"  # gone: looked at again as a new path
        if time.monotonic() >= deadline:
            return "empty"
        time.sleep(_POLL_S)


def damaged(target: Path | str, error: BaseException) -> StoreError:
    """The one-line error for a warehouse file DuckDB cannot open (a torn or foreign file with
    DuckDB's magic, a full disk): what it is and how to get a working one back."""
    reason = str(error).splitlines()[0].removeprefix("IO Error: ")
    if "No space left" in reason:
        return StoreError(f"{target}: the disk is full ({reason}); free space and run again")
    return StoreError(
        f"{target} is damaged and cannot be opened ({reason}); move it aside and rebuild it"
        " with `tracereplay ingest <your run folders>`"
    )


def lock_holder(error: BaseException) -> str | None:
    """'PID n' of the process whose lock a DuckDB IOException reports, else None."""
    match = _LOCK_HOLDER.search(str(error))
    return f"PID {match['pid']}" if match else None


def wait_timeout(wait_s: float | None = None) -> float:
    """Seconds to wait for another process's lock: the argument, else $TRACEREPLAY_WAIT, else
    DEFAULT_WAIT_S."""
    if wait_s is not None:
        return max(0.0, float(wait_s))
    env = os.environ.get("TRACEREPLAY_WAIT")
    try:
        return max(0.0, float(env)) if env else DEFAULT_WAIT_S
    except ValueError:
        return DEFAULT_WAIT_S


def _say(message: str) -> None:
    print(f"tracereplay: {message}", file=sys.stderr, flush=True)


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create every canonical table that does not exist yet, add the columns a newer
    sql/schema declares to tables an older version created (nullable, so old rows stay), then
    (re)create the derived views of sql/ unless they are current: all in one transaction, so a
    process killed in the middle leaves the file as it was (issue 36 round four: a `kill -9`
    during a new warehouse's first open left the tables made so far in the write-ahead log,
    `chunks` missing, and every read command ended in a traceback building its views)."""
    con.execute("begin transaction")
    try:
        _create_schema(con)
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")


def _create_schema(con: duckdb.DuckDBPyConnection) -> None:
    existing = set(catalog.schema_columns(con))
    tables = {t for t, _ in existing}
    altered = False
    for table in CANONICAL_TABLES:
        if table not in tables:
            con.execute(ddl_text(table))
            altered = True
            continue
        for column, kind in declared_columns(table):
            if (table, column) not in existing:
                con.execute(f'alter table {table} add column "{column}" {kind}')
                altered = True
    functions.register(con)
    signature = relations.views_signature()
    if not altered and relations.views_current(con, signature):
        return  # built by these sql/ files over these tables
    relations.build(con)
    relations.store_views_signature(con, signature)


def missing_tables_as_empty(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Show each canonical table the file lacks as an empty temp table of this connection, so a
    read-only open can build its views: a file whose creation was cut off (a `kill -9` during
    the first open of a version before create_schema's transaction: some tables made, no run
    written) or one an older version made before a table existed holds no row of it. Returns
    the tables so made."""
    present = {table for table, _ in catalog.catalog_tables(con)}
    missing = [t for t in CANONICAL_TABLES if t not in present]
    for table in missing:
        text = ddl_text(table)
        con.execute(re.sub(r"(?i)\bcreate\s+table\b", "create temp table", text, count=1))
    return missing


def open_duckdb(
    target: Path | str,
    read_only: bool,
    wait_s: float | None = None,
    on_wait: Callable[[str], None] | None = _say,
) -> duckdb.DuckDBPyConnection:
    """duckdb.connect on `target`, waiting for another process's lock (saying once through
    `on_wait` who holds it); StoreError when the time is up."""
    limit = wait_timeout(wait_s)
    deadline = time.monotonic() + limit
    said = False
    while True:
        try:
            return duckdb.connect(str(target), read_only=read_only)
        except duckdb.IOException as exc:
            holder = lock_holder(exc)
            if holder is None:
                raise damaged(target, exc) from exc
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"warehouse {target} still in use by {holder} after {limit:.0f} s"
                    " (raise --wait or $TRACEREPLAY_WAIT)"
                ) from exc
            if not said and on_wait is not None:
                on_wait(f"warehouse in use by {holder}, waiting (up to {limit:.0f} s)")
                said = True
            time.sleep(_POLL_S)


class FileSession(Session):
    """A connection to a DuckDB warehouse (a file, or an in-memory scratch one)."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, read_only: bool = False, owns: bool = True
    ) -> None:
        self.con = con
        self.read_only = read_only
        self.owns_connection = owns

    def runs_relation(self, table: str, run_ids: Sequence[str]) -> str:
        listed = ", ".join("'" + r.replace("'", "''") + "'" for r in run_ids)
        return f"(select * from {table} where run_id in ({listed or 'null'}))"

    def stored_runs(self) -> list[tuple]:
        return queries.stored_run_rows(self.con)

    def run_ids_at_origin(self, origin: str) -> list[str]:
        return queries.run_ids_at_origin(self.con, origin)

    def run_input_files(self) -> list[tuple[str, str, str]]:
        return queries.run_input_files(self.con)

    def run_stamps(self) -> dict[str, str] | None:
        return None

    def not_null_columns(self) -> dict[str, list[str]]:
        # what the file's tables really enforce (an older file may differ from the DDL)
        out: dict[str, list[str]] = {}
        for table, column in catalog.schema_columns(self.con, not_null_only=True):
            out.setdefault(table, []).append(column)
        return out

    def _delete(self, run_id: str) -> None:
        for table in RUN_TABLES:
            self.con.execute(f"delete from {table} where run_id = ?", [run_id])

    def delete_run(self, run_id: str) -> None:
        with self.transaction():
            self._delete(run_id)

    def write_run(
        self,
        run_id: str,
        tables: dict[str, pl.DataFrame | pl.LazyFrame],
        replaces: Iterable[str] = (),
    ) -> dict[str, int]:
        gone = [old for old in replaces if old != run_id]
        counts: dict[str, int] = {}
        with self.transaction(), memory_limited(self.con):
            for old in [*gone, run_id]:
                self._delete(old)
            for table in RUN_TABLES:
                frame = tables.get(table)
                counts[table] = 0 if frame is None else insert_frame(self.con, table, frame)
        if any(isinstance(frame, pl.LazyFrame) for frame in tables.values()):
            # a streamed trace's rows are checkpointed now, under the limit: left to the close,
            # the checkpoint of a 4 GB trace's slices took the process from 0.6 to 4.0 GB
            with memory_limited(self.con):
                self.con.execute("checkpoint")
        return counts

    def replace_run_rows(
        self,
        run_id: str,
        tables: dict[str, pl.DataFrame],
        run_values: dict[str, object] | None = None,
    ) -> None:
        with self.transaction():
            for table, frame in tables.items():
                self.con.execute(f"delete from {table} where run_id = ?", [run_id])
                insert_frame(self.con, table, frame)
            if run_values:
                # a file written before a column existed (and not reopened since) gets it now
                present = set(catalog.table_columns(self.con, "runs"))
                for column, kind in declared_columns("runs"):
                    if column in run_values and column not in present:
                        self.con.execute(f'alter table runs add column "{column}" {kind}')
                assignments = ", ".join(f'"{c}" = ?' for c in run_values)
                self.con.execute(
                    f"update runs set {assignments} where run_id = ?",
                    [*run_values.values(), run_id],
                )

    def _append_quarantine(self, row: dict[str, object]) -> None:
        columns = [c.name for c in canonical_tables()["quarantine"].columns]
        self.con.execute(
            f"insert into quarantine values ({', '.join('?' for _ in columns)})",
            [row.get(c) for c in columns],
        )


def _refuse_lake_views(con: duckdb.DuckDBPyConnection, target: Path) -> None:
    """A lake's views file (`tracereplay --lake L ... --warehouse W` keeps the lake's views in W)
    given as a warehouse: its run tables are views over the lake's Parquet files, so a command
    that writes (`chunks`, a fit, ingest) ended in DuckDB's "Can only delete from base table"
    traceback, or ingest called a run "unchanged" and wrote nothing (issue 36 round six). The
    reverse (a warehouse's tables given to a lake as its views file) is refused by the lake."""
    views = con.execute(
        "select view_name from duckdb_views() where not internal and view_name in"
        f" ({', '.join('?' for _ in CANONICAL_TABLES)})",
        list(CANONICAL_TABLES),
    ).fetchall()
    if views:
        raise StoreError(
            f"{printable(str(target))} is the views file of a Parquet lake (its {views[0][0]}"
            " table is a view over the lake's files), not a warehouse: give the lake with"
            " --lake DIR, or another --warehouse file"
        )


class FileStore(Store):
    """A DuckDB warehouse file (or ":memory:", a scratch warehouse held by one connection)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        wait_s: float | None = None,
        on_wait: Callable[[str], None] | None = _say,
    ) -> None:
        self.location = Path(path)
        self.warehouse_file = self.location
        self.wait_s = wait_s
        self.on_wait = on_wait

    @property
    def memory(self) -> bool:
        return str(self.location) == MEMORY

    def exists(self) -> bool:
        return self.memory or self.location.exists()

    def check(self) -> None:
        if not self.memory:
            check_warehouse_file(self.location)

    def open(self, read_only: bool = False) -> FileSession:
        target = self.location
        if not self.memory:
            check_warehouse_file(target, replace_empty=not read_only)
            if read_only and not target.exists():
                raise StoreError(f"no warehouse at {target} (run `tracereplay ingest` first)")
            if not read_only:
                target.parent.mkdir(parents=True, exist_ok=True)
        con = open_duckdb(target, read_only and not self.memory, self.wait_s, self.on_wait)
        try:
            if read_only and not self.memory:
                # a file written by an older version may lack (or hold older) derived views:
                # unless they were built from these sql/ files, this connection sees the current
                # definitions as temp views
                functions.register(con)
                if not relations.views_current(con, relations.views_signature()):
                    missing_tables_as_empty(con)
                    relations.build(con, temporary=True)
            else:
                _refuse_lake_views(con, target)
                create_schema(con)
        except Exception:
            con.close()
            raise
        return FileSession(con, read_only=read_only)

    @contextmanager
    def writer(self) -> Iterator[WriteSessions]:
        yield _PerWrite(self)


class _PerWrite(WriteSessions):
    """The file is opened for each write and closed after it, so the lock is held only while
    writing and other processes can write in between."""

    def __init__(self, store: FileStore) -> None:
        self.store = store

    @contextmanager
    def open(self) -> Iterator[Session]:
        with self.store.session() as session:
            yield session
