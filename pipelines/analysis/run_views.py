"""What `tracereplay runs` and `tracereplay show` report about stored runs: plain data (Polars
frames and dicts), no formatting. The step breakdown comes from
sql/intermediate/int_step_breakdown_preferred.sql (one trustworthy row per run, rank and step;
docs/step_breakdown.md).
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import duckdb
import polars as pl

# group hashes and instance counters in HCCL op names (hcom_allReduce__123_0_1): one op, not many
_OP_SUFFIX = re.compile(r"(__\d+(_\d+)*|_\d+_\d+_\d+)$")
TOP = 10
# derived and profiler figures closer than this are "the same" (docs/step_breakdown.md: complete
# ranks of the real sets agree within 0.12 µs)
SAME_NS = 1_000


def normalise_op(name: str) -> str:
    """An HCCL op name without its group hash / counters: hcom_allReduce__123_0_1 ->
    hcom_allReduce."""
    return _OP_SUFFIX.sub("", name or "")


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


@dataclass
class RunView:
    """Everything `tracereplay show` prints about one run."""

    run: dict[str, Any]
    breakdown: pl.DataFrame  # per rank, summed over steps
    kernels: pl.DataFrame  # top kernels by total time
    comm: pl.DataFrame  # top comm ops by total time (normalised names)
    chunks: pl.DataFrame  # per rank and virtual stage
    fits: pl.DataFrame  # tau fit per curve of this run (may be empty)
    notes: list[str] = field(default_factory=list)
    has_markers: bool = False

    def as_json(self) -> dict[str, Any]:
        def rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
            return frame.to_dicts() if frame.height else []

        return {
            "run": self.run,
            "breakdown": rows(self.breakdown),
            "top_kernels": rows(self.kernels),
            "top_comm_ops": rows(self.comm),
            "chunks": rows(self.chunks),
            "tau_fits": rows(self.fits),
            "notes": self.notes,
        }


def _run_row(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
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


def top_kernels(con: duckdb.DuckDBPyConnection, run_id: str, top: int = TOP) -> pl.DataFrame:
    """Kernels by total device time (kernel_details rows, else compute-lane slices)."""
    frame = con.execute(
        """
        select name, count(*) as count, sum(dur_ns)::bigint as total_ns, max(dur_ns) as max_ns,
               count(distinct rank) as ranks
        from kernels where run_id = ? and not coalesce(is_comm, false)
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
        from slices where run_id = ? and lane = 'compute'
        group by name order by total_ns desc, name limit ?
        """,
        [run_id, top],
    ).pl()


def top_comm_ops(con: duckdb.DuckDBPyConnection, run_id: str, top: int = TOP) -> pl.DataFrame:
    """Communication ops by total time, names normalised (normalise_op)."""
    frame = con.execute(
        "select op, coalesce(is_p2p, false) as is_p2p, dur_ns, wait_ns, rank"
        " from comm_ops where run_id = ?",
        [run_id],
    ).pl()
    if frame.is_empty():
        return frame
    return (
        frame.with_columns(
            pl.col("op").map_elements(normalise_op, return_dtype=pl.String).alias("op")
        )
        .group_by("op", "is_p2p")
        .agg(
            pl.len().alias("count"),
            pl.col("dur_ns").sum().alias("total_ns"),
            pl.col("wait_ns").sum().alias("wait_ns"),
            pl.col("rank").n_unique().alias("ranks"),
        )
        .sort(["total_ns", "op"], descending=[True, False])
        .head(top)
    )


def chunk_table(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
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


def _has_markers(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    row = con.execute(
        "select 1 from slices where run_id = ? and lane = 'host' and name like 'chunk[%' limit 1",
        [run_id],
    ).fetchone()
    return row is not None


def _run_fits(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    from pipelines.analysis.curves import fit_curves
    from pipelines.analysis.tau_points import load_tau_points

    points, _ = load_tau_points(con, segment=False)
    if points.is_empty() or "run_id" not in points.columns:
        return pl.DataFrame()
    mine = points.filter(pl.col("run_id") == run_id)
    if mine.is_empty():
        return pl.DataFrame()
    return fit_curves(mine, n_boot=200)


def _notes(view: RunView) -> list[str]:
    notes = []
    frame = view.breakdown
    for row in frame.iter_rows(named=True) if frame.height else []:
        reason = row["derived_incomplete_reason"]
        if reason:
            notes.append(
                f"rank {row['rank']}: our derived breakdown is incomplete ({reason}); the"
                f" {row['origin']} figures are shown instead"
            )
        bubble, p2p = row["bubble_ns"], row["p2p_bubble_ns"]
        if p2p is not None and bubble is not None and abs(p2p - bubble) > SAME_NS:
            notes.append(
                f"rank {row['rank']}: Bubble {bubble / 1e6:.1f} ms by the profiler's definition"
                f" (time in hcom_receive only) but {p2p / 1e6:.1f} ms of p2p wait by ours (inside"
                " every send / receive / batchSendRecv with no compute running)"
            )
    if view.chunks.is_empty():
        if view.has_markers:
            notes.append(
                "chunk markers found but no chunks stored: run `tracereplay chunks --run"
                f" {view.run['run_id']}`"
            )
        else:
            notes.append(
                "no chunks: this run has no chunk markers. Wrap each prefill forward in"
                " record_function('chunk[req=<id>,k=<k>,vs=<stage>,tokens=<c>,prefix=<p>]')"
                " (docs/tau_k.md), or treat each ProfilerStep as one chunk with `tracereplay"
                f" chunks --profiler-steps --run {view.run['run_id']}`; set model / schedule /"
                " chunk_size with `tracereplay ingest PATH --tag key=value`"
            )
    return notes


def show_run(con: duckdb.DuckDBPyConnection, run_id: str, fit: bool = True) -> RunView | None:
    """The view of one run, or None when no such run is stored."""
    run = _run_row(con, run_id)
    if run is None:
        return None
    chunks = chunk_table(con, run_id)
    view = RunView(
        run=run,
        breakdown=breakdown_by_rank(con, run_id),
        kernels=top_kernels(con, run_id),
        comm=top_comm_ops(con, run_id),
        chunks=chunks,
        fits=_run_fits(con, run_id) if fit and chunks.height else pl.DataFrame(),
        has_markers=_has_markers(con, run_id),
    )
    view.notes = _notes(view)
    return view


def match_run_id(con: duckdb.DuckDBPyConnection, text: str) -> list[str]:
    """Run ids equal to `text`, else those starting with it (a unique prefix is enough)."""
    exact = con.execute("select run_id from runs where run_id = ?", [text]).fetchall()
    if exact:
        return [exact[0][0]]
    rows = con.execute(
        "select run_id from runs where starts_with(run_id, ?) order by run_id", [text]
    ).fetchall()
    return [r[0] for r in rows]
