"""Every warehouse read the library, the CLI and Dagster need, one named function each.

Derived relations (int_chunk_tau, ...) are SQL files under sql/ built by pipelines.sql_runner;
the functions here only read tables and those relations. Writes live in pipelines.warehouse.
Table names given as arguments are checked against the warehouse's own catalog first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import duckdb
import polars as pl

# --- catalog ---------------------------------------------------------------------------------


def schema_columns(
    con: duckdb.DuckDBPyConnection, not_null_only: bool = False
) -> list[tuple[str, str]]:
    """(table, column) of every table of the connection's current schema; `not_null_only`:
    only the columns declared NOT NULL."""
    # no bound parameter: binding a Python value makes DuckDB import pandas (1.2 s, measured
    # with cProfile on `warehouse.connect(':memory:')`)
    rows = con.execute(
        "select table_name, column_name from duckdb_columns()"
        " where not internal and database_name = current_database()"
        " and schema_name = current_schema()"
        + (" and not is_nullable" if not_null_only else "")
        + " order by table_name, column_index"
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def catalog_tables(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str | None]]:
    """(table, its `comment on table` text) of every user table."""
    return con.execute(
        "select table_name, comment from duckdb_tables() where not internal"
    ).fetchall()


def catalog_columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str, bool, str | None]]:
    """(table, column, DuckDB type, nullable, `comment on column` text) of every user table's
    columns, in declared order."""
    return con.execute(
        "select table_name, column_name, data_type, is_nullable, comment"
        " from duckdb_columns() where not internal order by table_name, column_index"
    ).fetchall()


def relation_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether a table or view `name` is visible to the connection (temp views included)."""
    row = con.execute(
        "select count(*) from information_schema.tables where table_name = ?", [name]
    ).fetchone()
    return bool(row[0])


def _checked(con: duckdb.DuckDBPyConnection, name: str) -> str:
    if not relation_exists(con, name):
        raise duckdb.CatalogException(f"no table or view {name!r} in the warehouse")
    return f'"{name}"'


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """Column names of a table or view, in declared order."""
    return [row[0] for row in con.execute(f"describe {_checked(con, table)}").fetchall()]


def read_relation(con: duckdb.DuckDBPyConnection, name: str) -> pl.DataFrame:
    """Every row of a table or view."""
    return con.execute(f"select * from {_checked(con, name)}").pl()


def row_counts(con: duckdb.DuckDBPyConnection, tables: Iterable[str]) -> dict[str, int]:
    """Row count per table or view."""
    return {
        t: con.execute(f"select count(*) from {_checked(con, t)}").fetchone()[0] for t in tables
    }


# --- runs ------------------------------------------------------------------------------------


def run_row(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    """The `runs` row of `run_id` (empty frame when there is none)."""
    return con.execute("select * from runs where run_id = ?", [run_id]).pl()


def run_sources(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(run_id, source) of every run, by run_id."""
    return con.execute("select run_id, source from runs order by run_id").fetchall()


def run_columns(
    con: duckdb.DuckDBPyConnection, run_ids: Sequence[str], columns: Sequence[str]
) -> pl.DataFrame:
    """run_id and `columns` (names of `runs` columns) of the given runs."""
    known = set(table_columns(con, "runs"))
    unknown = [c for c in columns if c not in known]
    if unknown:
        raise ValueError(f"runs has no column(s) {unknown}")
    selected = ", ".join(["run_id", *(f'"{c}"' for c in columns)])
    return con.execute(
        f"select {selected} from runs where list_contains(?::varchar[], run_id) order by run_id",
        [list(run_ids)],
    ).pl()


def run_ids_at_origin(con: duckdb.DuckDBPyConnection, origin: str) -> list[str]:
    """Measured runs (not replays) read from exactly `origin`."""
    rows = con.execute(
        "select run_id from runs where origin = ? and replay_of is null order by run_id", [origin]
    ).fetchall()
    return [r[0] for r in rows]


def run_ids_under(con: duckdb.DuckDBPyConnection, root: str) -> list[str]:
    """run_ids whose origin is `root` or lies inside it (a resolved folder path), sorted."""
    rows = con.execute(
        "select run_id from runs where origin = ? or starts_with(origin, ?) order by run_id",
        [root, root.rstrip("/") + "/"],
    ).fetchall()
    return [row[0] for row in rows]


def cpp_runs_by_length(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> list[tuple]:
    """(run_id, model) of the given runs with schedule cpp, shortest sequence first."""
    return con.execute(
        "select run_id, model from runs where list_contains(?::varchar[], run_id)"
        " and schedule = 'cpp' order by seq_len, run_id",
        [list(run_ids)],
    ).fetchall()


def ingested_at(con: duckdb.DuckDBPyConnection, run_id: str, content_hash: str) -> Any:
    """When `run_id` was first written with this content hash (None: not stored so)."""
    row = con.execute(
        "select ingested_at from runs where run_id = ? and content_hash = ?",
        [run_id, content_hash],
    ).fetchone()
    return row[0] if row else None


STORED_RUN_COUNTED = ("ranks", "slices", "kernels", "comm_ops", "step_breakdown")


def stored_run_rows(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """Per measured run (replays excluded): run_id, origin, content_hash, tags, segmentation,
    dropped_rows, source, then its row count in each of STORED_RUN_COUNTED."""
    counts = " ".join(
        f"left join (select run_id, count(*) as n_{t} from {t} group by run_id) using (run_id)"
        for t in STORED_RUN_COUNTED
    )
    totals = ", ".join(f"coalesce(n_{t}, 0)" for t in STORED_RUN_COUNTED)
    return con.execute(
        "select run_id, origin, content_hash, tags, segmentation, dropped_rows, source,"
        f" {totals} from runs {counts} where replay_of is null"
    ).fetchall()


def run_input_files(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """(run_id, path, sha256) of every stored input file."""
    return con.execute("select run_id, path, sha256 from run_inputs").fetchall()


def quarantine_has(
    con: duckdb.DuckDBPyConnection, path: str, reason: str, content_hash: str | None
) -> bool:
    """Whether the quarantine already holds this (path, reason, content)."""
    row = con.execute(
        "select 1 from quarantine where path = ? and reason = ?"
        " and content_hash is not distinct from ?",
        [path, reason, content_hash],
    ).fetchone()
    return row is not None


# --- slices and chunks -----------------------------------------------------------------------


def run_slices(con: duckdb.DuckDBPyConnection, run_id: str, lanes: Sequence[str]) -> pl.DataFrame:
    """The slices of one run on the given lanes."""
    return con.execute(
        "select * from slices where run_id = ? and list_contains(?::varchar[], lane)",
        [run_id, list(lanes)],
    ).pl()


def slice_start_span(
    con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]
) -> tuple[int | None, int | None]:
    """(earliest, latest) slice start_ns over the given runs."""
    first, last = con.execute(
        "select min(start_ns), max(start_ns) from slices where list_contains(?::varchar[], run_id)",
        [list(run_ids)],
    ).fetchone()
    return first, last


def runs_with_markers_but_no_chunks(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Runs whose host slices carry chunk[...] markers but that have no chunk rows yet."""
    rows = con.execute(
        "select distinct s.run_id from slices as s"
        " where s.lane = 'host' and s.name like 'chunk[%'"
        " and not exists (select 1 from chunks as c where c.run_id = s.run_id)"
        " order by 1"
    ).fetchall()
    return [r[0] for r in rows]


def run_chunks(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    """The chunk rows of one run, by rank, virtual stage, request and k."""
    return con.execute(
        "select * from chunks where run_id = ? order by rank, vstage, request_id, chunk_idx",
        [run_id],
    ).pl()


def chunk_counts(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> dict[str, int]:
    """Chunk rows per run, for the given runs that have any."""
    rows = con.execute(
        "select run_id, count(*) from chunks where list_contains(?::varchar[], run_id)"
        " group by run_id",
        [list(run_ids)],
    ).fetchall()
    return dict(rows)


def measured_chunk_tau(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Rows of the int_chunk_tau relation of measured runs (simulated reruns, replay_of set,
    left out: their chunks re-use measured tau, they are no new repeats)."""
    return con.execute("select * from int_chunk_tau where replay_of is null").pl()
