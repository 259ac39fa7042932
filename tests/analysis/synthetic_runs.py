"""Synthetic runs written straight into the canonical tables (runs, chunks, kernels,
step_breakdown): tau_k = a + b*k per chunk, split into an attention kernel (b*k, grows with the
prefix) and a linear kernel (a, fixed per chunk), with multiplicative run noise. Fast enough for
60-night histories; the ingest itself is tested on real and simulated profiler folders elsewhere."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import polars as pl

N_CHUNKS = 8
CHUNK = 16384


def write_run(
    con,
    run_id: str,
    night: int,
    *,
    schedule: str = "cpp",
    model: str = "m",
    a_ns: float = 80e6,
    b_ns: float = 20e6,
    scale: float = 1.0,
    rng: np.random.Generator,
    noise: float = 0.02,
) -> None:
    """One run: pp=2 (two stages, one request of N_CHUNKS chunks); `scale` multiplies every
    duration (a run-level effect), `noise` is the run-level lognormal sigma."""
    factor = scale * float(np.exp(rng.normal(0, noise)))
    chunks, kernels = [], []
    t = 0
    for k in range(N_CHUNKS):
        attention = b_ns * k * factor
        linear = a_ns * factor
        for stage in (0, 1):
            start = t + stage * int(a_ns)
            dur = int(attention + linear)
            chunks.append(
                (run_id, stage, stage, "req-0", k, CHUNK, k * CHUNK, start, start + dur, dur)
            )
            kernels.append((run_id, stage, 1, "FlashAttentionScore", start, int(attention), False))
            kernels.append(
                (run_id, stage, 1, "MatMulV3", start + int(attention), int(linear), False)
            )
            kernels.append(
                (run_id, stage, 1, f"hcom_send__{900 + k}_{k}_1", start + dur, 1000, True)
            )
        t += int(attention + linear)
    cols = [
        "run_id",
        "rank",
        "vstage",
        "request_id",
        "chunk_idx",
        "tokens",
        "prefix_tokens",
        "start_ns",
        "end_ns",
        "busy_ns",
    ]
    con.write_run(
        run_id,
        {
            "runs": pl.DataFrame(
                {
                    "run_id": [run_id],
                    "source": ["sim"],
                    "content_hash": [run_id],
                    "model": [model],
                    "schedule": [schedule],
                    "chunk_size": [CHUNK],
                    "seq_len": [CHUNK * N_CHUNKS],
                    "tp": [1],
                    "pp": [2],
                    "vp": [1],
                    "hardware": ["x"],
                    "collected_at": [datetime(2026, 1, 1) + timedelta(days=night)],
                }
            ),
            "chunks": pl.DataFrame(chunks, schema=cols, orient="row"),
            "kernels": pl.DataFrame(
                kernels,
                schema=["run_id", "rank", "step", "name", "start_ns", "dur_ns", "is_comm"],
                orient="row",
            ),
            "step_breakdown": pl.DataFrame(
                {
                    "run_id": [run_id] * 2,
                    "rank": [0, 1],
                    "step": [1, 1],
                    "origin": ["profiler"] * 2,
                    "computing_ns": [int(t)] * 2,
                    "communication_ns": [8000] * 2,
                    "comm_not_overlapped_ns": [8000] * 2,
                    "overlapped_ns": [0] * 2,
                    "free_ns": [0, int(a_ns)],
                    "bubble_ns": [0, 0],
                    "complete": [True] * 2,
                }
            ),
        },
    )
