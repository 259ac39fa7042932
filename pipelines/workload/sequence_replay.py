"""Replay a measured run on its own chunk sequence (no torch import).

`pipelines.replay` re-chunks every request by the schedule it simulates: fixed chunks for CPP
and VPP, the DCPP rule for DCPP. A measured DCPP run's chunk sizes came from its own online
timings, so re-chunking it replays another sequence. `replay_sequence` replays the sequence the
run executed: each request (arrival = its first chunk start) with the tokens of its stage-0
chunks in order, on the run's ranks with one stage each (CPP's program order), the measured tau
as cost (pipelines.replay.tabulated_cost.TabulatedCost, what `tracereplay replay` uses, with the
host time per call charged on every call), free transfers; it returns what `tracereplay replay`
reports (pipelines.sim.metrics.summarize): mean TTFT, bubble ratio, steps.

`rule_chunks` is the other half of the agreement check: the simulator's DCPP rule
(pipelines.sim.chunking.DynamicChunker, online, as dynamic_chunks runs it) fed the engine's
profiled fit and the run's measured stage-0 on-CPU cost gives the chunk sequence the simulator
would have chosen for one request of the run's length.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl

from pipelines.replay.tabulated_cost import TabulatedCost
from pipelines.sim.chunking import DcppConfig, DynamicChunker, QuadraticFit
from pipelines.sim.event_graph import evaluate
from pipelines.sim.layout import fold_back_layout
from pipelines.sim.metrics import summarize
from pipelines.sim.result import SimResult
from pipelines.sim.run import _release, stage_durations
from pipelines.sim.task_order import ChunkedRequest, build_plan, rank_orders
from pipelines.sim.timeline import request_table, task_table


def measured_sequences(chunks: pl.DataFrame) -> list[ChunkedRequest]:
    """The run's requests in arrival order, each with its stage-0 chunk sizes in order."""
    first = chunks.filter(pl.col("vstage") == 0).sort("request_id", "chunk_idx")
    per_request = first.group_by("request_id", maintain_order=True).agg(
        pl.col("start_ns").min().alias("arrival_ns"), pl.col("tokens")
    )
    origin = int(per_request["arrival_ns"].min())
    rows = sorted(per_request.iter_rows(), key=lambda r: (r[1], r[0]))
    return [
        ChunkedRequest(rid, int(t0) - origin, tuple(int(c) for c in toks)) for rid, t0, toks in rows
    ]


def replay_sequence(chunks: pl.DataFrame, host_call_ns: float = 0.0) -> dict[str, Any]:
    """Replay of the run's own chunk sequence (module docstring): ttft_mean_ns, bubble_ratio,
    makespan_ns, steps (chunks per request, mean)."""
    cost = TabulatedCost.from_chunks(chunks)
    if host_call_ns:
        cost = replace(cost, call_overhead_ns=cost.call_overhead_ns + host_call_ns)
    requests = measured_sequences(chunks)
    layout = fold_back_layout(cost.num_layers, chunks["rank"].n_unique(), 1)
    plan = build_plan(requests, layout, rank_orders(requests, layout), "blocking")
    dur = np.rint(stage_durations(plan, cost, None)).astype(np.int64)
    start, end = evaluate(plan.graph, dur, _release(plan))
    summary = summarize(SimResult(task_table(plan, start, end), request_table(plan, end), {}))
    return {
        "ttft_mean_ns": float(summary["ttft_mean_ns"]),
        "bubble_ratio": float(summary["bubble_ratio"]),
        "makespan_ns": float(summary["makespan_ns"]),
        "steps": float(np.mean([len(r.chunks) for r in requests])),
    }


def rule_chunks(
    stage0_cpu: pl.DataFrame,
    prompt_tokens: int,
    chunk_size: int,
    cfg: DcppConfig,
    fit: QuadraticFit,
) -> list[int]:
    """The simulator's DCPP chunks (chunking.dynamic_chunks' rule, online) for one request of
    `prompt_tokens`, given the engine's profiled fit `fit` and, as the measured step time, the
    stage-0 on-CPU time the run measured (`stage0_cpu`: tokens, prefix_tokens, cpu_ns) through
    the least-squares tau(c, p) = alpha c + beta c (p + c / 2) + gamma."""
    c = stage0_cpu["tokens"].to_numpy().astype(np.float64)
    p = stage0_cpu["prefix_tokens"].to_numpy().astype(np.float64)
    design = np.column_stack([c, c * (p + c / 2), np.ones_like(c)])
    coef, *_ = np.linalg.lstsq(design, stage0_cpu["cpu_ns"].to_numpy().astype(np.float64))

    def measured(tokens: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        t, q = np.asarray(tokens, np.float64), np.asarray(prefix, np.float64)
        return coef[0] * t + coef[1] * t * (q + t / 2) + coef[2]

    chunker = DynamicChunker(fit, chunk_size, cfg)
    chunks, prefix = [], 0
    while prefix < prompt_tokens:
        size = chunker.next_size(prefix, prompt_tokens - prefix)
        chunker.observe(size, prefix, float(measured(np.array([size]), np.array([prefix]))[0]))
        chunks.append(size)
        prefix += size
    return chunks
