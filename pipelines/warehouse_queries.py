"""Every warehouse read the library, the CLI and Dagster need, one named function each.

Derived relations (int_chunk_tau, ...) are SQL files under sql/ built by pipelines.sql_runner;
the functions here only read tables and those relations. Writes live in pipelines.warehouse.
Table names given as arguments are checked against the warehouse's own catalog first.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.profiler_names import MARKER_NAME_SQL

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


def _of_run(con: duckdb.DuckDBPyConnection, table: str, run_id: str) -> str:
    """The relation to read one run's rows of a run table from: the table, or in a lake that
    run's partition alone (pipelines.lake.run_scan; an ingest connection has no run views)."""
    root = lake_root(con)
    if root is None:
        return table
    from pipelines import lake

    return lake.run_scan(Path(root), table, run_id)


def _catalog(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]] | None:
    """The lake's measured runs from its identity catalog (pipelines.lake_catalog), else None."""
    root = lake_root(con)
    if root is None:
        return None
    from pipelines import lake_catalog

    return lake_catalog.measured(Path(root))


def run_row(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    """The `runs` row of `run_id` (empty frame when there is none)."""
    return con.execute(
        f"select * from {_of_run(con, 'runs', run_id)} where run_id = ?", [run_id]
    ).pl()


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
    catalog = _catalog(con)
    if catalog is not None:
        return sorted(e["run_id"] for e in catalog if e["origin"] == origin)
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
    dropped_rows, source. (Row counts: run_row_counts, for one run, so that knowing the stored
    runs costs one read of `runs`, not of every run's rows: docs/lake.md, incremental cost.)
    A lake: its identity catalog, no Parquet file opened."""
    catalog = _catalog(con)
    if catalog is not None:
        columns = ("run_id", "origin", "content_hash", "tags", "segmentation", "dropped_rows")
        return [(*(e[c] for c in columns), e["source"]) for e in catalog]
    return con.execute(
        "select run_id, origin, content_hash, tags, segmentation, dropped_rows, source"
        " from runs where replay_of is null"
    ).fetchall()


def run_row_counts(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, int]:
    """Rows of one run in each of STORED_RUN_COUNTED."""
    counts = " union all ".join(
        f"select '{t}', count(*) from {_of_run(con, t, run_id)} where run_id = $run_id"
        for t in STORED_RUN_COUNTED
    )
    return dict(con.execute(counts, {"run_id": run_id}).fetchall())


def run_input_files(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """(run_id, path, sha256) of every stored input file (a lake: of its measured runs, from
    the identity catalog)."""
    catalog = _catalog(con)
    if catalog is not None:
        return [(e["run_id"], path, sha) for e in catalog for path, sha in e["files"]]
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


def runs_with_markers_but_no_chunks(
    con: duckdb.DuckDBPyConnection, run_ids: Sequence[str] | None = None
) -> list[str]:
    """Runs whose host slices carry chunk[...] markers but that have no chunk rows yet (among
    `run_ids` when given: only their slices are scanned)."""
    among = "" if run_ids is None else " and list_contains(?::varchar[], s.run_id)"
    rows = con.execute(
        "select distinct s.run_id from slices as s"
        f" where s.lane = 'host' and {MARKER_NAME_SQL.replace('name', 's.name')}" + among + ""
        " and not exists (select 1 from chunks as c where c.run_id = s.run_id)"
        " order by 1",
        [] if run_ids is None else [list(run_ids)],
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


def measured_chunk_tau(
    con: duckdb.DuckDBPyConnection, run_ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Rows of the int_chunk_tau relation of measured runs (simulated reruns, replay_of set,
    left out: their chunks re-use measured tau, they are no new repeats); of `run_ids` only
    when given."""
    if run_ids is None:
        return con.execute("select * from int_chunk_tau where replay_of is null").pl()
    return con.execute(
        "select * from int_chunk_tau where replay_of is null"
        " and list_contains(?::varchar[], run_id)",
        [list(run_ids)],
    ).pl()


def fit_inputs_of(con: duckdb.DuckDBPyConnection, scans: Sequence[str]) -> pl.DataFrame:
    """fit_inputs over the union of `scans` (relations of `runs` rows, pipelines.lake.run_scan)."""
    return fit_inputs(con, "(" + " union all ".join(f"select * from {s}" for s in scans) + ")")


def union_rows(con: duckdb.DuckDBPyConnection, scans: Sequence[str]) -> pl.DataFrame:
    """Rows of the union of `scans` (relations of one table's rows, pipelines.lake.run_scan)."""
    return con.execute(" union all ".join(f"select * from {s}" for s in scans)).pl()


def runs_with_markers_in(con: duckdb.DuckDBPyConnection, scans: Sequence[str]) -> list[str]:
    """Run ids whose host slices carry chunk[...] markers, among `scans` (relations of `slices`
    rows, pipelines.lake.run_scan)."""
    rows = con.execute(
        " union ".join(
            f"select distinct run_id from {s} where lane = 'host' and {MARKER_NAME_SQL}"
            for s in scans
        )
    ).fetchall()
    return sorted(r[0] for r in rows)


def database_path(con: duckdb.DuckDBPyConnection) -> str | None:
    """The file of the connection's current database (None: in memory)."""
    row = con.execute(
        "select path from duckdb_databases() where database_name = current_database()"
    ).fetchone()
    return row[0] if row else None


def setting(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """A DuckDB setting's current value, as text (e.g. memory_limit '18.8 GiB'). `name` is a
    setting's name, never user text (no bound parameter: binding one imports pandas)."""
    return con.execute(f"select current_setting('{name}')").fetchone()[0]


def stored_view_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The names of the views stored in the connection's database (temporary ones left out)."""
    rows = con.execute(
        "select view_name from duckdb_views() where not internal and not temporary"
    ).fetchall()
    return {row[0] for row in rows}


def stored_views_signature(con: duckdb.DuckDBPyConnection, table: str) -> str | None:
    """The signature held in `table` (pipelines.warehouse.lake_views_signature), else None."""
    if not relation_exists(con, table):
        return None
    row = con.execute(f'select signature from "{table}" limit 1').fetchone()
    return row[0] if row else None


def fit_inputs(con: duckdb.DuckDBPyConnection, runs: str = "runs") -> pl.DataFrame:
    """What a fit of measured runs depends on, one row per run: run_id, content_hash,
    segmentation and the configuration columns (pipelines.analysis.curve_keys.CONFIG_KEYS), from
    the `runs` table or the relation (SQL) `runs` of its rows."""
    return con.execute(
        "select run_id, content_hash, segmentation, model, schedule, chunk_size, seq_len,"
        f" tp, pp, vp, hardware, attention from {runs} as r where replay_of is null"
        " order by run_id"
    ).pl()


# --- run views (tracereplay runs / show) --------------------------------------------------


def run_list(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pl.DataFrame:
    """One row per run: facts, rank count, makespan (first device/host event start to last end,
    else the chunk span), whether chunks are stored."""
    if not run_ids:
        return pl.DataFrame()
    return con.execute(
        """
        with sel as (select unnest(?::varchar[]) as run_id),
        span as (
            select run_id, max(start_ns + dur_ns) - min(start_ns) as makespan_ns
            from slices where run_id in (select run_id from sel) group by run_id
        ),
        kernel_span as (
            select run_id, max(start_ns + dur_ns) - min(start_ns) as kernel_span_ns
            from kernels where run_id in (select run_id from sel) group by run_id
        ),
        chunk_span as (
            select run_id, count(*) as chunks, max(end_ns) - min(start_ns) as chunk_span_ns
            from chunks where run_id in (select run_id from sel) group by run_id
        ),
        rank_count as (
            select run_id, count(*) as ranks from ranks
            where run_id in (select run_id from sel) group by run_id
        )
        select r.run_id, r.source, r.model, r.schedule, r.seq_len, r.chunk_size,
               coalesce(k.ranks, 0) as ranks, r.collected_at,
               coalesce(s.makespan_ns, ks.kernel_span_ns, c.chunk_span_ns) as makespan_ns,
               coalesce(c.chunks, 0) as chunks, r.replay_of, r.origin
        from runs r join sel using (run_id)
        left join span s using (run_id)
        left join kernel_span ks using (run_id)
        left join chunk_span c using (run_id)
        left join rank_count k using (run_id)
        order by r.collected_at nulls last, r.run_id
        """,
        [run_ids],
    ).pl()


def run_record(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    frame = con.execute("select * from runs where run_id = ?", [run_id]).pl()
    if frame.is_empty():
        return None
    row = frame.row(0, named=True)
    for key in ("tags", "software", "dropped_rows", "segmentation"):
        if row.get(key):
            with contextlib.suppress(ValueError):
                row[key] = json.loads(row[key])
    return row


def breakdown_by_rank(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    """Per rank: the preferred breakdown row summed over its steps, with the derived row's
    disagreement with the profiler where it has one."""
    return con.execute(
        """
        select rank, count(*) as steps,
               string_agg(distinct origin, '+' order by origin) as origin,
               bool_and(coalesce(complete, true)) as complete,
               sum(computing_ns)::bigint as computing_ns,
               sum(comm_not_overlapped_ns)::bigint as comm_not_overlapped_ns,
               sum(overlapped_ns)::bigint as overlapped_ns,
               sum(free_ns)::bigint as free_ns,
               sum(stage_ns)::bigint as stage_ns,
               sum(bubble_ns)::bigint as bubble_ns,
               sum(p2p_bubble_ns)::bigint as p2p_bubble_ns,
               any_value(derived_incomplete_reason) filter (where derived_complete = false)
                   as derived_incomplete_reason,
               any_value(reference_origin) as reference_origin,
               sum(derived_stage_diff_ns)::bigint as derived_stage_diff_ns,
               min(derived_coverage) as derived_coverage
        from int_step_breakdown_preferred
        where run_id = ?
        group by rank order by rank
        """,
        [run_id],
    ).pl()


def top_kernels(con: duckdb.DuckDBPyConnection, run_id: str, top: int = 10) -> pl.DataFrame:
    """Kernels by total device time (kernel_details rows, else compute-lane slices)."""
    frame = con.execute(
        """
        select name, count(*) as count, sum(dur_ns)::bigint as total_ns, max(dur_ns) as max_ns,
               count(distinct rank) as ranks
        from kernels
        where run_id = ? and not coalesce(is_comm, false)
            and coalesce(work_class, 'compute') not in ('memcpy', 'memset')
        group by name order by total_ns desc, name limit ?
        """,
        [run_id, top],
    ).pl()
    if frame.height:
        return frame.with_columns(pl.lit("kernel_details").alias("from"))
    return con.execute(
        """
        select name, count(*) as count, sum(dur_ns)::bigint as total_ns, max(dur_ns) as max_ns,
               count(distinct rank) as ranks, 'trace' as "from"
        from slices
        where run_id = ? and lane = 'compute'
            and coalesce(category, '') not in ('gpu_memcpy', 'gpu_memset', 'gpu_user_annotation')
        group by name order by total_ns desc, name limit ?
        """,
        [run_id, top],
    ).pl()


def has_chunk_markers(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    row = con.execute(
        f"select 1 from slices where run_id = ? and lane = 'host' and {MARKER_NAME_SQL} limit 1",
        [run_id],
    ).fetchone()
    return row is not None


def chunk_summary(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    """Per rank and virtual stage: chunks, requests, first and last index, busy time."""
    return con.execute(
        """
        select rank, vstage, count(*) as chunks, count(distinct request_id) as requests,
               min(chunk_idx) as first_k, max(chunk_idx) as last_k,
               avg(busy_ns) as mean_busy_ns, min(busy_ns) as min_busy_ns,
               max(busy_ns) as max_busy_ns
        from chunks where run_id = ? group by rank, vstage order by rank, vstage
        """,
        [run_id],
    ).pl()


def match_run_id(con: duckdb.DuckDBPyConnection, text: str) -> list[str]:
    """Run ids equal to `text`, else those starting with it (a unique prefix is enough)."""
    exact = con.execute("select run_id from runs where run_id = ?", [text]).fetchall()
    if exact:
        return [exact[0][0]]
    rows = con.execute(
        "select run_id from runs where starts_with(run_id, ?) order by run_id", [text]
    ).fetchall()
    return [r[0] for r in rows]


def top_comm_ops(con: duckdb.DuckDBPyConnection, run_id: str, top: int = 10) -> pl.DataFrame:
    """Communication ops of a run by total time, names normalised (op_name,
    pipelines/sql_functions.py): op, is_p2p, count, total_ns, wait_ns, ranks."""
    return con.execute(
        """
        select op_name(op) as op, coalesce(is_p2p, false) as is_p2p, count(*) as count,
               sum(dur_ns)::bigint as total_ns, sum(wait_ns)::bigint as wait_ns,
               count(distinct rank) as ranks
        from comm_ops where run_id = ?
        group by all order by total_ns desc, op limit ?
        """,
        [run_id, top],
    ).pl()


def run_ids_where(con: duckdb.DuckDBPyConnection, where: str, params: list[object]) -> list[str]:
    """Run ids matching a WHERE clause composed by pipelines.selectors (columns of runs only),
    oldest first."""
    rows = con.execute(
        f"select run_id from runs where {where} order by collected_at nulls last, run_id", params
    ).fetchall()
    return [r[0] for r in rows]


def distinct_run_values(
    con: duckdb.DuckDBPyConnection, expression: str, params: list[object]
) -> list[str]:
    """Distinct non-null values of an expression over measured runs (selector hints)."""
    rows = con.execute(
        f"select distinct {expression} as v from runs where replay_of is null and v is not null"
        " order by v",
        params,
    ).fetchall()
    return [r[0] for r in rows]


def measured_run_span(con: duckdb.DuckDBPyConnection) -> tuple[int, Any, Any]:
    """(count, first collected day, last collected day) of the measured runs."""
    row = con.execute(
        "select count(*), min(collected_at)::date, max(collected_at)::date from runs"
        " where replay_of is null"
    ).fetchone()
    return row[0], row[1], row[2]


# --- comparison marts (compare / regressions / explain) ---------------------------------------


def metric_values(
    con: duckdb.DuckDBPyConnection,
    run_ids: list[str],
    metrics: list[str],
    collected_only: bool = False,
) -> pl.DataFrame:
    """fct_run_metric_values rows of the given runs and metrics, oldest first; `collected_only`:
    runs with a collection time."""
    return con.execute(
        "select * from fct_run_metric_values where run_id in (select unnest(?::varchar[]))"
        " and metric in (select unnest(?::varchar[]))"
        + (" and collected_at is not null" if collected_only else "")
        + " order by collected_at, run_id",
        [run_ids, metrics],
    ).pl()


def config_run_history(
    con: duckdb.DuckDBPyConnection, config: dict[str, Any]
) -> list[tuple[str, Any]]:
    """(run_id, collected_at) of the measured runs of one configuration (its run columns given in
    `config`, NULL matching NULL), oldest first."""
    where = " and ".join(f'"{k}" is not distinct from ?' for k in config)
    return con.execute(
        f"select run_id, collected_at from runs where {where or 'true'} and replay_of is null"
        " and collected_at is not null order by collected_at, run_id",
        list(config.values()),
    ).fetchall()


def op_time_by_run(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pl.DataFrame:
    """fct_op_time_by_run rows (run_id, kind, op, n_launches, total_ns) of the given runs."""
    return con.execute(
        "select run_id, kind, op, n_launches, total_ns::double as total_ns from fct_op_time_by_run"
        " where run_id in (select unnest(?::varchar[]))",
        [run_ids],
    ).pl()


def run_tau_parameters(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pl.DataFrame:
    """run_id, tau_slope_ns, tau_intercept_ns of the given runs that have a tau fit."""
    return con.execute(
        "select run_id, tau_slope_ns, tau_intercept_ns from fct_run_metrics"
        " where run_id in (select unnest(?::varchar[])) and tau_slope_ns is not null",
        [run_ids],
    ).pl()


# --- schedule comparison (pipelines/analysis/schedules.py) ------------------------------------


def schedule_breakdown(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pl.DataFrame:
    """fct_run_metrics rows (run facts, compute / bubble / exposed comm / total, TTFT) of the
    given runs and of their stored reruns (replay_of among them), oldest first."""
    return con.execute(
        "select run_id, replay_of, model, schedule, seq_len, chunk_size, tp, pp, vp, hardware,"
        " collected_at, compute_ns, bubble_ns, exposed_comm_ns, total_ns, ttft_ns, n_steps"
        " from fct_run_metrics where run_id in (select unnest(?::varchar[]))"
        " or replay_of in (select unnest(?::varchar[])) order by collected_at, run_id",
        [run_ids, run_ids],
    ).pl()


# --- the lake ----------------------------------------------------------------------------------


def lake_root(con: duckdb.DuckDBPyConnection) -> str | None:
    """The lake folder a connection's canonical views read (pipelines.lake.attach), else None."""
    # looked up in the catalog first: a failing query would abort the caller's transaction
    exists = con.execute(
        "select count(*) from duckdb_views() where view_name = 'tracereplay_lake' and temporary"
    ).fetchone()
    if not exists or not exists[0]:
        return None
    row = con.execute("select root from tracereplay_lake").fetchone()
    return row[0] if row else None
