"""DuckDB warehouse: connection, schema creation from sql/schema, SQL-file runner, run writes."""

from __future__ import annotations

import hashlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import duckdb
import polars as pl

from pipelines import lake, sql_functions, sql_runner
from pipelines import warehouse_queries as queries
from pipelines.canonical_schema import CANONICAL_TABLES, canonical_tables, ddl_text
from pipelines.paths import SQL_DIR, lake_path, warehouse_path

INSERT_BATCH_ROWS = 122_880  # DuckDB's row-group size
# Tables whose rows belong to one run (deleted and rewritten together on re-ingest).
RUN_TABLES = tuple(t for t in CANONICAL_TABLES if t != "quarantine")


DEFAULT_WAIT_S = 300.0  # how long a command waits for another process's write lock
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<exe>.*?) \(PID (?P<pid>\d+)\)")
_POLL_S = 0.25
# A DuckDB database file: an 8-byte checksum, then the magic "DUCK" (DuckDB's storage format,
# src/storage/storage_info.cpp MainHeader::MAGIC_BYTES; read off files written by 1.5.6 here).
DUCKDB_MAGIC = b"DUCK"
DUCKDB_MAGIC_OFFSET = 8


class WarehouseError(Exception):
    """The warehouse path cannot be used (not a DuckDB file, locked for too long, absent)."""


def check_warehouse_file(target: Path) -> None:
    """Refuse an existing path that is not a DuckDB database (a directory, an empty file, JSON,
    CSV, SQLite ...): DuckDB would otherwise open an in-memory database or fail obscurely."""
    if not target.exists():
        return
    if target.is_dir():
        raise WarehouseError(f"{target} is a directory, not a DuckDB warehouse file")
    try:
        with target.open("rb") as handle:
            head = handle.read(DUCKDB_MAGIC_OFFSET + len(DUCKDB_MAGIC))
    except OSError as exc:
        raise WarehouseError(f"{target} cannot be read: {exc.strerror or exc}") from exc
    if not head:
        raise WarehouseError(f"{target} is an empty file, not a DuckDB warehouse")
    if head[DUCKDB_MAGIC_OFFSET:] != DUCKDB_MAGIC:
        kind = "an SQLite database" if head.startswith(b"SQLite format") else "not a DuckDB file"
        raise WarehouseError(
            f"{target} exists and is {kind}; give a new path or a DuckDB warehouse"
        )


def exists(path: str | os.PathLike[str] | None = None) -> bool:
    """Whether there is a warehouse to read: the file, or a lake (whose views file is made on
    first use)."""
    return lake_path() is not None or Path(warehouse_path(path)).exists()


def lock_holder(error: BaseException) -> str | None:
    """'PID n' of the process whose lock a DuckDB IOException reports, else None."""
    match = _LOCK_HOLDER.search(str(error))
    return f"PID {match['pid']}" if match else None


def _say(message: str) -> None:
    print(f"tracereplay: {message}", file=sys.stderr, flush=True)


def connect(
    path: str | os.PathLike[str] | None = None,
    read_only: bool = False,
    wait_s: float | None = None,
    on_wait: Callable[[str], None] | None = _say,
) -> duckdb.DuckDBPyConnection:
    """Open the warehouse (creating the file, its folder and the canonical schema when writable).
    With a lake set (pipelines.paths.lake_path), the canonical tables are views over the lake's
    Parquet partitions (docs/lake.md) and the file holds only those views and tau_fits; never
    for ":memory:", a scratch warehouse of tables.

    An existing path must be a DuckDB file (WarehouseError otherwise). When another process holds
    the file's lock, wait for it up to `wait_s` seconds (default $TRACEREPLAY_WAIT or 300 s),
    saying once through `on_wait` who holds it; WarehouseError when the time is up."""
    target = warehouse_path(path)
    memory = str(target) == ":memory:"
    # an in-memory warehouse is a scratch one (tables of frames held in memory, as
    # tau_points.chunk_tau_of makes): it never reads a lake, even with one set
    root = None if memory else lake_path()
    if root is not None and read_only and not memory and not Path(target).exists():
        # ingest into a lake never opens the warehouse file: its views are made on first read
        connect(target, wait_s=wait_s, on_wait=on_wait).close()
    if not memory:
        check_warehouse_file(Path(target))
        if read_only and not Path(target).exists():
            raise WarehouseError(f"no warehouse at {target} (run `tracereplay ingest` first)")
        if not read_only:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
    limit = wait_timeout(wait_s)
    deadline = time.monotonic() + limit
    said = False
    while True:
        try:
            con = duckdb.connect(str(target), read_only=read_only)
            break
        except duckdb.IOException as exc:
            holder = lock_holder(exc)
            if holder is None:
                raise
            if time.monotonic() >= deadline:
                raise WarehouseError(
                    f"warehouse {target} still in use by {holder} after {limit:.0f} s"
                    " (raise --wait or $TRACEREPLAY_WAIT)"
                ) from exc
            if not said and on_wait is not None:
                on_wait(f"warehouse in use by {holder}, waiting (up to {limit:.0f} s)")
                said = True
            time.sleep(_POLL_S)
    try:
        if read_only:
            # a file written by an older version may lack (or hold older) derived views: unless
            # its views were built from these sql/ files (views_signature), this connection sees
            # the current definitions as temp views
            if root is not None:
                lake.attach(con, root, temporary=True)
            sql_functions.register(con)
            if root is not None or not views_current(con, views_signature()):
                sql_runner.build(con, temporary=True)
        else:
            create_schema(con, root)
    except Exception:
        con.close()
        raise
    return con


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


@contextmanager
def session(
    path: str | os.PathLike[str] | None = None,
    read_only: bool = False,
    wait_s: float | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection held only for the block (so other processes can write in between)."""
    con = connect(path, read_only=read_only, wait_s=wait_s)
    try:
        yield con
    finally:
        con.close()


def declared_columns(table: str) -> tuple[tuple[str, str], ...]:
    """(name, type) of each column sql/schema/<table>.sql declares."""
    return tuple((c.name, c.duckdb_type) for c in canonical_tables()[table].columns)


VIEWS_SIGNATURE_TABLE = "views_signature"
"""The signature (views_signature) the warehouse file's stored views were built for."""
_OLD_SIGNATURE_TABLE = "lake_views_signature"  # its name before plain warehouses kept one too


@cache
def _sql_digest() -> str:
    """sha256 over every file under sql/ (canonical DDL and derived relations), once a process."""
    digest = hashlib.sha256()
    for path in sorted(SQL_DIR.rglob("*.sql")):
        digest.update(str(path.relative_to(SQL_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def views_signature(lake_root: Path | None = None) -> str:
    """What a warehouse file's stored views depend on: every file under sql/ and, for a lake's
    warehouse file, the lake's resolved path. The stored views are current when it matches, so
    opening the warehouse rebuilds nothing: rebuilding every view cost ~0.1 s a connection,
    which `tracereplay ingest` opens once per run (docs/bench_ingest.md "Many small runs"), and a
    lake's views bind every run's files (O(history), docs/lake.md)."""
    where = "file" if lake_root is None else f"lake:{Path(lake_root).resolve()}"
    return hashlib.sha256(f"{where}\n{_sql_digest()}".encode()).hexdigest()


def views_current(con: duckdb.DuckDBPyConnection, signature: str) -> bool:
    """Whether the stored derived views were built for `signature` and are all there."""
    if queries.stored_views_signature(con, VIEWS_SIGNATURE_TABLE) != signature:
        return False
    return set(sql_runner.project_relations()[1]) <= queries.stored_view_names(con)


def _store_views_signature(con: duckdb.DuckDBPyConnection, signature: str) -> None:
    con.execute(f'drop table if exists "{_OLD_SIGNATURE_TABLE}"')
    replace_table(con, VIEWS_SIGNATURE_TABLE, pl.DataFrame({"signature": [signature]}))


def create_schema(con: duckdb.DuckDBPyConnection, lake_root: Path | None = None) -> None:
    """Create every canonical table that does not exist yet, add the columns a newer
    sql/schema declares to tables an older version created (nullable, so old rows stay), then
    (re)create the derived views of sql/ (pipelines.sql_runner.build). With `lake_root` the
    canonical tables are views over the lake instead."""
    existing = set(queries.schema_columns(con))
    tables = {t for t, _ in existing}
    if lake_root is not None:
        held = sorted({t for t, _ in queries.catalog_tables(con)} & set(CANONICAL_TABLES))
        if held:
            raise WarehouseError(
                f"the warehouse file holds canonical tables ({', '.join(held)}); a lake's views "
                "need a warehouse file of their own (drop --warehouse: the lake keeps one)"
            )
        sql_functions.register(con)
        signature = views_signature(lake_root)
        if views_current(con, signature):
            # the stored views read the lake's globs at query time: a new run needs no rebuild
            lake.mark(con, lake_root)
            return
        lake.attach(con, lake_root)
        sql_runner.build(con)
        _store_views_signature(con, signature)
        return
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
    sql_functions.register(con)
    signature = views_signature()
    if not altered and views_current(con, signature):
        return  # built by these sql/ files over these tables
    sql_runner.build(con)
    _store_views_signature(con, signature)


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """Column names of a warehouse table, in declared order."""
    return queries.table_columns(con, table)


def insert_frame(
    con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame | pl.LazyFrame
) -> int:
    """Append a Polars frame to a canonical table by column name; missing columns become NULL.
    Frames longer than one DuckDB row group go in row-group-sized statements: call this inside a
    transaction (write_run does) when a partial insert must not survive an error."""
    if isinstance(frame, pl.LazyFrame):
        return _insert_lazy(con, table, frame)
    if frame.is_empty():
        return 0
    _check_columns(con, table, frame.columns)
    # Arrow string views are Polars' own layout, so no string is copied; one row group per
    # statement bounds DuckDB's working memory (986k slices with 200 MB of args, bench ingest:
    # +140 MB during the insert instead of +380 MB, +600 MB with plain Arrow strings).
    # By name: the table's other columns get NULL, whatever order an older file holds them in.
    for part in frame.iter_slices(INSERT_BATCH_ROWS):
        con.register("_incoming", part.to_arrow(compat_level=pl.CompatLevel.newest()))
        try:
            con.execute(f"insert into {table} by name select * from _incoming")
        finally:
            con.unregister("_incoming")
    return frame.height


def _check_columns(con: duckdb.DuckDBPyConnection, table: str, names: list[str]) -> None:
    """ValueError naming the columns of `names` that `table` lacks. A canonical table's columns
    are its DDL's (create_schema adds any an older file lacks), so no catalog query is needed:
    `describe` costs ~15 ms in a warehouse of many views, ~0.2 s a run over its tables
    (docs/bench_ingest.md "Many small runs")."""
    declared = canonical_tables().get(table)
    columns = (
        [c.name for c in declared.columns] if declared is not None else table_columns(con, table)
    )
    unknown = set(names) - set(columns)
    if unknown:
        raise ValueError(f"{table}: columns not in the schema: {sorted(unknown)}")


@contextmanager
def _memory_limited(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """DuckDB's memory limit lowered to a quarter of the ingest budget for the block, when the
    database is a file (it then spills to the file's temp folder; an in-memory one could not)."""
    from pipelines.ingest import memory

    if queries.database_path(con) is None:
        yield
        return
    old = queries.setting(con, "memory_limit")
    con.execute(f"set memory_limit = '{memory.duckdb_limit_mib()}MiB'")
    try:
        yield
    finally:
        con.execute(f"set memory_limit = '{old}'")


def _insert_lazy(con: duckdb.DuckDBPyConnection, table: str, frame: pl.LazyFrame) -> int:
    """A LazyFrame (a streamed trace's slices over its Parquet spill): Polars' streaming engine
    writes it to a Parquet file in a spill folder (released with the run's other spills), then
    one DuckDB statement appends that file under _memory_limited. Appending Arrow batches
    instead kept every batch in the transaction's local storage until commit: a 4 GB trace's
    insert grew by 2.5 GB (docs/bench_ingest.md "Where the streamed RSS grows")."""
    from pipelines.ingest import memory
    from pipelines.ingest.duck import sql_string

    _check_columns(con, table, frame.collect_schema().names())
    path = memory.new_spill_dir() / f"{table}.parquet"
    frame.sink_parquet(path)
    with _memory_limited(con):
        (rows,) = con.execute(
            f"insert into {table} by name select * from read_parquet({sql_string(path)})"
        ).fetchone()
    return int(rows)


def delete_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Remove every row of one run from the run tables (a lake: its partitions)."""
    root = lake.stored_root(con)
    if root is not None:
        lake.delete_run(root, run_id)
        return
    for table in RUN_TABLES:
        con.execute(f"delete from {table} where run_id = ?", [run_id])


def write_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    tables: dict[str, pl.DataFrame | pl.LazyFrame],
    replaces: Iterable[str] = (),
) -> dict[str, int]:
    """Replace one run's rows (and remove the runs in `replaces`) in one transaction; returns
    rows written per table. A lake: the run's partitions are written aside and renamed into
    place (pipelines.lake.write_run), then the replaced runs' partitions are removed."""
    gone = [old for old in replaces if old != run_id]
    root = lake.stored_root(con)
    if root is not None:
        counts = lake.write_run(root, run_id, tables)
        for old in gone:
            lake.delete_run(root, old)
        return counts
    counts: dict[str, int] = {}
    con.execute("begin transaction")
    try:
        for old in [*gone, run_id]:
            delete_run(con, old)
        for table in RUN_TABLES:
            frame = tables.get(table)
            counts[table] = 0 if frame is None else insert_frame(con, table, frame)
        con.execute("commit")
    except Exception:
        con.execute("rollback")
        raise
    if any(isinstance(frame, pl.LazyFrame) for frame in tables.values()):
        # a streamed trace's rows are checkpointed now, under the limit: left to the close,
        # the checkpoint of a 4 GB trace's slices took the process from 0.6 to 4.0 GB
        with _memory_limited(con):
            con.execute("checkpoint")
    return counts


def replace_run_rows(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    tables: dict[str, pl.DataFrame],
    run_values: dict[str, object] | None = None,
) -> None:
    """Replace the rows of one run in the given tables only, and set `run_values` (column ->
    value) on its `runs` row, together (one transaction; a lake: those partitions rewritten)."""
    root = lake.stored_root(con)
    if root is not None:
        tables = dict(tables)
        if run_values:
            row = queries.run_row(con, run_id)
            tables["runs"] = row.with_columns(
                pl.Series(c, [v], dtype=row.schema[c]) for c, v in run_values.items()
            )
        lake.write_run(root, run_id, tables, partial=True)
        return
    con.execute("begin transaction")
    try:
        for table, frame in tables.items():
            con.execute(f"delete from {table} where run_id = ?", [run_id])
            insert_frame(con, table, frame)
        if run_values:
            assignments = ", ".join(f'"{c}" = ?' for c in run_values)
            con.execute(
                f"update runs set {assignments} where run_id = ?", [*run_values.values(), run_id]
            )
        con.execute("commit")
    except Exception:
        con.execute("rollback")
        raise


def record_quarantine(
    con: duckdb.DuckDBPyConnection,
    path: str,
    reason: str,
    detail: str,
    content_hash: str | None = None,
) -> None:
    """Add a quarantine row unless the same (path, reason, content) is already there."""
    if queries.quarantine_has(con, path, reason, content_hash):
        return
    seen_at = datetime.now(UTC).replace(tzinfo=None)
    root = lake.stored_root(con)
    if root is not None:
        row = {"path": path, "reason": reason, "detail": detail, "content_hash": content_hash}
        frame = pl.DataFrame([{**row, "seen_at": seen_at}], schema_overrides={"detail": pl.String})
        lake.append_quarantine(root, frame)
        return
    con.execute(
        "insert into quarantine values (?, ?, ?, ?, ?)",
        [path, reason, detail, content_hash, seen_at],
    )


def replace_table(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    """Store a frame computed in Python (e.g. the tau_fits table) as table `table`, replacing it,
    in one transaction. Derived SQL relations are views built by pipelines.sql_runner instead."""
    con.execute("begin transaction")
    try:
        con.execute(f'drop table if exists "{table}"')
        con.from_arrow(frame.to_arrow()).create(table)
        con.execute("commit")
    except Exception:
        con.execute("rollback")
        raise


def row_counts(
    con: duckdb.DuckDBPyConnection, tables: Iterable[str] = CANONICAL_TABLES
) -> dict[str, int]:
    """Row count per table."""
    return queries.row_counts(con, tables)
