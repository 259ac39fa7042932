"""Best token budget: one schedule simulated at each budget, the fastest kept.

The paper reports every schedule at its best chunk budget out of {8K, 16K, 24K, 32K} tokens
(VPP paper §7); `budget_sweep` runs `run.simulate` once per budget with the same options and
ranks them by makespan (ties: the smaller budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from pipelines.sim.metrics import summarize
from pipelines.sim.result import SimResult
from pipelines.sim.run import RequestsLike, simulate

PAPER_BUDGETS: tuple[int, ...] = (8192, 16384, 24576, 32768)


def budget_sweep(
    requests: RequestsLike,
    schedule: str,
    budgets: Sequence[int] = PAPER_BUDGETS,
    **options: Any,
) -> tuple[pl.DataFrame, SimResult]:
    """(one row per budget: chunk_size, makespan_ns, scheduling_steps, ttft_p50_ns, ttft_p99_ns,
    bubble_ratio, best; the best budget's run)."""
    if not budgets:
        raise ValueError("need at least one budget")
    rows = []
    best: tuple[int, int, SimResult] | None = None
    for budget in budgets:
        result = simulate(requests, schedule, chunk_size=int(budget), **options)
        s = summarize(result)
        rows.append(
            {
                "chunk_size": int(budget),
                "makespan_ns": int(s["makespan_ns"]),
                "scheduling_steps": int(s["scheduling_steps"]),
                "ttft_p50_ns": float(s["ttft_p50_ns"]),
                "ttft_p99_ns": float(s["ttft_p99_ns"]),
                "bubble_ratio": float(s["bubble_ratio"]),
            }
        )
        key = (int(s["makespan_ns"]), int(budget))
        if best is None or key < best[:2]:
            best = (*key, result)
    assert best is not None
    table = pl.DataFrame(rows).with_columns((pl.col("chunk_size") == best[1]).alias("best"))
    return table, best[2]
