"""Host time per stage call: what a rank spends on a chunk besides its measured busy time.

A measured chunk's busy_ns is the union of its device (or, on CPU runs, outermost aten) ops.
The rank is occupied longer: inside the chunk marker between ops (Python, the dispatcher) and
after it until the next chunk starts (the send, the loop, taking the next input). `replay`
charges the mean of that per call (`host_call_ns`) when asked to; with free transfers and
busy_ns alone a replay misses it on every call of the critical path (docs/workload.md,
"Replay accuracy").

Measured from the chunks themselves: per call, (end - start - busy) inside the marker plus the
gap to the rank's next chunk when that chunk's input was already there (its producer, the same
chunk on the previous virtual stage, had ended before the rank became free), so waiting for an
input is never counted as host time. Gaps across a request change on a rank (a drained pass,
a barrier) are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class HostTime:
    """Mean host time per stage call (ns) and its two parts, with how many calls and gaps."""

    in_marker_ns: float
    gap_ns: float
    calls: int
    gaps: int

    @property
    def call_ns(self) -> float:
        return self.in_marker_ns + self.gap_ns


def host_time(chunks: pl.DataFrame) -> HostTime:
    """HostTime of one measured run's chunks (canonical chunks schema)."""
    keys = ["request_id", "chunk_idx"]
    producer = chunks.select(
        *keys, (pl.col("vstage") + 1).alias("vstage"), pl.col("end_ns").alias("ready_ns")
    )
    frame = (
        chunks.join(producer, on=[*keys, "vstage"], how="left")
        .sort("rank", "start_ns")
        .with_columns(
            pl.col("end_ns").shift(1).over("rank").alias("free_ns"),
            pl.col("request_id").shift(1).over("rank").alias("prev_request"),
        )
    )
    in_marker = (frame["end_ns"] - frame["start_ns"] - frame["busy_ns"]).cast(pl.Float64)
    ready = frame.filter(
        (pl.col("prev_request") == pl.col("request_id"))
        & (pl.col("ready_ns").is_null() | (pl.col("ready_ns") <= pl.col("free_ns")))
    )
    gaps = (ready["start_ns"] - ready["free_ns"]).cast(pl.Float64)
    return HostTime(
        in_marker_ns=float(in_marker.mean()) if frame.height else 0.0,
        gap_ns=float(gaps.mean()) if ready.height else 0.0,
        calls=frame.height,
        gaps=ready.height,
    )
