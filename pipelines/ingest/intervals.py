"""Vectorised interval algebra over grouped event sets (union, difference, gaps).

Events are rows (group, kind, start_ns, end_ns). A sweep over all start/end points of a group
splits its busy window into elementary segments, each flagged with which kinds cover it; unions,
differences and gaps are then runs of consecutive flagged segments. Everything is numpy/polars:
no Python loop over events. Groups are integer keys (e.g. a step number); null keys form a group
of their own. (Owned by the db/Kineto readers; used through pipelines/ingest/overlap.py.)"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

_NULL_GROUP = np.iinfo(np.int64).min


def elementary_segments(
    events: pl.DataFrame,
    kinds: Sequence[str],
    *,
    group: str = "group",
    kind: str = "kind",
    start: str = "start_ns",
    end: str = "end_ns",
) -> pl.DataFrame:
    """Split each group's window [min start, max end) into maximal pieces of constant coverage.

    Returns columns `group, start_ns, end_ns` and one boolean column per entry of `kinds`
    (True where at least one event of that kind covers the piece). Pieces covered by nothing
    inside the window (gaps) are included with every flag False."""
    g = events.get_column(group).cast(pl.Int64).fill_null(_NULL_GROUP).to_numpy()
    s = events.get_column(start).cast(pl.Int64).to_numpy()
    e = np.maximum(events.get_column(end).cast(pl.Int64).to_numpy(), s)
    k = events.get_column(kind).cast(pl.String).to_numpy()
    schema = {"group": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64} | {
        name: pl.Boolean for name in kinds
    }
    if len(s) == 0:
        return pl.DataFrame(schema=schema)
    times = np.concatenate([s, e])
    groups = np.concatenate([g, g])
    order = np.lexsort((times, groups))
    times, groups = times[order], groups[order]
    keep = (groups[:-1] == groups[1:]) & (times[1:] > times[:-1])
    columns: dict[str, np.ndarray] = {}
    for name in kinds:
        member = (k == name).astype(np.int64)
        delta = np.concatenate([member, -member])[order]
        # the deltas of every group sum to zero, so one running sum restarts at 0 per group
        columns[name] = (np.cumsum(delta)[:-1] > 0)[keep]
    frame = pl.DataFrame(
        {
            "group": groups[:-1][keep],
            "start_ns": times[:-1][keep],
            "end_ns": times[1:][keep],
            **columns,
        },
        schema=schema,
    )
    return frame.with_columns(
        pl.when(pl.col("group") == _NULL_GROUP).then(None).otherwise(pl.col("group")).alias("group")
    )


def merge_runs(segments: pl.DataFrame, mask: pl.Expr) -> pl.DataFrame:
    """Merge the touching segments (same group, end == next start) selected by `mask` into
    intervals: columns group, start_ns, end_ns, sorted by group then start."""
    picked = segments.filter(mask).sort(["group", "start_ns"], nulls_last=True)
    new_run = (
        (pl.col("start_ns") != pl.col("end_ns").shift(1))
        | pl.col("group").ne_missing(pl.col("group").shift(1))
    ).fill_null(True)
    return (
        picked.with_columns(new_run.cum_sum().alias("_run"))
        .group_by("_run", maintain_order=True)
        .agg(pl.col("group").first(), pl.col("start_ns").min(), pl.col("end_ns").max())
        .drop("_run")
    )


def union(
    events: pl.DataFrame, *, group: str = "group", start: str = "start_ns", end: str = "end_ns"
) -> pl.DataFrame:
    """Union of all intervals per group: columns group, start_ns, end_ns."""
    tagged = events.select(
        pl.col(group).alias("group"),
        pl.lit("x").alias("kind"),
        pl.col(start).alias("start_ns"),
        pl.col(end).alias("end_ns"),
    )
    return merge_runs(elementary_segments(tagged, ["x"]), pl.col("x"))


# Names of the four overlap lanes, as the Ascend profiler's "Overlap Analysis" process writes them.
COMPUTING = "Computing"
COMMUNICATION = "Communication"
NOT_OVERLAPPED = "Communication(Not Overlapped)"
FREE = "Free"
OVERLAP_LANES = (COMPUTING, COMMUNICATION, NOT_OVERLAPPED, FREE)
_TOTALS = (
    "computing_ns",
    "communication_ns",
    "comm_not_overlapped_ns",
    "overlapped_ns",
    "free_ns",
    "p2p_bubble_ns",
)


def overlap_lanes(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The four overlap lanes from compute and communication device intervals, per group.

    `events` has columns group, kind ('compute' | 'comm' | 'p2p'), start_ns, end_ns ('p2p' rows
    repeat the point-to-point subset of the comm rows and only feed `p2p_bubble_ns`). Returns
    (`lanes`: group, name, start_ns, dur_ns — the lane intervals; `totals`: one row per group with
    computing_ns, communication_ns, comm_not_overlapped_ns, overlapped_ns, free_ns, p2p_bubble_ns,
    window_start_ns, window_end_ns). Computing = union of compute, Communication = union of comm,
    Not Overlapped = comm minus compute, Free = window minus (compute or comm), window = [first
    start, last end), p2p_bubble = p2p minus compute."""
    device = events.filter(pl.col("kind").is_in(["compute", "comm"]))
    segs = elementary_segments(events, ["compute", "comm", "p2p"])
    comp, comm, p2p = pl.col("compute"), pl.col("comm"), pl.col("p2p")
    masks = {
        COMPUTING: comp,
        COMMUNICATION: comm,
        NOT_OVERLAPPED: comm & ~comp,
        FREE: ~comm & ~comp,
    }
    lanes = pl.concat(
        [
            merge_runs(segs, mask).with_columns(pl.lit(name).alias("name"))
            for name, mask in masks.items()
        ]
    ).select("group", "name", "start_ns", (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"))
    length = pl.col("end_ns") - pl.col("start_ns")
    totals = (
        segs.group_by("group")
        .agg(
            length.filter(comp).sum().alias("computing_ns"),
            length.filter(comm).sum().alias("communication_ns"),
            length.filter(comm & ~comp).sum().alias("comm_not_overlapped_ns"),
            length.filter(comm & comp).sum().alias("overlapped_ns"),
            length.filter(~comm & ~comp).sum().alias("free_ns"),
            length.filter(p2p & ~comp).sum().alias("p2p_bubble_ns"),
        )
        .join(
            device.group_by(pl.col("group").cast(pl.Int64)).agg(
                pl.col("start_ns").min().alias("window_start_ns"),
                pl.col("end_ns").max().alias("window_end_ns"),
            ),
            on="group",
            how="full",
            coalesce=True,
            nulls_equal=True,
        )
        .sort("group", nulls_last=True)
        .with_columns(pl.col(c).fill_null(0) for c in _TOTALS)
    )
    return lanes, totals
