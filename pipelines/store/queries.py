"""Named reads of a store's connection: the library, the CLI and Dagster call one function each.

Derived relations (int_chunk_tau, ...) are SQL files under sql/ built by
pipelines.store.relations; the functions here only read tables and those relations, and know no
backend (a lake's per-run files reach them as relations made by its session). Writes are the
session's (pipelines.store.base.Session). Table names given as arguments are checked against the
connection's own catalog first.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from pipelines.store.catalog import checked_name, relation_exists, table_columns
from pipelines.store.relations import project_relations
from pipelines.vocabulary.profiler_names import MARKER_NAME_SQL, PROFILER_STEP_PREFIX

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["relation_exists", "table_columns"]  # catalog lookups callers reach through here

# --- catalog ---------------------------------------------------------------------------------


def read_relation(con: duckdb.DuckDBPyConnection, name: str) -> pl.DataFrame:
    """Every row of a table or view."""
    return con.execute(f"select * from {checked_name(con, name)}").pl()


def row_counts(con: duckdb.DuckDBPyConnection, tables: Iterable[str]) -> dict[str, int]:
    """Row count per table or view."""
    return {
        t: con.execute(f"select count(*) from {checked_name(con, t)}").fetchone()[0] for t in tables
    }


# --- runs ------------------------------------------------------------------------------------


def run_row(con: duckdb.DuckDBPyConnection, run_id: str, runs: str = "runs") -> pl.DataFrame:
    """The `runs` row of `run_id` (empty frame when there is none), from `runs` (the table or a
    relation of its rows)."""
    return con.execute(f"select * from {runs} where run_id = ?", [run_id]).pl()


def run_ids_at_origin(con: duckdb.DuckDBPyConnection, origin: str) -> list[str]:
    """Measured runs (not replays) read from exactly `origin`."""
    rows = con.execute(
        "select run_id from runs where origin = ? and replay_of is null order by run_id", [origin]
    ).fetchall()
    return [r[0] for r in rows]


STORED_RUN_COUNTED = ("ranks", "slices", "kernels", "comm_ops", "step_breakdown")
STORED_RUN_COLUMNS = (
    "run_id",
    "origin",
    "content_hash",
    "tags",
    "segmentation",
    "dropped_rows",
    "source",
)


def stored_run_rows(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """STORED_RUN_COLUMNS of every measured run (replays excluded): one read of `runs`, not of
    every run's rows (docs/lake.md, incremental cost)."""
    columns = ", ".join(STORED_RUN_COLUMNS)
    return con.execute(f"select {columns} from runs where replay_of is null").fetchall()


def run_row_counts(
    con: duckdb.DuckDBPyConnection, run_id: str, relations: dict[str, str] | None = None
) -> dict[str, int]:
    """Rows of one run in each of STORED_RUN_COUNTED (`relations`: table -> the relation to
    count it from, default the table)."""
    relations = relations or {}
    counts = " union all ".join(
        f"select '{t}', count(*) from {relations.get(t, t)} where run_id = $run_id"
        for t in STORED_RUN_COUNTED
    )
    return dict(con.execute(counts, {"run_id": run_id}).fetchall())


def derived_slice_count(con: duckdb.DuckDBPyConnection, slices: str) -> int:
    """Rows of `slices` (a relation of one run's slices) that the reader derived rather than
    read: the overlap lanes computed for an input without its own (Kineto, the SQLite export;
    lane 'overlap', category 'derived')."""
    return con.execute(
        f"select count(*) from {slices} where lane = 'overlap' and category = 'derived'"
    ).fetchone()[0]


def run_input_files(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """(run_id, path, sha256) of every stored input file."""
    return con.execute("select run_id, path, sha256 from run_inputs").fetchall()


def rows_of(con: duckdb.DuckDBPyConnection, relation: str) -> pl.DataFrame:
    """Every row of `relation` (SQL made by the store: a table or a scan of some runs' files)."""
    return con.execute(f"select * from {relation}").pl()


def run_sources(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(run_id, source) of every run, by run_id."""
    return con.execute("select run_id, source from runs order by run_id").fetchall()


def run_columns(
    con: duckdb.DuckDBPyConnection, run_ids: Sequence[str] | None, columns: Sequence[str]
) -> pl.DataFrame:
    """run_id and `columns` (names of `runs` columns) of the given runs (None: of every run;
    on a lake only these columns of each run's file are read: 0.5 s at 1,000 runs against
    1.5-3.0 s for every column)."""
    known = set(table_columns(con, "runs"))
    unknown = [c for c in columns if c not in known]
    if unknown:
        raise ValueError(f"runs has no column(s) {unknown}")
    selected = ", ".join(["run_id", *(f'"{c}"' for c in columns)])
    if run_ids is None:
        return con.execute(f"select {selected} from runs order by run_id").pl()
    return con.execute(
        f"select {selected} from runs where list_contains(?::varchar[], run_id) order by run_id",
        [list(run_ids)],
    ).pl()


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


def slices_args_cut_sql(keys: Sequence[str], host_names: bool = False) -> str:
    """The query of `run_slices_args_cut` (parameters: run_id, lanes, and with `host_names` a
    list of names). Its args are cut to `keys`: a
    JSON object of the keys present at the top level, each with its JSON value as DuckDB writes
    it (`json_extract`, one parse per row); NULL when none is present. A reader that takes a
    key with Polars' `json_path_match` after a substring test for the quoted key
    (`launch_links.link_ids`, `device_work.work_slices`) gets the same strings from it.
    With `host_names`, a host slice is kept only when its args name one of `keys` or its name
    is in the list (the third parameter); slices of other lanes are all kept."""
    quoted = [json.dumps(key).replace("'", "''") for key in keys]
    named = " or ".join(f"contains(args, '{key}')" for key in quoted)
    paths = ", ".join(f"'$.{key}'" for key in quoted)
    members = ", ".join(
        f"case when v[{i}] is not null then '{key}:' || v[{i}]::varchar end"
        for i, key in enumerate(quoted, start=1)
    )
    return (
        "select rank, lane, name, category, start_ns, dur_ns,"
        f" nullif('{{' || concat_ws(',', {members}) || '}}', '{{}}') as args"
        " from (select rank, lane, name, category, start_ns, dur_ns,"
        f" case when {named} then json_extract(args, [{paths}]) end as v"
        " from slices where run_id = ? and list_contains(?::varchar[], lane))"
        + (
            " where lane <> 'host' or v is not null or list_contains(?::varchar[], name)"
            if host_names
            else ""
        )
    )


def run_slices_args_cut(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    lanes: Sequence[str],
    keys: Sequence[str],
    host_names: Sequence[str] | None = None,
) -> pl.DataFrame:
    """One run's slices on `lanes` without run_id, thread and step, args cut to `keys`
    (`slices_args_cut_sql`); with `host_names`, only the host slices whose args name one of
    `keys` or whose name is listed."""
    if host_names is None:
        return con.execute(slices_args_cut_sql(keys), [run_id, list(lanes)]).pl()
    query = slices_args_cut_sql(keys, host_names=True)
    return con.execute(query, [run_id, list(lanes), list(host_names)]).pl()


def run_slices_args_cut_batches(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    lanes: Sequence[str],
    keys: Sequence[str],
    host_names: Sequence[str],
    rows: int,
) -> pa.RecordBatchReader:
    """`run_slices_args_cut` with `host_names`, streamed: Arrow batches of about `rows` rows
    (DuckDB runs the query as the batches are read; nothing else may run on `con` meanwhile)."""
    query = slices_args_cut_sql(keys, host_names=True)
    return con.execute(query, [run_id, list(lanes), list(host_names)]).fetch_record_batch(rows)


def run_lane_names(con: duckdb.DuckDBPyConnection, run_id: str, lane: str) -> list[str]:
    """The distinct slice names of one run's `lane`."""
    rows = con.execute(
        "select distinct name from slices where run_id = ? and lane = ?", [run_id, lane]
    ).fetchall()
    return [r[0] for r in rows]


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


def runs_with_markers_in(con: duckdb.DuckDBPyConnection, scans: Sequence[str]) -> list[str]:
    """Run ids whose host slices carry chunk[...] markers, among `scans` (relations of `slices`
    rows, a store's Session.runs_relation)."""
    rows = con.execute(
        " union ".join(
            f"select distinct run_id from {s} where lane = 'host' and {MARKER_NAME_SQL}"
            for s in scans
        )
    ).fetchall()
    return sorted(r[0] for r in rows)


def runs_with_profiler_steps_in(con: duckdb.DuckDBPyConnection, scans: Sequence[str]) -> list[str]:
    """Run ids whose host slices carry ProfilerStep#N windows, among `scans` (relations of
    `slices` rows, a store's Session.runs_relation)."""
    rows = con.execute(
        " union ".join(
            f"select distinct run_id from {s} where lane = 'host'"
            f" and starts_with(name, '{PROFILER_STEP_PREFIX}')"
            for s in scans
        )
    ).fetchall()
    return sorted(r[0] for r in rows)


def run_configuration(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> pl.DataFrame:
    """run_id, model, source, is_untagged, is_replay of `run_ids` from
    sql/staging/stg_run_configuration.sql (an untagged run's model is '(untagged) <run_id>')."""
    return con.execute(
        "select run_id, model, source, is_untagged, replay_of is not null as is_replay"
        " from stg_run_configuration"
        " where run_id in (select unnest(?::varchar[]))",
        [list(run_ids)],
    ).pl()


def fit_inputs(con: duckdb.DuckDBPyConnection, runs: str = "runs") -> pl.DataFrame:
    """What a fit of measured runs depends on, one row per run: run_id, content_hash,
    segmentation and the configuration columns (pipelines.analysis.tau.curve_keys.CONFIG_KEYS), from
    the `runs` table or the relation (SQL) `runs` of its rows. The configuration is the one of
    sql/staging/stg_run_configuration.sql (an untagged run's model is '(untagged) <run_id>', as
    int_chunk_tau names its curve), read over `runs`."""

    configuration = project_relations()[0]["stg_run_configuration"].select
    return con.execute(
        f"with runs as (select * from {runs}) select run_id, content_hash, segmentation, source,"
        " model, schedule, chunk_size, seq_len, tp, pp, vp, hardware, attention"
        f" from ({configuration}) as r where replay_of is null order by run_id"
    ).pl()


# --- run views (tracereplay runs / show) --------------------------------------------------


RUN_SUMMARY_COLUMNS = (
    "run_id, source, model, schedule, seq_len, chunk_size, ranks, collected_at, makespan_ns,"
    " chunks, replay_of, origin"
)


def run_list(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pl.DataFrame:
    """One row per run of sql/marts/fct_run_summary.sql, oldest collected first."""
    if not run_ids:
        return pl.DataFrame()
    return con.execute(
        f"select {RUN_SUMMARY_COLUMNS} from fct_run_summary"
        " where list_contains(?::varchar[], run_id) order by collected_at nulls last, run_id",
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
    """Per rank of one run: sql/marts/fct_rank_step_totals.sql."""
    return con.execute(
        "select * exclude (run_id) from fct_rank_step_totals where run_id = ? order by rank",
        [run_id],
    ).pl()


def top_kernels(con: duckdb.DuckDBPyConnection, run_id: str, top: int = 10) -> pl.DataFrame:
    """The `top` kernels of one run by total device time: sql/marts/fct_kernel_totals.sql."""
    return con.execute(
        'select name, count, total_ns, max_ns, ranks, "from" from fct_kernel_totals'
        " where run_id = ? order by total_ns desc, name limit ?",
        [run_id, top],
    ).pl()


def has_chunk_markers(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    row = con.execute(
        f"select 1 from slices where run_id = ? and lane = 'host' and {MARKER_NAME_SQL} limit 1",
        [run_id],
    ).fetchone()
    return row is not None


def has_profiler_steps(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether the run's host slices carry a ProfilerStep#N window (what `chunks
    --profiler-steps` cuts by)."""
    row = con.execute(
        "select 1 from slices where run_id = ? and lane = 'host'"
        f" and starts_with(name, '{PROFILER_STEP_PREFIX}') limit 1",
        [run_id],
    ).fetchone()
    return row is not None


def chunk_summary(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    """Per rank and virtual stage of one run: sql/marts/fct_chunk_summary.sql."""
    return con.execute(
        "select * exclude (run_id) from fct_chunk_summary where run_id = ? order by rank, vstage",
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
    """The `top` communication ops of one run by total time: sql/marts/fct_comm_op_totals.sql
    (op, is_p2p, count, total_ns, wait_ns, ranks)."""
    return con.execute(
        "select * exclude (run_id) from fct_comm_op_totals where run_id = ?"
        " order by total_ns desc, op limit ?",
        [run_id, top],
    ).pl()


def run_ids_where(con: duckdb.DuckDBPyConnection, where: str, params: list[object]) -> list[str]:
    """Run ids matching a WHERE clause composed by pipelines.selectors (columns of runs only),
    oldest first."""
    rows = con.execute(
        f"select run_id from runs where {where} order by collected_at nulls last, run_id", params
    ).fetchall()
    return [r[0] for r in rows]


def run_copies(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """run_id -> the earlier run it is a byte-identical copy of (int_run_copies)."""
    return dict(con.execute("select run_id, copy_of from int_run_copies").fetchall())


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
    """fct_run_metric_values rows of the given runs and metrics, oldest first, a run's metrics by
    name (the order a scan meets its series in: by collection time and run alone, a run's metrics
    came in no set order, and a change search listed near-tied points in either order);
    `collected_only`: runs with a collection time."""
    return con.execute(
        "select * from fct_run_metric_values where run_id in (select unnest(?::varchar[]))"
        " and metric in (select unnest(?::varchar[]))"
        + (" and collected_at is not null" if collected_only else "")
        + " order by collected_at, run_id, metric",
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
        " and collected_at is not null and run_id not in (select run_id from int_run_copies)"
        " order by collected_at, run_id",
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


# --- schedule comparison (pipelines/analysis/comparison/schedule_table.py) ------------------------


def schedule_breakdown(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> pl.DataFrame:
    """fct_run_metrics rows (run facts, compute / bubble / exposed comm / total with the bubble
    and total over each rank's window and over the run's, TTFT) of the given runs and of their
    stored reruns (replay_of among them), oldest first."""
    return con.execute(
        "select run_id, replay_of, model, schedule, seq_len, chunk_size, tp, pp, vp, hardware,"
        " collected_at, compute_ns, bubble_ns, exposed_comm_ns, total_ns, run_bubble_ns,"
        " run_total_ns, ttft_ns, n_steps"
        " from fct_run_metrics where run_id in (select unnest(?::varchar[]))"
        " or replay_of in (select unnest(?::varchar[])) order by collected_at, run_id",
        [run_ids, run_ids],
    ).pl()


def replays_of(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> list[str]:
    """Run ids of the simulated reruns (`replay_of` set) of the given runs, sorted."""
    rows = con.execute(
        "select run_id from runs where list_contains(?::varchar[], replay_of) order by run_id",
        [list(run_ids)],
    ).fetchall()
    return [r[0] for r in rows]


def run_freshness(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> dict[str, Any]:
    """Of the given runs: how many, the first and last collection time, the last ingest time."""
    row = con.execute(
        "select count(*), min(collected_at), max(collected_at), max(ingested_at) from runs"
        " where list_contains(?::varchar[], run_id)",
        [list(run_ids)],
    ).fetchone()
    return {
        "runs": row[0],
        "first_collected": row[1],
        "last_collected": row[2],
        "last_ingested": row[3],
    }


# --- operator-latency tables (latency_points, int_table_tau; docs/latency_tables.md) ---------


def table_tau(
    con: duckdb.DuckDBPyConnection, table_ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Rows of int_table_tau (tau_k points of the stored latency tables); of `table_ids` only
    when given."""
    if table_ids is None:
        return con.execute("select * from int_table_tau").pl()
    return con.execute(
        "select * from int_table_tau where list_contains(?::varchar[], run_id)",
        [list(table_ids)],
    ).pl()


def latency_table_hashes(con: duckdb.DuckDBPyConnection, id_prefix: str) -> list[tuple[str, str]]:
    """(table id, content hash) of every stored latency table (ids start with `id_prefix`),
    sorted. The prefix filter lets a lake skip every run's (empty) latency_points file unopened
    (DuckDB prunes hive partitions by the filter: 0.35-0.56 s -> 0.06-0.09 s at 1,000 runs)."""
    return con.execute(
        "select distinct run_id, content_hash from latency_points"
        " where starts_with(run_id, ?) order by all",
        [id_prefix],
    ).fetchall()


def table_curve_configs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per latency table and curve configuration of int_table_tau: run_id (the table
    id) and the configuration columns, `operator` included."""
    return con.execute(
        "select distinct run_id, source, model, schedule, chunk_size, seq_len, tp, pp, vp,"
        " hardware, attention, operator from int_table_tau order by all"
    ).pl()
