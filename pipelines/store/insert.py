"""Appending a Polars frame to a canonical table of a DuckDB connection: the one insert both
backends use (the DuckDB file writes into its tables; the lake types a run's rows in a scratch
DuckDB before copying them to Parquet)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import duckdb
import polars as pl

from pipelines import memory_budget
from pipelines.store.catalog import database_path, setting, table_columns
from pipelines.store.duck import sql_string
from pipelines.store.schema import canonical_tables

INSERT_BATCH_ROWS = 122_880  # DuckDB's row-group size


def insert_frame(
    con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame | pl.LazyFrame
) -> int:
    """Append a Polars frame to a canonical table by column name; missing columns become NULL.
    Frames longer than one DuckDB row group go in row-group-sized statements: call this inside a
    transaction (a session's write_run does) when a partial insert must not survive an error."""
    if isinstance(frame, pl.LazyFrame):
        return _insert_lazy(con, table, frame)
    if frame.is_empty():
        return 0
    check_columns(con, table, frame.columns)
    # Arrow string views are Polars' own layout, so no string is copied; one row group per
    # statement bounds DuckDB's working memory (986k slices with 200 MB of args, bench ingest:
    # +140 MB during the insert instead of +380 MB, +600 MB with plain Arrow strings).
    # By name: the table's other columns get NULL, whatever order an older file holds them in.
    with one_thread(con) if frame.height > INSERT_BATCH_ROWS else nullcontext():
        for part in frame.iter_slices(INSERT_BATCH_ROWS):
            con.register("_incoming", part.to_arrow(compat_level=pl.CompatLevel.newest()))
            try:
                con.execute(f"insert into {table} by name select * from _incoming")
            finally:
                con.unregister("_incoming")
    return frame.height


def one_thread(con: duckdb.DuckDBPyConnection) -> AbstractContextManager[None]:
    """DuckDB on one thread for the block. A statement appends one row group: a second thread
    finds little to do but costs CPU (500 MB bench trace's 986,400 slices into a fresh warehouse
    file: 1.5-1.9 s CPU on one thread against 2.4-3.4 s on two, wall no better on two)."""
    return set_for_block(con, "threads", "1")


def check_columns(con: duckdb.DuckDBPyConnection, table: str, names: list[str]) -> None:
    """ValueError naming the columns of `names` that `table` lacks. A canonical table's columns
    are its DDL's (the file store adds any an older file lacks), so no catalog query is needed:
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
def memory_limited(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """DuckDB's memory limit lowered to a quarter of the ingest budget for the block, when the
    database is a file (it then spills to the file's temp folder; an in-memory one could not)."""
    if database_path(con) is None:
        yield
        return
    with set_for_block(con, "memory_limit", f"{memory_budget.duckdb_limit_mib()}MiB"):
        yield


@contextmanager
def set_for_block(con: duckdb.DuckDBPyConnection, name: str, value: str) -> Iterator[None]:
    """DuckDB setting `name` (a setting's name, never user text) set to `value` for the block,
    then back to what it was."""
    old = setting(con, name)
    con.execute(f"set {name} = '{value}'")
    try:
        yield
    finally:
        con.execute(f"set {name} = '{old}'")


RELEASE_LIMIT = "64MiB"
"""DuckDB memory limit set for a moment by `release_buffers`: below it the cache is let go."""


def release_buffers(con: duckdb.DuckDBPyConnection) -> None:
    """Let DuckDB drop its cache of the blocks a large read pinned in memory (a marked 2 GB
    run's slices: ~400 MB held after the query, docs/bench_ingest.md): lowering the memory
    limit makes its buffer manager evict unpinned blocks; the limit is then set back. Only for
    a database file (an in-memory one would spill its tables instead); one that cannot go that
    low (blocks in use) keeps its cache."""
    if database_path(con) is None:
        return
    old = setting(con, "memory_limit")
    try:
        con.execute(f"set memory_limit = '{RELEASE_LIMIT}'")
    except duckdb.Error:
        pass
    finally:
        con.execute(f"set memory_limit = '{old}'")


def _insert_lazy(con: duckdb.DuckDBPyConnection, table: str, frame: pl.LazyFrame) -> int:
    """A LazyFrame (a streamed trace's slices over its Parquet spill): Polars' streaming engine
    writes it to a Parquet file in a spill folder (released with the run's other spills), then
    one DuckDB statement appends that file under memory_limited. Appending Arrow batches
    instead kept every batch in the transaction's local storage until commit: a 4 GB trace's
    insert grew by 2.5 GB (docs/bench_ingest.md "Where the streamed RSS grows")."""
    check_columns(con, table, frame.collect_schema().names())
    path = memory_budget.new_spill_dir() / f"{table}.parquet"
    frame.sink_parquet(path)
    with memory_limited(con):
        (rows,) = con.execute(
            f"insert into {table} by name select * from read_parquet({sql_string(path)})"
        ).fetchone()
    return int(rows)
