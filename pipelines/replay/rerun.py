"""replay(chunks, schedules): the requests of one measured run under other schedules.

The measured run is a chunks frame in the canonical schema; its requests arrive at their first
chunk start with prompt = the largest tokens + prefix_tokens of their chunks, and every schedule
is simulated (pipelines.sim.run.simulate) with the run's measured τ as the cost model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from pipelines.replay.costs import TabulatedCost
from pipelines.sim.comm import CommModel
from pipelines.sim.costs import StageCost
from pipelines.sim.measured import FittedCost
from pipelines.sim.result import SimResult
from pipelines.sim.run import simulate


def replay(
    chunks: pl.DataFrame,
    schedules: Sequence[str] = ("cpp", "dcpp", "vpp", "vpp_async", "vpp_pack"),
    *,
    cost: str = "tabulated",
    pp: int | None = None,
    vp: int = 2,
    chunk_size: int | None = None,
    comm: CommModel | None = None,
    gamma_ns: float | None = None,
    model_name: str | None = None,
    noise: float = 0.0,
    seed: int = 0,
    **options: Any,
) -> dict[str, SimResult]:
    """Re-simulate the requests of one measured run (a chunks frame in the canonical schema)
    under other schedules, with its measured τ: `cost="tabulated"` replays the measured latency
    of each (c, p) and falls back to the fit for chunk sizes never measured; `cost="fitted"`
    uses τ(c, p) = α c + β c (p + c/2) + γ fitted to all rows (γ, the per-call overhead, is
    only identifiable from a run with several chunk sizes: pass `gamma_ns` for a fixed-chunk
    run). pp defaults to the run's rank count, chunk_size to its largest chunk; arrivals are the
    requests' first start times. Transfers are free unless `comm` is given. `model_name`
    labels the results' meta["model"] (default "replay")."""
    if cost == "tabulated":
        model: StageCost = TabulatedCost.from_chunks(chunks, gamma_ns=gamma_ns)
    elif cost == "fitted":
        model = FittedCost.from_chunks(chunks, gamma_ns=gamma_ns)
    else:
        raise ValueError("cost must be 'tabulated' or 'fitted'")
    per_request = (
        chunks.group_by("request_id")
        .agg(
            pl.col("start_ns").min().alias("arrival_ns"),
            (pl.col("tokens") + pl.col("prefix_tokens")).max().alias("prompt_tokens"),
        )
        .sort(["arrival_ns", "request_id"])
    )
    requests = per_request.with_columns(pl.col("arrival_ns") - pl.col("arrival_ns").min())
    pp = pp if pp is not None else chunks["rank"].n_unique()
    chunk_size = chunk_size if chunk_size is not None else int(chunks["tokens"].max())
    out = {}
    for schedule in schedules:
        result = simulate(
            requests,
            schedule,
            model=model,
            pp=pp,
            vp=vp if schedule.startswith("vpp") else 1,
            chunk_size=chunk_size,
            comm=comm,
            noise=noise,
            seed=seed,
            **options,
        )
        result.meta.update(
            model=model_name or "replay", replay_cost=cost, replay_of=_run_id(chunks)
        )
        out[schedule] = result
    return out


def _run_id(chunks: pl.DataFrame) -> str | None:
    if "run_id" in chunks.columns and chunks.height:
        return str(chunks["run_id"][0])
    return None
