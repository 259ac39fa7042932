"""The tau_k points to fit: the `int_chunk_tau` relation (sql/intermediate/int_chunk_tau.sql:
chunks joined with their run configuration, partial remainder chunks flagged) of measured runs,
plus runs that carry chunk markers but have no chunk rows yet, segmented in memory and put through
the same SQL, plus the points of stored operator-latency tables (int_table_tau). One loader for
`tracereplay fit`, the demo and Dagster."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import polars as pl

from pipelines.analysis.tau.table_points import is_table_id, table_tau_points
from pipelines.store import Session, functions, queries, relations
from pipelines.store.insert import insert_frame
from pipelines.store.schema import ddl_text

PER_RUN_SCANS_UP_TO = 50
"""Up to this many given runs are read through the store's per-run relation
(Session.runs_relation); in a lake the views glob every run's folder, which at 1,000 runs cost
more than the new run's own rows (docs/lake.md, incremental fit)."""


def load_tau_points(
    session: Session,
    model: str | None = None,
    schedule: str | None = None,
    segment: bool = True,
    run_ids: Sequence[str] | None = None,
) -> tuple[pl.DataFrame, list[str]]:
    """Rows of `int_chunk_tau` for measured runs (simulated reruns, replay_of set, are left
    out: their chunks re-use measured tau, they are no new repeats), plus (`segment`) the chunks
    of runs that have chunk markers in their slices but no chunk rows yet, segmented in memory
    with each run's rule; of `run_ids` only when given (only their chunks and slices are read).
    Operator-latency tables' points (int_table_tau, table ids `lt-...`: among `run_ids` when
    given) are added, with their `operator` column (NULL for runs).
    Returns (rows, run ids segmented here)."""
    con = session.con
    tables = table_tau_points(
        con, None if run_ids is None else [key for key in run_ids if is_table_id(key)]
    )
    if run_ids is not None:
        run_ids = [key for key in run_ids if not is_table_id(key)]
    per_run = run_ids is not None and len(run_ids) <= PER_RUN_SCANS_UP_TO
    if per_run:
        frame, unchunked = _runs_tau(session, list(run_ids))
    else:
        frame = queries.measured_chunk_tau(con, run_ids)
    segmented: list[str] = []
    if segment and (not per_run or unchunked):
        extra = _segment_unchunked(con, unchunked if per_run else run_ids)
        if extra.height:
            segmented = sorted(extra["run_id"].unique().to_list())
            frame = pl.concat([frame, extra], how="diagonal_relaxed")
    if tables.height:
        frame = pl.concat([frame, tables], how="diagonal_relaxed")
    if model:
        frame = frame.filter(pl.col("model") == model)
    if schedule:
        frame = frame.filter(pl.col("schedule") == schedule)
    return frame, segmented


def _runs_tau(session: Session, run_ids: list[str]) -> tuple[pl.DataFrame, list[str]]:
    """`int_chunk_tau` rows of `run_ids` (measured runs only) from the store's per-run
    relations, and those of them that have chunk markers in their host slices but no chunk
    rows."""
    if not run_ids:
        return queries.measured_chunk_tau(session.con, []), []
    chunks = session.rows_of_runs("chunks", run_ids)
    runs = session.rows_of_runs("runs", run_ids)
    frame = chunk_tau_of(chunks, runs)
    chunked = set(chunks["run_id"].unique().to_list())
    bare = [run_id for run_id in run_ids if run_id not in chunked]
    unchunked = (
        queries.runs_with_markers_in(session.con, [session.runs_relation("slices", bare)])
        if bare
        else []
    )
    return frame, unchunked


def _segment_unchunked(
    con: duckdb.DuckDBPyConnection, among: Sequence[str] | None = None
) -> pl.DataFrame:
    from pipelines.analysis.chunks.chunk_store import segment_run

    run_ids = queries.runs_with_markers_but_no_chunks(con, among)
    parts = [segment_run(con, run_id)[0] for run_id in run_ids]
    if not parts:
        return pl.DataFrame()
    runs = queries.run_columns(con, run_ids, queries.table_columns(con, "runs")[1:])
    return chunk_tau_of(pl.concat(parts), runs)


def chunk_tau_of(chunks: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """`int_chunk_tau` (measured runs) over chunk and run rows held in memory: the frames stand
    in for the `chunks` and `runs` tables of a scratch DuckDB, conformed to the canonical
    columns, where int_chunk_tau and what it reads are built from sql/ as everywhere else (only
    those: building every view took ~0.1 s, docs/lake.md)."""
    scratch = duckdb.connect()
    try:
        for table, frame in (("runs", runs), ("chunks", chunks)):
            scratch.execute(ddl_text(table))
            insert_frame(scratch, table, frame)
        functions.register(scratch)
        relations.build(scratch, ["int_chunk_tau"], temporary=True)
        return queries.measured_chunk_tau(scratch)
    finally:
        scratch.close()


def flag_partial_chunks(chunks: pl.DataFrame) -> pl.DataFrame:
    """`chunks` (any frame with run_id, vstage, request_id, chunk_idx, tokens) with the
    is_last_chunk and is_partial columns of sql/intermediate/int_chunk_flags.sql, computed by
    that file in a scratch DuckDB where the frame stands in for the `chunks` table."""
    scratch = duckdb.connect()
    try:
        scratch.register("chunks", chunks.to_arrow())
        relations.build(scratch, ["int_chunk_flags"], temporary=True)
        return queries.read_relation(scratch, "int_chunk_flags")
    finally:
        scratch.close()
