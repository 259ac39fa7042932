"""Overlap lanes and their totals per group (a step), from compute and communication device
intervals, on the shared interval primitives (pipelines/intervals.py). Null group keys form a
group of their own. (Owned by the db/Kineto readers; used through pipelines/ingest/overlap.py.)"""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.intervals import Coverage, coverage, group_ids

# Names of the four overlap lanes, as the Ascend profiler's "Overlap Analysis" process writes them.
COMPUTING = "Computing"
COMMUNICATION = "Communication"
NOT_OVERLAPPED = "Communication(Not Overlapped)"
FREE = "Free"
OVERLAP_LANES = (COMPUTING, COMMUNICATION, NOT_OVERLAPPED, FREE)


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
    cov, keys = _coverage(events)
    parts = []
    for name, mask in _lane_masks(cov).items():
        group, start, end = cov.runs(mask)
        parts.append(
            keys.select(pl.col("group").gather(group)).with_columns(
                pl.lit(name).alias("name"),
                pl.Series("start_ns", start),
                pl.Series("dur_ns", end - start),
            )
        )
    return pl.concat(parts), _totals(cov, keys)


def _coverage(
    events: pl.DataFrame, kinds: dict[str, pl.Expr] | None = None
) -> tuple[Coverage, pl.DataFrame]:
    """The sweep of `events` (group, start_ns, end_ns) per group, and the group keys; `kinds`:
    compute / comm / p2p membership as boolean expressions (default: from the `kind` column)."""
    if kinds is None:
        kinds = {k: pl.col("kind") == k for k in ("compute", "comm", "p2p")}
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


def _lane_masks(cov: Coverage) -> dict[str, np.ndarray]:
    comp, comm = cov.kinds["compute"], cov.kinds["comm"]
    return {
        COMPUTING: comp,
        COMMUNICATION: comm,
        NOT_OVERLAPPED: comm & ~comp,
        FREE: ~comm & ~comp,
    }


def _totals(cov: Coverage, keys: pl.DataFrame) -> pl.DataFrame:
    lanes = _lane_masks(cov)
    comp, comm, p2p = cov.kinds["compute"], cov.kinds["comm"], cov.kinds["p2p"]
    return (
        keys.select(pl.col("group").gather(cov.groups))
        .with_columns(
            pl.Series("computing_ns", cov.totals(lanes[COMPUTING])),
            pl.Series("communication_ns", cov.totals(lanes[COMMUNICATION])),
            pl.Series("comm_not_overlapped_ns", cov.totals(lanes[NOT_OVERLAPPED])),
            pl.Series("overlapped_ns", cov.totals(comm & comp)),
            pl.Series("free_ns", cov.totals(lanes[FREE])),
            pl.Series("p2p_bubble_ns", cov.totals(p2p & ~comp)),
            pl.Series("window_start_ns", cov.window_start),
            pl.Series("window_end_ns", cov.window_end),
        )
        .sort("group", nulls_last=True, maintain_order=True)
    )
