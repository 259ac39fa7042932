"""The tau_k points to fit: the `int_chunk_tau` relation (sql/intermediate/int_chunk_tau.sql:
chunks joined with their run configuration, partial remainder chunks flagged) of measured runs,
plus runs that carry chunk markers but have no chunk rows yet, segmented in memory and put through
the same SQL. One loader for `tracereplay fit`, the demo and Dagster."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import polars as pl

from pipelines import sql_runner, warehouse
from pipelines import warehouse_queries as queries


def load_tau_points(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    schedule: str | None = None,
    segment: bool = True,
    run_ids: Sequence[str] | None = None,
) -> tuple[pl.DataFrame, list[str]]:
    """Rows of `int_chunk_tau` for measured runs (simulated reruns, replay_of set, are left
    out: their chunks re-use measured tau, they are no new repeats), plus (`segment`) the chunks
    of runs that have chunk markers in their slices but no chunk rows yet, segmented in memory
    with each run's rule; of `run_ids` only when given (only their chunks and slices are read).
    Returns (rows, run ids segmented here)."""
    frame = queries.measured_chunk_tau(con, run_ids)
    segmented: list[str] = []
    if segment:
        extra = _segment_unchunked(con, run_ids)
        if extra.height:
            segmented = sorted(extra["run_id"].unique().to_list())
            frame = pl.concat([frame, extra], how="diagonal_relaxed")
    if model:
        frame = frame.filter(pl.col("model") == model)
    if schedule:
        frame = frame.filter(pl.col("schedule") == schedule)
    return frame, segmented


def _segment_unchunked(
    con: duckdb.DuckDBPyConnection, among: Sequence[str] | None = None
) -> pl.DataFrame:
    from pipelines.analysis.chunk_store import segment_run

    run_ids = queries.runs_with_markers_but_no_chunks(con, among)
    parts = [segment_run(con, run_id)[0] for run_id in run_ids]
    if not parts:
        return pl.DataFrame()
    runs = queries.run_columns(con, run_ids, queries.table_columns(con, "runs")[1:])
    return chunk_tau_of(pl.concat(parts), runs)


def chunk_tau_of(chunks: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """`int_chunk_tau` (measured runs) over chunk and run rows held in memory: they are written
    to a scratch in-memory warehouse whose views are built from sql/ as everywhere else."""
    scratch = warehouse.connect(":memory:")
    try:
        warehouse.insert_frame(scratch, "runs", runs)
        warehouse.insert_frame(scratch, "chunks", chunks)
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
        sql_runner.build(scratch, ["int_chunk_flags"], temporary=True)
        return queries.read_relation(scratch, "int_chunk_flags")
    finally:
        scratch.close()
