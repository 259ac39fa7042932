"""The profiler's overlap analysis, shared by the readers and the trace writers.

From compute and communication device intervals, per group (a step): the four Overlap Analysis
lanes (Computing = ∪ compute, Communication = ∪ comm, Communication(Not Overlapped) = comm −
compute, Free = the gaps inside the group's device window [first start, last end)) and the
step_breakdown row they sum to (bubble = Σ `hcom_receive*` durations, stage = window − bubble,
preparing = window start − host step start). The rule follows the Ascend profiler (torch_npu
trace step parser / msprof overlap analysis, docs/step_breakdown.md); the readers derive rows
with it where a trace has no lanes to sum (pipelines/ingest/steps/step_breakdown.py), and the trace
writers draw the lanes and write step_trace_time.csv with it (pipelines/sim/trace_layout.py), so
a written trace reads back to the numbers it was written with.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.vocabulary.intervals import Coverage, coverage, group_ids
from pipelines.vocabulary.profiler_names import COMMUNICATION_LANE, COMPUTING, FREE, NOT_OVERLAPPED

WINDOW_COLUMNS = ("window_start_ns", "window_end_ns")
KINDS = ("compute", "comm", "p2p", "memcpy", "memset")
"""Kinds of device interval: memcpy and memset are neither computing nor communication (Kineto
`gpu_memcpy` / `gpu_memset`, pipelines/vocabulary/device_work.py). Their time lies inside Free, as
the Ascend profiler's DMA copies do (its Computing leaves them out): memcpy_ns / memset_ns are the
union of each, a view into Free and the window, not a fifth part of it."""


def _kind(cov: Coverage, name: str) -> np.ndarray:
    mask = cov.kinds.get(name)
    return np.zeros_like(cov.kinds["compute"]) if mask is None else mask


def overlap_lanes(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The four overlap lanes and their totals from compute and communication device intervals,
    per group (a step; null groups form a group of their own).

    `events` has columns group, kind ('compute' | 'comm' | 'p2p'), start_ns, end_ns; 'p2p' rows
    repeat the point-to-point subset of the comm rows and only feed `p2p_bubble_ns`. Returns
    (`lanes`: group, name, start_ns, dur_ns — the lane intervals; `totals`: one row per group, by
    group with nulls last, with computing_ns, communication_ns, comm_not_overlapped_ns,
    overlapped_ns, free_ns, p2p_bubble_ns (|p2p − compute|), window_start_ns, window_end_ns).
    Computing = ∪ compute, Communication = ∪ comm, Not Overlapped = comm −
    compute, Free = window − (compute ∪ comm), window = [first start, last end)."""
    cov, keys = lane_coverage(events)
    parts = []
    for name, mask in lane_masks(cov).items():
        group, start, end = cov.runs(mask)
        parts.append(
            keys.select(pl.col("group").gather(group)).with_columns(
                pl.lit(name).alias("name"),
                pl.Series("start_ns", start),
                pl.Series("dur_ns", end - start),
            )
        )
    return pl.concat(parts), lane_totals(cov, keys)


def lane_coverage(
    events: pl.DataFrame, kinds: dict[str, pl.Expr] | None = None
) -> tuple[Coverage, pl.DataFrame]:
    """The sweep of `events` (group, start_ns, end_ns) per group, and the group keys; `kinds`:
    compute / comm / p2p membership as boolean expressions (default: from the `kind` column)."""
    if kinds is None:
        kinds = {k: pl.col("kind") == k for k in KINDS}
    ids, keys = group_ids(events, ["group"])
    flags = events.select(
        pl.col("start_ns").cast(pl.Int64),
        pl.col("end_ns").cast(pl.Int64),
        *(expr.fill_null(False).alias(name) for name, expr in kinds.items()),
    )
    cov = coverage(
        ids,
        flags.get_column("start_ns").to_numpy(),
        flags.get_column("end_ns").to_numpy(),
        {name: flags.get_column(name).to_numpy() for name in kinds},
    )
    return cov, keys


def lane_masks(cov: Coverage) -> dict[str, np.ndarray]:
    comp, comm = cov.kinds["compute"], cov.kinds["comm"]
    return {
        COMPUTING: comp,
        COMMUNICATION_LANE: comm,
        NOT_OVERLAPPED: comm & ~comp,
        FREE: ~comm & ~comp,
    }


def lane_totals(cov: Coverage, keys: pl.DataFrame) -> pl.DataFrame:
    lanes = lane_masks(cov)
    comp, comm, p2p = cov.kinds["compute"], cov.kinds["comm"], cov.kinds["p2p"]
    return (
        keys.select(pl.col("group").gather(cov.groups))
        .with_columns(
            pl.Series("computing_ns", cov.totals(lanes[COMPUTING])),
            pl.Series("communication_ns", cov.totals(lanes[COMMUNICATION_LANE])),
            pl.Series("comm_not_overlapped_ns", cov.totals(lanes[NOT_OVERLAPPED])),
            pl.Series("overlapped_ns", cov.totals(comm & comp)),
            pl.Series("free_ns", cov.totals(lanes[FREE])),
            pl.Series("p2p_bubble_ns", cov.totals(p2p & ~comp)),
            pl.Series("memcpy_ns", cov.totals(_kind(cov, "memcpy"))),
            pl.Series("memset_ns", cov.totals(_kind(cov, "memset"))),
            pl.Series("window_start_ns", cov.window_start),
            pl.Series("window_end_ns", cov.window_end),
        )
        .sort("group", nulls_last=True, maintain_order=True)
    )


def breakdown_rows(
    totals: pl.DataFrame,
    receive: pl.DataFrame | None = None,
    host_start: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """step_breakdown rows (origin 'derived', then the window columns) from `overlap_lanes`
    totals, the `hcom_receive*` ops of each group (group, dur_ns: bubble = their total duration;
    None: no bubble) and the host step starts (group, start_ns: preparing = window start − host
    start; None or a group without one: NULL)."""
    bubbles = (
        (
            pl.DataFrame(schema={"group": totals.schema["group"], "dur_ns": pl.Int64})
            if receive is None
            else receive.select(pl.col("group").cast(totals.schema["group"]), "dur_ns")
        )
        .group_by("group")
        .agg(pl.col("dur_ns").sum().alias("bubble_ns"))
    )
    host = (
        pl.DataFrame(schema={"group": totals.schema["group"], "_host_start": pl.Int64})
        if host_start is None
        else host_start.select(
            pl.col("group").cast(totals.schema["group"]), pl.col("start_ns").alias("_host_start")
        )
    )
    return (
        totals.join(bubbles, on="group", how="left", nulls_equal=True)
        .join(host, on="group", how="left", nulls_equal=True)
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
            "memcpy_ns",
            "memset_ns",
            *WINDOW_COLUMNS,
        )
    )
