"""Host time per stage call (pipelines.replay.host_time): time inside the chunk marker outside
its ops, plus the gap to the rank's next chunk when that chunk's input was already there."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.replay.host_time import host_time
from pipelines.replay.rerun import replay


def _chunks(rows):
    cols = ("rank", "vstage", "request_id", "chunk_idx", "start_ns", "end_ns", "busy_ns")
    frame = pl.DataFrame(rows, schema=cols, orient="row")
    return frame.with_columns(
        pl.lit("run").alias("run_id"),
        pl.lit(100).alias("tokens"),
        (pl.col("chunk_idx") * 100).alias("prefix_tokens"),
    )


def test_counts_marker_overhead_and_ready_gaps_but_not_waits():
    chunks = _chunks(
        [
            (0, 0, "r0", 0, 0, 10, 8),  # in marker 2
            (0, 0, "r0", 1, 13, 23, 8),  # gap 3 (stage 0: input always there)
            (0, 0, "r0", 2, 26, 36, 8),  # gap 3
            (1, 1, "r0", 0, 15, 25, 8),  # first on its rank: no gap
            (1, 1, "r0", 1, 30, 40, 8),  # producer ended at 23 <= 25: gap 5
            (1, 1, "r0", 2, 45, 55, 8),  # producer ended at 36 <= 40: gap 5
            (1, 1, "r1", 0, 90, 100, 8),  # another request (a drained pass): no gap
        ]
    )
    host = host_time(chunks)
    assert host.in_marker_ns == pytest.approx(2.0)
    assert host.gaps == 4 and host.gap_ns == pytest.approx(4.0)
    assert host.call_ns == pytest.approx(6.0)
    waiting = chunks.with_columns(  # rank 1's k=2 now waits for an input that ends at 44
        pl.when((pl.col("rank") == 0) & (pl.col("chunk_idx") == 2))
        .then(pl.lit(44))
        .otherwise(pl.col("end_ns"))
        .alias("end_ns")
    )
    assert host_time(waiting).gaps == 3


def test_replay_charges_host_time_on_every_stage_call():
    rows = [
        (r, r, "r0", k, 1_000_000 * (2 * k + r), 1_000_000 * (2 * k + r + 1), 1_000_000)
        for k in range(4)
        for r in (0, 1)
    ]
    chunks = _chunks(rows)
    plain = replay(chunks, ["cpp"], chunk_size=100)["cpp"]
    charged = replay(chunks, ["cpp"], chunk_size=100, host_call_ns=250_000.0)["cpp"]
    compute = pl.col("kind") == "compute"
    before = plain.tasks.filter(compute).select((pl.col("end_ns") - pl.col("start_ns")).sum())
    after = charged.tasks.filter(compute).select((pl.col("end_ns") - pl.col("start_ns")).sum())
    assert after.item() - before.item() == 8 * 250_000  # 4 chunks x 2 stages
