"""Our derived step breakdown against the profiler's own step_trace_time.csv, and p2p bubbles."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.readers.kernel_details import read_kernel_details
from pipelines.ingest.readers.step_trace import read_step_trace_time
from pipelines.ingest.readers.trace_view import read_trace_view
from pipelines.ingest.steps.step_breakdown import from_kernels, from_trace

TEXT = "msinsight/test/data/pytorch/text"
SET_A = "msinsight/test/st/level2"
# Sums of slice durations must match to the nanosecond; stage and preparing are differences of
# absolute timestamps that the profiler computes in float64 microseconds (0.25 us resolution at
# 1.7e15 us), so they match to within one microsecond.
SUM_COLUMNS = (
    "computing_ns",
    "communication_ns",
    "comm_not_overlapped_ns",
    "overlapped_ns",
    "free_ns",
    "bubble_ns",
    "comm_not_overlapped_excl_receive_ns",
)
TIMESTAMP_COLUMNS = ("stage_ns", "preparing_ns")


@pytest.mark.parametrize("level", ["level0", "level1"])
@pytest.mark.parametrize("rank", [0, 1])
def test_derived_equals_step_trace_time(real_dir: Path, level: str, rank: int) -> None:
    out = real_dir / TEXT / level / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    trace = read_trace_view(out / "trace_view.json")
    ours = from_trace(trace.slices, trace.steps).row(0, named=True)
    theirs = read_step_trace_time(out / "step_trace_time.csv").rows.row(0, named=True)
    assert ours["step"] == theirs["step"] == 50
    for column in SUM_COLUMNS:
        assert ours[column] == theirs[column], column
    for column in TIMESTAMP_COLUMNS:
        assert abs(ours[column] - theirs[column]) < 1000, column
    assert ours["p2p_bubble_ns"] == 0  # data parallel only: no point-to-point ops


def test_set_a_kernel_union_reproduces_the_profiler_and_finds_the_p2p_bubble(
    real_dir: Path,
) -> None:
    out = real_dir / SET_A / "rank_2_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    ours = from_kernels(read_kernel_details(out / "kernel_details.csv").kernels).row(0, named=True)
    theirs = read_step_trace_time(out / "step_trace_time.csv").rows.row(0, named=True)
    for column in ("computing_ns", "communication_ns", "comm_not_overlapped_ns", "free_ns"):
        assert ours[column] == theirs[column], column
    assert abs(ours["stage_ns"] - theirs["stage_ns"]) < 1000
    assert ours["preparing_ns"] is None  # needs the host step start, absent without a trace
    # the profiler counts only hcom_receive*: batch_isend_irecv pipelines show no bubble ...
    assert theirs["bubble_ns"] == 0 and ours["bubble_ns"] == 0
    # ... while rank 2 (stage 1) waits 71.4 ms in its first hcom_batchSendRecv alone
    assert 71_424_680 <= ours["p2p_bubble_ns"] < theirs["stage_ns"]


def test_p2p_bubble_excludes_time_covered_by_compute() -> None:
    kernels = pl.DataFrame(
        {
            "name": ["k1", "hcom_receive__1_0", "k2", "hcom_allReduce__1_1", "hcom_send__1_2"],
            "start_ns": [0, 50, 120, 200, 300],
            "dur_ns": [100, 100, 30, 50, 40],
            "step": [1, 1, 1, 1, 1],
            "is_comm": [False, True, False, True, True],
        }
    )
    row = from_kernels(kernels).row(0, named=True)
    # receive [50,150) minus compute [0,100) and [120,150) -> 20; send [300,340) -> 40
    assert row["p2p_bubble_ns"] == 60
    assert row["bubble_ns"] == 100  # profiler definition: whole hcom_receive duration
    assert row["stage_ns"] == 340 - 100
    assert row["free_ns"] == 340 - (150 + 50 + 40)


def test_trace_without_overlap_lane_gives_nothing() -> None:
    slices = pl.DataFrame(
        {"lane": ["compute"], "name": ["k"], "start_ns": [1], "dur_ns": [2], "step": [None]},
        schema_overrides={"step": pl.Int32},
    )
    steps = pl.DataFrame(schema={"step": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64})
    assert from_trace(slices, steps).is_empty()
