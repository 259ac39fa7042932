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

import polars as pl

from pipelines.sim.result import SimResult

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
