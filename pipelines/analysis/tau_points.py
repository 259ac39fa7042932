"""The tau_k points to fit: chunks joined with their run configuration (sql/intermediate/
int_chunk_tau.sql), with simulated reruns left out, plus runs that carry chunk markers but have no
chunk rows yet, segmented in memory. One loader for `tracereplay fit`, the demo and Dagster."""

from __future__ import annotations

import duckdb
import polars as pl

from pipelines.warehouse import sql_text

RUN_CONFIG = (
    *("source", "model", "schedule", "chunk_size", "seq_len", "tp", "pp", "vp", "hardware"),
    "attention",
)


def load_tau_points(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    schedule: str | None = None,
    segment: bool = True,
) -> tuple[pl.DataFrame, list[str]]:
    """sql/intermediate/int_chunk_tau.sql on the warehouse's chunks and runs, plus (`segment`)
    the chunks of runs that have chunk markers in their slices but no chunk rows yet, segmented
    in memory with the default marker rule. Simulated reruns of a run (`tracereplay replay`,
    replay_of set) are left out: their chunks re-use measured tau, they are no new repeats.
    Returns (rows, run ids segmented here)."""
    frame = (
        con.execute(sql_text("int_chunk_tau", "intermediate"))
        .pl()
        .filter(pl.col("replay_of").is_null())
    )
    segmented: list[str] = []
    if segment:
        extra = _segment_unchunked(con)
        if extra.height:
            segmented = sorted(extra["run_id"].unique().to_list())
            frame = pl.concat([frame, extra], how="diagonal_relaxed")
    if model:
        frame = frame.filter(pl.col("model") == model)
    if schedule:
        frame = frame.filter(pl.col("schedule") == schedule)
    return frame, segmented


def _segment_unchunked(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    from pipelines.analysis.chunk_store import segment_run
    from pipelines.analysis.curves import mark_partial

    run_ids = [
        row[0]
        for row in con.execute(
            "select distinct s.run_id from slices as s"
            " where s.lane = 'host' and s.name like 'chunk[%'"
            " and not exists (select 1 from chunks as c where c.run_id = s.run_id)"
            " order by 1"
        ).fetchall()
    ]
    parts = [segment_run(con, run_id)[0] for run_id in run_ids]
    if not parts:
        return pl.DataFrame()
    chunks = pl.concat(parts)
    config = con.execute(
        f"select run_id, {', '.join(RUN_CONFIG)} from runs where run_id in "
        f"(select unnest(?::varchar[]))",
        [run_ids],
    ).pl()
    return mark_partial(chunks.join(config, on="run_id", how="left")).rename({"busy_ns": "tau_ns"})
