"""Reshape a simulated run the way a real multi-rank profile looks, before it is written.

* `with_scheduler_steps`: one ProfilerStep per scheduler step. A pipeline scheduler step starts
  when its chunk enters stage 0; windows run from one step's start to the next (the same windows
  on every rank: the step is the scheduler's), shifted earlier by the host's launch latency
  (the host calls `prof.step()` before the device starts the step's first kernel, so Preparing
  is that latency). The first window opens at the run start minus the latency, the last closes
  at the run's last device end, so every device event falls in a window.
* `expand_tp_ranks`: each pipeline rank becomes `tp` ranks, rank = stage * tp + t (TP index
  innermost, Megatron / vLLM order): the same compute and the same TP / EP collectives (the
  simulator's stage costs are per TP rank already), and each TP rank sends its 1/tp slice of the
  activations to the rank with the same t in the next stage.

Both return a new SimResult; the task and request tables and metrics of the original are
unchanged (each TP rank carries the figures of its stage).
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl

from pipelines.sim import presets
from pipelines.sim.kernel_mix import split_ns
from pipelines.sim.result import SimResult
from pipelines.sim.run import BATCH_REQUEST

LAUNCH_LATENCY_NS = 150_000
"""Host launch to device start of a kernel: 150 µs, the 10th percentile of the torch_to_npu flow
gaps (host `s` to device `f`) in the real set B1 trace (docs/sim_traces.md §2); the median there is
2.2 ms because that host ran far ahead of its device."""


def scheduler_step_starts(result: SimResult) -> list[int]:
    """Start (ns) of every scheduler step: the distinct start times of stage-0 compute tasks."""
    tasks = result.tasks.filter((pl.col("kind") == "compute") & (pl.col("vstage") <= 0))
    return sorted(set(tasks["start_ns"].to_list()))


def with_scheduler_steps(
    result: SimResult, launch_latency_ns: int = LAUNCH_LATENCY_NS
) -> SimResult:
    """`result` with meta["steps_ns"]: one window per scheduler step (module docstring). A run
    that already has step windows (the single-device scheduler) is returned as it is."""
    if result.meta.get("steps_ns"):
        return result
    starts = scheduler_step_starts(result)
    first = int(result.tasks["start_ns"].min())
    end = int(result.tasks["end_ns"].max())
    bounds = [first - launch_latency_ns] + [s - launch_latency_ns for s in starts[1:]] + [end]
    windows = [[lo, hi] for lo, hi in itertools.pairwise(bounds)]
    meta = result.meta | {"steps_ns": windows, "launch_latency_ns": launch_latency_ns}
    return SimResult(result.tasks, result.requests, meta)


def expand_tp_ranks(result: SimResult, tp: int | None = None) -> SimResult:
    """`result` with one rank per TP rank (module docstring); `tp` defaults to meta["tp"]."""
    tp = int(tp if tp is not None else result.meta.get("tp", 1) or 1)
    if tp < 1:
        raise ValueError(f"tp must be at least 1, got {tp}")
    if int(result.meta.get("tp_ranks") or 1) > 1:
        raise ValueError("the run already has one rank per TP rank")
    if tp == 1:
        return result
    copies = [
        result.tasks.with_columns((pl.col("rank") * tp + t).cast(pl.Int32).alias("rank"))
        for t in range(tp)
    ]
    tasks = pl.concat(copies).sort("rank", "start_ns", "end_ns")
    meta = result.meta | {"tp_ranks": tp}
    return SimResult(tasks, result.requests, meta)


def split_packed_steps(compute: pl.DataFrame, result: SimResult) -> pl.DataFrame:
    """Compute tasks with each packed scheduler step (request_id `batch`, chunk k = step k; see
    pipelines/sim/batching.py) split into one task per request piece, so that every request's
    part of the step carries its own chunk marker: request_id, chunk_idx (the request's piece
    count so far), tokens and prefix_tokens of the piece. The step's interval is tiled, in the
    step's queue order, in proportion to each piece's stage cost on the task's layers (the
    preset's cost model; tokens for a model without a preset), exact to the ns. Runs without
    packed steps come back unchanged (docs/sim_traces.md §2)."""
    steps = result.meta.get("request_steps")
    if not steps:
        return compute
    ids = result.requests["request_id"].to_list()
    index: dict[tuple[int, int], int] = {}
    seen: dict[int, int] = {}
    for k, step in enumerate(steps):
        for i, _, _ in step:
            index[(k, i)] = seen.get(i, 0)
            seen[i] = seen.get(i, 0) + 1
    meta = result.meta
    model = str(meta.get("model", ""))
    cost = (
        presets.cost_model(model, meta.get("hardware"), meta.get("tp"))
        if model in presets.MODELS
        else None
    )
    ranges = meta.get("layer_ranges") or []
    rows = []
    for row in compute.iter_rows(named=True):
        k = row["chunk_idx"]
        if row["request_id"] != BATCH_REQUEST or k is None or k >= len(steps):
            rows.append(row)
            continue
        pieces = steps[k]
        vs = row["vstage"]
        lo, hi = ranges[vs] if 0 <= vs < len(ranges) else (0, cost.num_layers if cost else 1)
        if cost is not None:
            n = len(pieces)
            weights = cost.stage_ns(
                np.array([p[1] for p in pieces]),
                np.array([p[2] for p in pieces]),
                np.full(n, lo),
                np.full(n, hi),
            ).tolist()
        else:
            weights = [float(p[1]) for p in pieces]
        t = row["start_ns"]
        for (i, tokens, prefix), dur in zip(
            pieces, split_ns(row["end_ns"] - row["start_ns"], weights), strict=True
        ):
            piece = dict(row, request_id=ids[i], chunk_idx=index[(k, i)], tokens=tokens)
            rows.append(piece | {"prefix_tokens": prefix, "start_ns": t, "end_ns": t + dur})
            t += dur
    return pl.DataFrame(rows, schema=compute.schema)
