"""replay(chunks, schedules): the requests of one measured run under other schedules.

The measured run is a chunks frame in the canonical schema; its requests arrive at their first
chunk start with prompt = the largest tokens + prefix_tokens of their chunks, and every schedule
is simulated (pipelines.sim.run.simulate) with the run's measured τ as the cost model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from pipelines import schedule_kinds
from pipelines.replay.tabulated_cost import TabulatedCost
from pipelines.sim.comm import CollectiveModel, CommModel
from pipelines.sim.cost_models import StageCost
from pipelines.sim.fitted_cost import DEFAULT_LAYERS, FittedCost, Overheads
from pipelines.sim.result import SimResult
from pipelines.sim.run import simulate


def replay(
    chunks: pl.DataFrame,
    schedules: Sequence[str] = schedule_kinds.BASES,
    *,
    cost: str = "tabulated",
    pp: int | None = None,
    vp: int = 2,
    chunk_size: int | None = None,
    comm: CommModel | None = None,
    gamma_ns: float | None = None,
    model_name: str | None = None,
    overheads: Overheads | None = None,
    collectives: CollectiveModel | None = None,
    num_layers: int = DEFAULT_LAYERS,
    stage_fractions: dict[int, float] | None = None,
    noise: float = 0.0,
    seed: int = 0,
    host_call_ns: float = 0.0,
    **options: Any,
) -> dict[str, SimResult]:
    """Re-simulate the requests of one measured run (a chunks frame in the canonical schema)
    under other schedules, with its measured τ: `cost="tabulated"` replays the measured latency
    of each (c, p) and falls back to the fit for chunk sizes never measured; `cost="fitted"`
    uses τ(c, p) = α c + β c (p + c/2) + γ fitted to all rows (γ, the per-call overhead, is
    only identifiable from a run with several chunk sizes: pass `gamma_ns` for a fixed-chunk
    run). pp defaults to the run's rank count, chunk_size to its largest chunk; arrivals are the
    requests' first start times. Transfers are free unless `comm` is given. `model_name`
    labels the results' meta["model"] (default "replay").

    `overheads` (presets.replay_overheads) supplies the per-call overhead, the fixed per-pass
    cost and the prefix-only term when the run has one chunk size; each result's
    meta["replay_overhead"] says where they came from and meta["replay_note"] names the
    extrapolation when a schedule runs chunk sizes never measured. `collectives` adds the
    preset's TP / EP collectives (measured busy_ns excludes them); `num_layers` and
    `stage_fractions` give the measured run's layer split. `host_call_ns`: host time every
    stage call costs besides its measured busy_ns (pipelines.replay.host_time), added to the
    cost model's per-call overhead."""
    fit_args = {
        "gamma_ns": gamma_ns,
        "stage_fractions": stage_fractions,
        "num_layers": num_layers,
        "overheads": overheads,
    }
    if cost == "tabulated":
        model: StageCost = TabulatedCost.from_chunks(chunks, **fit_args)
        fit = model.fallback  # type: ignore[attr-defined]
    elif cost == "fitted":
        model = fit = FittedCost.from_chunks(chunks, **fit_args)
    else:
        raise ValueError("cost must be 'tabulated' or 'fitted'")
    if host_call_ns:
        model = replace(model, call_overhead_ns=model.call_overhead_ns + host_call_ns)  # type: ignore[type-var]
    measured_sizes = set(chunks["tokens"].unique().to_list())
    source = fit.fit_info.get("overhead", "unidentified")
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
            vp=vp if schedule_kinds.is_virtual(schedule) else 1,
            chunk_size=chunk_size,
            comm=comm,
            collectives=collectives,
            noise=noise,
            seed=seed,
            **options,
        )
        result.meta.update(
            model=model_name or "replay",
            replay_cost=cost,
            replay_of=_run_id(chunks),
            replay_overhead=source,
        )
        sizes = set(result.tasks.filter(pl.col("kind") == "compute")["tokens"].unique().to_list())
        if source != "fitted" and not sizes <= measured_sizes:
            name = schedule.split("_")[0].upper()
            what = {"preset": "overhead from preset", "given": "overhead as given"}
            note = what.get(source, "overhead unidentified (0): pass a preset or gamma_ns")
            result.meta["replay_note"] = f"{name} extrapolates chunk size: {note}"
        out[schedule] = result
    return out


def _run_id(chunks: pl.DataFrame) -> str | None:
    if "run_id" in chunks.columns and chunks.height:
        return str(chunks["run_id"][0])
    return None
