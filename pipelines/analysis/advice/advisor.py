"""advise(): chunk size x schedule swept on one cost model, the best named, its margin judged.

Every configuration is one `pipelines.sim.run.simulate` call (noise-free) summarised by
`pipelines.sim.metrics.summarize`; the objective is the makespan (throughput = tokens /
makespan) or the mean TTFT. The margin of the best over the runner-up (the best configuration
with a different result: with one request VPP-Pack has nothing to pack and equals VPP-Async, so
it is a tie, not a runner-up) is judged as a measurement would see it: each side measured as
the mean of `runs` runs, a run = one simulation with per-task lognormal noise (a seed each) times
a run-level lognormal factor (docs/advise.md). Over `draws` such paired measurements the margin's
central interval and how often the runner-up measures faster are reported; the margin is
*inside the noise* when that interval reaches zero or below.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pipelines import schedule_kinds
from pipelines.analysis.advice.grid import PAPER_GRID, chunk_count, tokens_label
from pipelines.analysis.advice.sources import CostSource
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate

DEFAULT_SCHEDULES: tuple[str, ...] = schedule_kinds.DISTINCT
"""Every schedule that runs differently (the registry's order)."""
OBJECTIVES = ("throughput", "ttft")
TIE_REL = 1e-9
"""Two configurations whose objective differs by less than this (relative) have one result."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Scenario:
    """The workload: `requests` prompts of `seq_len` tokens queued at t = 0 on `pp` ranks (vp
    virtual stages per rank for the VPP schedules)."""

    seq_len: int
    pp: int = 2
    vp: int = schedule_kinds.DEFAULT_VP
    requests: int = 1
    chunks: tuple[int, ...] = PAPER_GRID
    schedules: tuple[str, ...] = DEFAULT_SCHEDULES
    objective: str = "throughput"

    def __post_init__(self) -> None:
        if self.seq_len < 1 or self.pp < 1 or self.vp < 1 or self.requests < 1:
            raise ValueError("seq_len, pp, vp and requests must be >= 1")
        if not self.chunks or min(self.chunks) < 1:
            raise ValueError("need at least one chunk size >= 1")
        if not self.schedules:
            raise ValueError("need at least one schedule")
        for name in self.schedules:
            schedule_kinds.get(name)
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}")


@dataclass(frozen=True)
class NoiseModel:
    """How a measurement of one configuration varies (docs/advise.md): `task` lognormal sigma per
    stage call, `run` lognormal sigma per run (run-to-run), each side measured as the mean of
    `runs` runs; `draws` paired measurements from `task_seeds` simulated runs per side."""

    task: float = 0.03
    run: float = 0.02
    runs: int = 4
    draws: int = 2000
    task_seeds: int = 40
    level: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        if self.task < 0 or self.run < 0 or not (0 < self.level < 1):
            raise ValueError("noise sigmas must be >= 0 and the level in (0, 1)")
        if self.runs < 1 or self.draws < 100 or self.task_seeds < 1:
            raise ValueError("runs >= 1, draws >= 100 and task_seeds >= 1")


@dataclass(frozen=True)
class Advice:
    source: dict[str, Any]
    scenario: Scenario
    noise: NoiseModel
    rows: list[dict[str, Any]]
    best: dict[str, Any]
    ties: list[str]
    runner_up: dict[str, Any] | None
    margin: float
    margin_lo: float
    margin_hi: float
    runner_up_faster: float
    inside_noise: bool | None
    trends: dict[str, str]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["scenario"] = asdict(self.scenario)
        out["noise"] = asdict(self.noise)
        return out


def _objective(row: dict[str, Any], objective: str) -> float:
    """Lower is better: the makespan for throughput, the mean TTFT for ttft."""
    return float(row["makespan_ns"] if objective == "throughput" else row["ttft_mean_ns"])


def _options(source: CostSource, scenario: Scenario, schedule: str, chunk: int) -> dict:
    vp = scenario.vp if schedule_kinds.is_virtual(schedule) else 1
    return dict(source.simulate_options(), chunk_size=int(chunk), pp=scenario.pp, vp=vp)


def _requests(scenario: Scenario) -> list[int]:
    return [scenario.seq_len] * scenario.requests


def sweep_grid(
    source: CostSource, scenario: Scenario, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """One noise-free row per (schedule, chunk size): makespan, TTFT, throughput, bubble and
    exposed-comm ratios, scheduling steps, the chunk count and the last chunk's tokens."""
    rows = []
    total = len(scenario.schedules) * len(scenario.chunks)
    for schedule in scenario.schedules:
        if progress is not None:
            progress(
                f"simulate {len(rows) + 1}-{len(rows) + len(scenario.chunks)} of {total}: "
                f"{schedule} at {len(scenario.chunks)} chunk sizes"
            )
        for chunk in scenario.chunks:
            result = simulate(
                _requests(scenario), schedule, **_options(source, scenario, schedule, chunk)
            )
            s = summarize(result)
            n, last = chunk_count(scenario.seq_len, chunk)
            rows.append(
                {
                    "schedule": schedule,
                    "chunk_size": int(chunk),
                    "n_chunks": n,
                    "last_chunk": last,
                    "makespan_ns": int(s["makespan_ns"]),
                    "ttft_mean_ns": float(s["ttft_mean_ns"]),
                    "throughput_tok_s": float(s["throughput_tok_s"]),
                    "bubble_ratio": float(s["bubble_ratio"]),
                    "exposed_comm_ratio": float(s["exposed_comm_ratio"]),
                    "scheduling_steps": int(s["scheduling_steps"]),
                }
            )
    return rows


def _noisy_objective(
    source: CostSource, scenario: Scenario, row: dict, noise: NoiseModel, offset: int
) -> np.ndarray:
    """The objective of `task_seeds` runs of one configuration with per-task noise."""
    if noise.task == 0:
        return np.array([_objective(row, scenario.objective)])
    options = _options(source, scenario, row["schedule"], row["chunk_size"])
    values = []
    for i in range(noise.task_seeds):
        result = simulate(
            _requests(scenario),
            row["schedule"],
            noise=noise.task,
            seed=noise.seed * 1_000_003 + offset + i,
            **options,
        )
        values.append(_objective(summarize(result), scenario.objective))
    return np.array(values)


def margin_draws(best: np.ndarray, other: np.ndarray, noise: NoiseModel) -> np.ndarray:
    """`draws` measured margins other / best - 1, each side the mean of `runs` runs drawn from
    its simulated runs (with replacement) times a run-level factor exp(run z)."""
    rng = np.random.default_rng(noise.seed)

    def measured(values: np.ndarray) -> np.ndarray:
        picks = values[rng.integers(0, len(values), (noise.draws, noise.runs))]
        factor = np.exp(noise.run * rng.standard_normal((noise.draws, noise.runs)))
        return (picks * factor).mean(axis=1)

    return measured(other) / measured(best) - 1.0


def trend(rows: Sequence[dict[str, Any]], objective: str) -> str:
    """How one schedule's objective moves with chunk size across the grid: 'falls as chunks
    shrink' (each smaller chunk worse), 'rises as chunks shrink' (each smaller chunk better),
    'best at <c>' otherwise; '-' for one chunk size."""
    ordered = sorted(rows, key=lambda r: r["chunk_size"])
    if len(ordered) < 2:
        return "-"
    cost = [_objective(r, objective) for r in ordered]
    if all(a > b for a, b in itertools.pairwise(cost)):
        return "falls as chunks shrink"
    if all(a < b for a, b in itertools.pairwise(cost)):
        return "rises as chunks shrink"
    best = ordered[int(np.argmin(cost))]
    return f"best at {tokens_label(best['chunk_size'])}"


def advise(
    source: CostSource,
    scenario: Scenario,
    noise: NoiseModel | None = None,
    progress: Progress | None = None,
) -> Advice:
    """Sweep every (schedule, chunk size) of `scenario` on `source`, name the best by the
    scenario's objective, and judge its margin over the runner-up under `noise`."""
    noise = noise or NoiseModel()
    rows = sweep_grid(source, scenario, progress)
    key = scenario.objective
    order = sorted(
        range(len(rows)),
        key=lambda i: (_objective(rows[i], key), scenario.schedules.index(rows[i]["schedule"])),
    )
    best = rows[order[0]]
    top = _objective(best, key)
    same = [rows[i] for i in order if abs(_objective(rows[i], key) / top - 1) <= TIE_REL]
    ties = [f"{r['schedule']} at {tokens_label(r['chunk_size'])}" for r in same[1:]]
    others = [rows[i] for i in order if abs(_objective(rows[i], key) / top - 1) > TIE_REL]
    runner = others[0] if others else None
    margin = lo = hi = flips = math.nan
    inside: bool | None = None
    notes: list[str] = []
    if runner is not None:
        margin = _objective(runner, key) / top - 1
        if progress is not None:
            progress(
                f"noise: {noise.task_seeds} noisy runs each of the best and the runner-up, "
                f"{noise.draws} draws of {noise.runs} runs a side"
            )
        best_runs = _noisy_objective(source, scenario, best, noise, 0)
        other_runs = _noisy_objective(source, scenario, runner, noise, 500_000)
        measured = margin_draws(best_runs, other_runs, noise)
        tail = (1 - noise.level) / 2
        lo, hi = (float(v) for v in np.quantile(measured, [tail, 1 - tail]))
        flips = float(np.mean(measured <= 0))
        inside = lo <= 0
    if scenario.requests == 1 and "vpp_pack" in scenario.schedules:
        notes.append("one request: VPP-Pack has no next request to pack and equals VPP-Async")
    trends = {s: trend([r for r in rows if r["schedule"] == s], key) for s in scenario.schedules}
    return Advice(
        source={"kind": source.kind, "label": source.label, "notes": list(source.notes)},
        scenario=scenario,
        noise=noise,
        rows=rows,
        best=best,
        ties=ties,
        runner_up=runner,
        margin=margin,
        margin_lo=lo,
        margin_hi=hi,
        runner_up_faster=flips,
        inside_noise=inside,
        trends=trends,
        notes=notes,
    )
