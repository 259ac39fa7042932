"""Interval sweep and derived overlap lanes against a plain reference on random intervals."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.ingest.steps.step_breakdown import derive_breakdown, overlap_lanes
from pipelines.vocabulary.intervals import assign_steps
from pipelines.vocabulary.intervals import union_by as union


def _covered(points: np.ndarray, intervals: list[tuple[int, int]]) -> np.ndarray:
    mask = np.zeros_like(points, dtype=bool)
    for s, e in intervals:
        mask |= (points >= s) & (points < e)
    return mask


def test_overlap_totals_match_a_pointwise_reference() -> None:
    rng = np.random.default_rng(7)
    rows = []
    for group in (1, 2, None):
        for kind in ("compute", "comm", "p2p"):
            starts = rng.integers(0, 500, size=15)
            ends = starts + rng.integers(0, 60, size=15)
            rows += [(group, kind, int(s), int(e)) for s, e in zip(starts, ends, strict=True)]
    events = pl.DataFrame(
        rows, schema=["group", "kind", "start_ns", "end_ns"], orient="row"
    ).with_columns(pl.col("group").cast(pl.Int64))
    # p2p intervals are a subset of communication in real use
    events = pl.concat(
        [events, events.filter(pl.col("kind") == "p2p").with_columns(pl.lit("comm").alias("kind"))]
    )
    lanes, totals = overlap_lanes(events)
    for group in (1, 2, None):
        part = events.filter(pl.col("group").eq_missing(group))
        spans = {
            k: list(part.filter(pl.col("kind") == k).select("start_ns", "end_ns").iter_rows())
            for k in ("compute", "comm", "p2p")
        }
        device = spans["compute"] + spans["comm"]
        lo, hi = min(s for s, _ in device), max(e for _, e in device)
        t = np.arange(lo, hi)  # one point per ns
        comp, comm, p2p = (_covered(t, spans[k]) for k in ("compute", "comm", "p2p"))
        row = totals.filter(pl.col("group").eq_missing(group)).row(0, named=True)
        assert row["computing_ns"] == comp.sum()
        assert row["communication_ns"] == comm.sum()
        assert row["comm_not_overlapped_ns"] == (comm & ~comp).sum()
        assert row["overlapped_ns"] == (comm & comp).sum()
        assert row["free_ns"] == (~comm & ~comp).sum()
        assert row["p2p_bubble_ns"] == (p2p & ~comp).sum()
        assert (row["window_start_ns"], row["window_end_ns"]) == (lo, hi)
        lane_sum = dict(
            lanes.filter(pl.col("group").eq_missing(group))
            .group_by("name")
            .agg(pl.col("dur_ns").sum())
            .iter_rows()
        )
        assert lane_sum["Computing"] == row["computing_ns"]
        assert lane_sum.get("Free", 0) == row["free_ns"]


def test_union_merges_touching_and_nested_intervals() -> None:
    events = pl.DataFrame(
        {"group": [1, 1, 1, 1, 2], "start_ns": [0, 10, 12, 30, 0], "end_ns": [10, 20, 15, 31, 5]}
    )
    assert union(events).rows() == [(1, 0, 20), (1, 30, 31), (2, 0, 5)]


def test_assign_steps_by_start_time() -> None:
    steps = pl.DataFrame({"step": [3, 4], "start_ns": [100, 200], "end_ns": [200, 250]})
    frame = pl.DataFrame({"start_ns": [50, 100, 199, 200, 260]})
    assert assign_steps(frame, steps).get_column("step").to_list() == [None, 3, 3, 4, None]


def test_derived_breakdown_bubbles_and_preparing() -> None:
    steps = pl.DataFrame({"step": [7], "start_ns": [0], "end_ns": [1_000]})
    device = pl.DataFrame(
        {
            "kind": ["compute", "comm", "comm", "compute"],
            "start_ns": [100, 150, 400, 2_000],  # the last one is outside every step
            "dur_ns": [100, 200, 100, 10],
        }
    )
    comm_ops = pl.DataFrame(
        {
            "op": ["hcom_batchSendRecv__1_0_1", "hcom_receive__1_1"],
            "is_p2p": [True, True],
            "start_ns": [150, 400],
            "dur_ns": [200, 100],
        }
    )
    slices, breakdown = derive_breakdown(device, steps, comm_ops)
    row = breakdown.row(0, named=True)
    assert breakdown.height == 1 and row["step"] == 7
    assert row["computing_ns"] == 100 and row["communication_ns"] == 300
    assert row["comm_not_overlapped_ns"] == 250 and row["overlapped_ns"] == 50
    assert row["free_ns"] == 50  # 350..400
    assert row["bubble_ns"] == 100  # hcom_receive only
    assert row["p2p_bubble_ns"] == 250  # both p2p ops minus computing
    assert row["stage_ns"] == 400 - 100
    assert row["preparing_ns"] == 100
    assert set(slices.get_column("thread")) == {
        "Computing",
        "Communication",
        "Communication(Not Overlapped)",
        "Free",
    }
