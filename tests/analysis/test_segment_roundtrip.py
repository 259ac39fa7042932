"""Segmentation accuracy: a simulated run written as Ascend text and Kineto traces, read back by
the ingest readers, segmented by its chunk markers: tau_k must match the simulator's."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.analysis.chunks.segment import segment_chunks
from pipelines.ingest.readers.ascend_text import read_rank
from pipelines.ingest.readers.kineto import read_trace
from pipelines.replay.tables import chunks_frame
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.sim.writers_kineto import write_kineto_trace

KEY = ["rank", "vstage", "request_id", "chunk_idx"]


@pytest.fixture(scope="module")
def simulated():
    # two requests back to back under VPP with overlapped transfers: chunks of both requests
    # and both virtual stages of each rank interleave on the timeline
    return simulate(
        [65536, 40960], "vpp_async", model="deepseek-v3.1", chunk_size=8192, noise=0.03, seed=3
    )


def _slices(reader, paths: list[Path]) -> pl.DataFrame:
    parts = []
    for path in paths:
        frames = reader(path)
        parts.append(
            frames.tables["slices"].with_columns(
                pl.lit(frames.rank, pl.Int32).alias("rank"), pl.lit("run").alias("run_id")
            )
        )
    return pl.concat(parts, how="diagonal_relaxed")


@pytest.mark.parametrize("fmt", ["ascend", "kineto"])
def test_segmented_tau_matches_the_simulator_within_1pct(simulated, fmt, tmp_path) -> None:
    if fmt == "ascend":
        slices = _slices(read_rank, write_ascend_pt(simulated, tmp_path))
    else:
        slices = _slices(read_trace, write_kineto_trace(simulated, tmp_path))
    truth = chunks_frame(simulated, "run")
    chunks, unassigned = segment_chunks(slices, "run")
    joined = truth.join(chunks, on=KEY, how="full", suffix="_seg", coalesce=True)
    assert joined.height == truth.height == chunks.height
    error = (joined["busy_ns_seg"] / joined["busy_ns"] - 1).abs()
    assert error.max() <= 0.01
    assert (joined["tokens"] == joined["tokens_seg"]).all()
    assert (joined["prefix_tokens"] == joined["prefix_tokens_seg"]).all()
    assert (unassigned["unassigned_fraction"] == 0).all()
    # communication is no part of tau_k, but it is device work when asked for
    with_comm, _ = segment_chunks(slices, "run", include_comm=True)
    assert with_comm["busy_ns"].sum() > chunks["busy_ns"].sum()
