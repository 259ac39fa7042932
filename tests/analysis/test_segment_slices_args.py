"""Segmentation reads host args only where they name a launch-link key (issue 37 item 1: a
marked 2 GB trace's host args no longer reach memory), and segments exactly as with every arg."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.analysis.chunks.chunk_store import SEGMENT_LANES, segment_run, segment_slices
from pipelines.analysis.chunks.segment import DEFAULT_MARKER_REGEX, segment_chunks
from pipelines.bench.generate import generate_rank
from pipelines.ingest.load import ingest_paths
from pipelines.store import open_store, queries

LEVEL1 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"


@pytest.mark.parametrize("repeat_ids", [False, True])
def test_same_chunks_without_unlinked_host_args(
    real_dir: Path, tmp_path: Path, repeat_ids: bool
) -> None:
    trace = generate_rank(
        tmp_path / "gen", 3, real_dir / LEVEL1, repeat_ids=repeat_ids, markers=True
    )
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        (run,) = ingest_paths([trace.rank_dir], con, progress=False).runs
        every = queries.run_slices(con, run.run_id, SEGMENT_LANES)
        lean = segment_slices(con, run.run_id)
        assert lean.height == every.height
        host = every["lane"] == "host"
        kept = lean.filter(host)["args"].drop_nulls().len()
        assert 0 < kept < every.filter(host)["args"].drop_nulls().len()  # some, not all, dropped
        assert lean.filter(~host)["args"].equals(every.filter(~host)["args"])
        want_chunks, want_report = segment_chunks(every, run.run_id, DEFAULT_MARKER_REGEX)
        got_chunks, got_report = segment_run(con, run.run_id)
    finally:
        con.close()
    assert got_chunks.height == trace.copies
    assert got_report["n_flow_linked"].sum() > 0  # links decide anchors here
    assert got_chunks.equals(want_chunks)
    assert got_report.equals(want_report)
