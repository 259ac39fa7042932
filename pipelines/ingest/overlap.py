"""Derive the overlap lanes and the per-step time breakdown from raw device intervals.

Used where the trace has no "Overlap Analysis" lanes of its own (Ascend SQLite exports, Kineto).
Definitions follow the Ascend profiler (torch_npu trace step parser / msprof overlap analysis):
a device event belongs to step N when it *starts* inside the host window of ProfilerStep#N;
Computing = union of compute tasks, Communication = union of communication ops,
Not Overlapped = Communication minus Computing, Free = gaps inside the step's device window,
Bubble = total duration of `hcom_receive*` ops, Stage = window - Bubble,
Preparing = first device task start - host step start. Verified to reproduce analysis.db
StepTraceTime exactly on the real SQLite export (tests/ingest/test_ascend_db.py)."""

from __future__ import annotations

import polars as pl

from pipelines.ingest.intervals import overlap_lanes
from pipelines.intervals import assign_steps

RECEIVE_PREFIX = "hcom_receive"


def derive_breakdown(
    device: pl.DataFrame,
    steps: pl.DataFrame,
    comm_ops: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Overlap-lane slices and step_breakdown rows (origin='derived') of one rank.

    `device`: columns kind ('compute' | 'comm'), start_ns, dur_ns — compute tasks and
    communication ops of the device. `steps`: step, start_ns, end_ns (may be empty: then the
    whole trace is one row with a null step). `comm_ops`: canonical comm_ops rows (op, is_p2p,
    start_ns, dur_ns) for the bubble columns: Bubble sums the `hcom_receive*` ops (the profiler's
    definition); p2p_bubble (ours, as in step_breakdown.py) is the time inside point-to-point ops
    during which nothing computes, |∪ p2p ops − ∪ compute|.

    Returns (`slices`: lane='overlap' rows with thread = lane name, category 'derived';
    `step_breakdown`: canonical columns without run_id/rank)."""
    events = device.select(
        pl.col("kind"),
        pl.col("start_ns").cast(pl.Int64),
        (pl.col("start_ns") + pl.col("dur_ns")).cast(pl.Int64).alias("end_ns"),
    )
    if comm_ops is not None and not comm_ops.is_empty():
        p2p = comm_ops.filter(pl.col("is_p2p")).select(
            pl.lit("p2p").alias("kind"),
            pl.col("start_ns").cast(pl.Int64),
            (pl.col("start_ns") + pl.col("dur_ns")).cast(pl.Int64).alias("end_ns"),
        )
        events = pl.concat([events, p2p])
    has_steps = not steps.is_empty()
    events = assign_steps(events, steps)
    if has_steps:
        events = events.filter(pl.col("step").is_not_null())
    lanes, totals = overlap_lanes(events.rename({"step": "group"}))
    slices = lanes.select(
        pl.lit("overlap").alias("lane"),
        pl.col("name").alias("thread"),
        pl.col("name"),
        pl.lit("derived").alias("category"),
        pl.col("start_ns"),
        pl.col("dur_ns"),
        pl.col("group").cast(pl.Int32).alias("step"),
    ).sort("start_ns", "thread")

    bubbles = _bubbles(comm_ops, steps, has_steps)
    step_start = steps.select(
        pl.col("step").cast(pl.Int64).alias("group"), pl.col("start_ns").alias("_host_start")
    )
    breakdown = (
        totals.join(bubbles, on="group", how="left", nulls_equal=True)
        .join(step_start, on="group", how="left")
        .with_columns(pl.col("bubble_ns").fill_null(0))
        .select(
            pl.col("group").cast(pl.Int32).alias("step"),
            pl.lit("derived").alias("origin"),
            "computing_ns",
            "communication_ns",
            "comm_not_overlapped_ns",
            "overlapped_ns",
            "free_ns",
            (pl.col("window_end_ns") - pl.col("window_start_ns") - pl.col("bubble_ns")).alias(
                "stage_ns"
            ),
            "bubble_ns",
            (pl.col("comm_not_overlapped_ns") - pl.col("bubble_ns")).alias(
                "comm_not_overlapped_excl_receive_ns"
            ),
            (pl.col("window_start_ns") - pl.col("_host_start")).alias("preparing_ns"),
            "p2p_bubble_ns",
        )
    )
    return slices, breakdown


def _bubbles(comm_ops: pl.DataFrame | None, steps: pl.DataFrame, has_steps: bool) -> pl.DataFrame:
    schema = {"group": pl.Int64, "bubble_ns": pl.Int64}
    if comm_ops is None or comm_ops.is_empty():
        return pl.DataFrame(schema=schema)
    ops = assign_steps(comm_ops.select("op", "start_ns", "dur_ns"), steps)
    if has_steps:
        ops = ops.filter(pl.col("step").is_not_null())
    receive = pl.col("op").str.to_lowercase().str.starts_with(RECEIVE_PREFIX)
    return ops.group_by(pl.col("step").cast(pl.Int64).alias("group")).agg(
        pl.col("dur_ns").filter(receive).sum().alias("bubble_ns")
    )
