"""The tau_k verdicts under realistic disturbances: one table cell per (disturbance, N, G).

    uv run tracereplay bench tau-accuracy --cells 40 [--seed 0] [--json]

A cell simulates `curves` pooled fits of G seeded runs of one request of N chunks of 16K tokens
(CPP, pp=2, DeepSeek-V3.1's link figures) with one disturbance (pipelines.sim.disturbance), fits
every virtual stage with pipelines.analysis.tau.curves.fit_curves (runs pooled) and counts, per
stage curve:

* dense (DeepSeek-V3.1 preset, exactly affine in k without noise): the verdict is `linear` or
  `drift` (a named disturbance, not a tau-shape verdict; target >= 97 %), and the
  95 % slope interval holds the noise-free run's slope (target 93-97 %);
* GLM-5.2 (DSA preset): flagged (target >= 97 %);
* collapse: the dense noise-free curve whose slope drops by half from chunk N/2 on (a tabulated
  cost), detected as `kinked` or `linear_offset` (target >= 80 % at G = 3, never below G = 1).

Each rate is printed with n and a 95 % Wilson interval.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.analysis.tau.curves import fit_curves
from pipelines.analysis.tau.verdict_policy import FLAGGED_VERDICTS
from pipelines.bench.tau_accuracy import rate, wilson
from pipelines.replay.tables import chunks_frame
from pipelines.replay.tabulated_cost import TabulatedCost
from pipelines.sim.disturbance import Disturbance, draw_onset
from pipelines.sim.fitted_cost import FittedCost
from pipelines.sim.run import simulate

K = 1024
CHUNK = 16 * K
CHUNK_COUNTS = (8, 16, 21)
REPEATS = (1, 3, 5)
DENSE_OK = ("linear", "drift")
KINDS = ("dense", "covered", "glm", "collapse")
"""The four rates of a cell: dense verdict, slope coverage, GLM-5.2 flagged, collapse detected."""


@dataclass(frozen=True)
class Cell:
    name: str
    noise: float
    disturbance: Disturbance | None


CELLS = (
    Cell("iid 3%", 0.03, None),
    Cell("iid 5%", 0.05, None),
    Cell("one x2 chunk", 0.03, Disturbance(outlier_factor=2.0)),
    Cell("one x1.3 chunk", 0.03, Disturbance(outlier_factor=1.3)),
    Cell("AR(1) 0.5", 0.03, Disturbance(ar_rho=0.5)),
    Cell("AR(1) 0.7", 0.03, Disturbance(ar_rho=0.7)),
    Cell("x1.05 step", 0.03, Disturbance(throttle_factor=1.05)),
)
"""The outlier chunk is drawn per fit (a chunk index 1..N-2, the same in every run of the fit:
a slow kernel at a prefix length); the throttle's onset per run (a chunk 1..N-1: a clock step
comes when it comes, and one at the same chunk in every run is a level step of the curve)."""


def collapsed(tau: np.ndarray) -> np.ndarray:
    """The curve with its slope (end to end) halved from chunk n // 2 on."""
    n = len(tau)
    slope = (tau[-1] - tau[0]) / (n - 1)
    return tau - 0.5 * slope * np.maximum(np.arange(n, dtype=float) - n // 2, 0.0)


def _collapse_cost(n: int) -> TabulatedCost:
    """DeepSeek-V3.1's noise-free chunk curve with the slope halved from chunk n/2 on."""
    run = simulate(
        n * CHUNK, "cpp", model="deepseek-v3.1", chunk_size=CHUNK, comm=None, collectives=None
    )
    frame = chunks_frame(run, "b").group_by("chunk_idx").agg(pl.col("busy_ns").sum())
    tau = collapsed(frame.sort("chunk_idx")["busy_ns"].to_numpy().astype(float))
    k = np.arange(n, dtype=float)
    return TabulatedCost(
        table={CHUNK: (k * CHUNK, tau)},
        fallback=FittedCost(alpha_ns=float(tau.mean()) / CHUNK, beta_ns=0.0),
    )


def _fit(model, n: int, cell: Cell, runs: int, seed: int, rng: np.random.Generator):
    disturbance = cell.disturbance
    if disturbance is not None and disturbance.outlier_factor != 1.0:
        outlier = int(rng.integers(1, n - 1))
        disturbance = Disturbance(outlier_k=outlier, outlier_factor=disturbance.outlier_factor)
    frames = []
    for r in range(runs):
        mine = disturbance
        if mine is not None and mine.throttle_factor != 1.0:  # the onset drawn per run
            mine = mine.with_onset(draw_onset(n, rng), n)
        result = simulate(
            n * CHUNK,
            "cpp",
            model=model,
            chunk_size=CHUNK,
            noise=cell.noise,
            seed=seed + r,
            disturbance=mine,
            collectives=None,  # compute curves only: the disturbances scale compute tasks
        )
        frames.append(chunks_frame(result, f"run{r}"))
    return fit_curves(pl.concat(frames), keys=("vstage",), n_boot=0)


def _true_slopes(n: int) -> dict[int, float]:
    run = simulate(n * CHUNK, "cpp", model="deepseek-v3.1", chunk_size=CHUNK, collectives=None)
    out = {}
    for (vstage,), group in chunks_frame(run, "t").group_by(["vstage"]):
        k = group["chunk_idx"].to_numpy().astype(float)
        out[int(vstage)] = float(np.polyfit(k, group["busy_ns"].to_numpy().astype(float), 1)[0])
    return out


def cell_rates(cell: Cell, n: int, runs: int, curves: int, seed: int) -> dict:
    """The four rates of one cell over `curves` fits (2 stage curves each)."""
    rng = np.random.default_rng(seed)
    truth = _true_slopes(n)
    collapse = _collapse_cost(n)
    counts = dict.fromkeys(KINDS, 0)
    totals = dict.fromkeys(counts, 0)
    verdicts: dict[str, dict[str, int]] = {"dense": {}, "glm": {}, "collapse": {}}
    for i in range(curves):
        base = seed * 1_000_003 + 7919 * i
        for kind, model in (("dense", "deepseek-v3.1"), ("glm", "glm-5.2"), ("collapse", collapse)):
            table = _fit(model, n, cell, runs, base, rng)
            for row in table.iter_rows(named=True):
                verdict = row["verdict"]
                verdicts[kind][verdict] = verdicts[kind].get(verdict, 0) + 1
                totals[kind] += 1
                if kind == "dense":
                    counts["dense"] += verdict in DENSE_OK
                    totals["covered"] += 1
                    counts["covered"] += row["slope_lo"] <= truth[row["vstage"]] <= row["slope_hi"]
                elif kind == "glm":
                    counts["glm"] += verdict in FLAGGED_VERDICTS
                else:
                    counts["collapse"] += verdict in ("knee", "flattened")
    return {
        "cell": cell.name,
        "n_chunks": n,
        "runs": runs,
        "fits": curves,
        **{key: rate(counts[key], totals[key]) for key in counts},
        "verdicts": verdicts,
    }


TARGETS = {"dense": (0.97, 1.0), "covered": (0.93, 0.97), "glm": (0.97, 1.0), "collapse": (0.8, 1)}


def run_cells(curves: int = 40, seed: int = 0, as_json: bool = False) -> list[dict]:
    """Every cell of CELLS x CHUNK_COUNTS x REPEATS, printed as one table (or JSON)."""
    started = time.perf_counter()
    rows = [
        cell_rates(cell, n, runs, curves, seed + 100 * j)
        for j, cell in enumerate(CELLS)
        for n in CHUNK_COUNTS
        for runs in REPEATS
    ]
    if as_json:
        json.dump({"curves_per_cell": curves, "cells": rows}, sys.stdout, indent=1)
        print()
        return rows
    print(
        f"tau_k verdicts under disturbances: {curves} fits x 2 stage curves per cell and kind, "
        f"CPP pp=2, {CHUNK // K}K chunks; rate hits/n [95% Wilson CI]"
    )
    header = f"{'cell':<15}{'N':>3}{'G':>3}  {'dense linear/drift':<24}{'slope CI covers':<24}"
    print(header + f"{'GLM flagged':<24}collapse kinked/offset")
    for row in rows:
        parts = [rate_text(row[key], target_of(key, row["runs"])) for key in KINDS]
        print(
            f"{row['cell']:<15}{row['n_chunks']:>3}{row['runs']:>3}  "
            + "".join(f"{p:<24}" for p in parts).rstrip()
        )
    print("(* = point estimate outside the target; the collapse has one only at G = 3)")
    print(f"{time.perf_counter() - started:.1f} s")
    return rows


def target_of(kind: str, runs: int) -> tuple[float, float] | None:
    """The target of a rate in a cell; the collapse has one only at G = 3 (elsewhere: never
    below G = 1, read across the rows)."""
    return None if kind == "collapse" and runs != 3 else TARGETS[kind]


def rate_text(r: dict, target: tuple[float, float] | None, counts: bool = True) -> str:
    """`hits/n rate% [lo%,hi%]` (or `rate% [lo,hi]` to a tenth without the counts), * when the
    rate is outside the target."""
    lo, hi = r["ci"]
    miss = "" if target is None or target[0] <= r["rate"] <= target[1] else "*"
    if not counts:
        return f"{100 * r['rate']:.1f}{miss} [{100 * lo:.0f},{100 * hi:.0f}]"
    return f"{r['hits']}/{r['n']} {r['rate']:.0%} [{lo:.0%},{hi:.0%}]{miss}"


__all__ = ["CELLS", "cell_rates", "collapsed", "rate_text", "run_cells", "target_of", "wilson"]
