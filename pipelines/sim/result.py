"""What a simulation returns: the task table every writer and metric reads, plus run metadata.

`tasks` has one row per scheduled piece of work on a rank, integer nanoseconds:

| column        | type   | meaning                                                         |
|---------------|--------|-----------------------------------------------------------------|
| request_id    | str    | request the work belongs to                                     |
| chunk_idx     | i32    | chunk index k within the request (0-based)                      |
| vstage        | i32    | virtual stage (0 .. pp*vp-1); -1 for single-device runs         |
| rank          | i32    | pipeline rank executing it                                      |
| kind          | str    | "compute", "send" or "recv" (communication on the rank's link)  |
| tokens        | i64    | chunk tokens c                                                  |
| prefix_tokens | i64    | tokens of the request before this chunk (p)                     |
| start_ns      | i64    | start on the rank                                               |
| end_ns        | i64    | end on the rank                                                 |

`requests` has one row per request: request_id (str), arrival_ns (i64), prompt_tokens (i64),
first_token_ns (i64, end of its last prefill chunk), ttft_ns (i64).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

TASK_SCHEMA: dict[str, pl.DataType] = {
    "request_id": pl.String,
    "chunk_idx": pl.Int32,
    "vstage": pl.Int32,
    "rank": pl.Int32,
    "kind": pl.String,
    "tokens": pl.Int64,
    "prefix_tokens": pl.Int64,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
}

REQUEST_SCHEMA: dict[str, pl.DataType] = {
    "request_id": pl.String,
    "arrival_ns": pl.Int64,
    "prompt_tokens": pl.Int64,
    "first_token_ns": pl.Int64,
    "ttft_ns": pl.Int64,
}


@dataclass
class SimResult:
    """One simulated run. `meta` holds at least model, schedule, chunk_size, seq_len, pp, vp,
    hardware, seed and noise; writers copy it into the run's metadata."""

    tasks: pl.DataFrame
    requests: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
