"""Segmentation on real Ascend traces (set B: one ProfilerStep#50 per rank, ../shared/traces/real).

With the ProfilerStep rule each step window is one chunk; its busy time must equal the
profiler's own `Computing` for that step (step_trace_time.csv), which checks which device
tasks count as work (kernels yes; stream waits, DMA copies and HCCL transfers no)."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.analysis.chunks.segment import PROFILER_STEP_REGEX, segment_chunks
from pipelines.ingest.readers.ascend_text import read_rank

TEXT = "msinsight/test/data/pytorch/text"


@pytest.mark.real
@pytest.mark.parametrize(("level", "rank"), [("level0", 0), ("level1", 1)])
def test_profiler_step_busy_time_equals_the_profilers_computing(real_dir, level, rank) -> None:
    frames = read_rank(real_dir / TEXT / level / f"rank{rank}_ascend_pt")
    slices = frames.tables["slices"].with_columns(
        pl.lit(frames.rank, pl.Int32).alias("rank"), pl.lit("b").alias("run_id")
    )
    chunks, unassigned = segment_chunks(slices, "b", PROFILER_STEP_REGEX, renumber=True)
    assert chunks.height == 1 and chunks["chunk_idx"].to_list() == [0]
    profiler = frames.tables["step_breakdown"].filter(pl.col("origin") == "profiler")
    computing = profiler.filter(pl.col("step") == 50)["computing_ns"].item()
    # the trace's µs floats and the CSV's µs text round differently: 1 µs of slack
    assert abs(chunks["busy_ns"].item() - computing) <= 1_000
    assert unassigned["unassigned_ns"].to_list() == [0]
    if level == "level1":
        # CANN launch slices carry the connection_id of the device tasks they launched
        assert unassigned["n_flow_linked"].item() > 100
        linked_only, _ = segment_chunks(
            slices, "b", PROFILER_STEP_REGEX, renumber=True, link="flow"
        )
        assert 0 < linked_only["busy_ns"].item() <= chunks["busy_ns"].item()


@pytest.mark.real
def test_kineto_profiler_steps_link_every_kernel_by_correlation(real_dir) -> None:
    from pipelines.ingest.readers.kineto import read_trace

    frames = read_trace(
        real_dir / "kineto/HolisticTraceAnalysis/tests/data/trace_filter/sampled_rank-0.json.gz"
    )
    slices = frames.tables["slices"].with_columns(
        pl.lit(frames.rank, pl.Int32).alias("rank"), pl.lit("k").alias("run_id")
    )
    chunks, unassigned = segment_chunks(slices, "k", PROFILER_STEP_REGEX, renumber=True)
    derived = dict(frames.tables["step_breakdown"].select("step", "computing_ns").iter_rows())
    # ProfilerStep#551 and #552: busy time = the reader's derived Computing of each step
    assert chunks.sort("chunk_idx")["busy_ns"].to_list() == [derived[551], derived[552]]
    report = unassigned.row(0, named=True)
    assert report["unassigned_ns"] == 0
    assert report["n_flow_linked"] == report["n_device_slices"] > 1000
