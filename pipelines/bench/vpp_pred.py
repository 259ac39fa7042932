"""Is the fit table's predicted VPP bubble what it says? Coverage of its interval.

    uv run tracereplay bench tau-accuracy --vpp-fits 40 [--seed 0] [--json]

A cell pools G seeded VPP runs (pp = 2, vp = 2, free transfers, one request of N chunks of 16K
tokens, lognormal task noise) of a preset, fits every virtual stage with
pipelines.analysis.tau.curves.fit_curves and reads the configuration's `vpp_bubble_pred` [lo, hi]
and `vpp_gain_pred` (one value per fit: the first stage's row). The truth is the simulator's: the
bubble ratio of the same VPP run without noise (its stages are unequal: DeepSeek-V3.1 has 61
layers, 16/15/15/15 per virtual stage) and the gain = CPP's noise-free bubble minus it. Per cell:
the interval's coverage of the truth (n, 95 % Wilson interval), the mean error in percentage
points, the balance interval's coverage of 0 (every stage of these presets is exactly affine in k
without noise) and for GLM-5.2 how often the predicted gain is negative.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import polars as pl

from pipelines.analysis.tau.curves import fit_curves
from pipelines.bench.tau_accuracy import rate
from pipelines.replay.tables import chunks_frame
from pipelines.sim.metrics import bubble_ratio_exact
from pipelines.sim.run import simulate

K = 1024
CHUNK = 16 * K
MODELS = ("deepseek-v3.1", "glm-5.2")
CHUNK_COUNTS = (8, 16)
REPEATS = (1, 3, 5)
NOISES = (0.03, 0.05)


def _run(model: str, n: int, schedule: str, noise: float = 0.0, seed: int = 0):
    return simulate(
        n * CHUNK,
        schedule,
        model=model,
        chunk_size=CHUNK,
        noise=noise,
        seed=seed,
        comm=None,
        collectives=None,
    )


def truth(model: str, n: int) -> tuple[float, float]:
    """The noise-free VPP bubble ratio and CPP's minus it."""
    vpp = float(bubble_ratio_exact(_run(model, n, "vpp")))
    return vpp, float(bubble_ratio_exact(_run(model, n, "cpp"))) - vpp


def cell(model: str, n: int, runs: int, noise: float, fits: int, seed: int) -> dict:
    bubble, gain = truth(model, n)
    covered = zero = negative = 0
    errors, widths = [], []
    for i in range(fits):
        base = seed * 1_000_003 + 7919 * i
        frames = [
            chunks_frame(_run(model, n, "vpp", noise, base + r), f"run{r}") for r in range(runs)
        ]
        table = fit_curves(pl.concat(frames), keys=("vstage",), seed=i)
        row = table.row(0, named=True)
        covered += row["vpp_bubble_lo"] <= bubble <= row["vpp_bubble_hi"]
        errors.append(row["vpp_bubble_pred"] - bubble)
        widths.append(row["vpp_bubble_hi"] - row["vpp_bubble_lo"])
        negative += row["vpp_gain_pred"] < 0
        zero += int((table["balance_lo"] <= 0).sum())
    return {
        "model": model,
        "n_chunks": n,
        "runs": runs,
        "noise": noise,
        "truth": bubble,
        "true_gain": gain,
        "covered": rate(covered, fits),
        "mean_error_pp": 100 * float(np.mean(errors)),
        "median_width_pp": 100 * float(np.median(widths)),
        "balance_holds_0": rate(zero, fits * 4),
        "gain_negative": rate(negative, fits),
    }


def run_vpp_pred(fits: int = 40, seed: int = 0, as_json: bool = False) -> list[dict]:
    started = time.perf_counter()
    rows = [
        cell(model, n, runs, noise, fits, seed)
        for model in MODELS
        for noise in NOISES
        for n in CHUNK_COUNTS
        for runs in REPEATS
    ]
    if as_json:
        json.dump({"fits_per_cell": fits, "cells": rows}, sys.stdout, indent=1)
        print()
        return rows
    print(
        f"vpp_bubble_pred vs the simulator's noise-free VPP bubble (pp=2, vp=2, free transfers, "
        f"{CHUNK // K}K chunks): {fits} fits per cell, 95% interval; rates hits/n [95% Wilson CI]"
    )
    print(
        f"{'model':<14}{'noise':>6}{'N':>3}{'G':>3}  {'truth':>6} {'error pp':>8} {'width pp':>8}"
        f"  {'interval holds truth':<22}{'balance CI holds 0':<23}gain < 0 (true gain)"
    )
    for r in rows:
        print(
            f"{r['model']:<14}{r['noise']:>6.0%}{r['n_chunks']:>3}{r['runs']:>3}  "
            f"{r['truth']:>6.2%} {r['mean_error_pp']:>+8.2f} {r['median_width_pp']:>8.2f}  "
            f"{_short(r['covered']):<22}{_short(r['balance_holds_0']):<23}"
            f"{_short(r['gain_negative'])} ({r['true_gain']:+.2%})"
        )
    for model in MODELS:
        mine = [r for r in rows if r["model"] == model]
        total = {
            key: rate(sum(r[key]["hits"] for r in mine), sum(r[key]["n"] for r in mine))
            for key in ("covered", "balance_holds_0", "gain_negative")
        }
        error = np.mean([r["mean_error_pp"] for r in mine])
        print(
            f"{model:<14} all cells: mean error {error:+.2f} pp, interval holds truth "
            f"{_short(total['covered'])}, balance CI holds 0 {_short(total['balance_holds_0'])}"
            f", gain < 0 {_short(total['gain_negative'])}"
        )
    print(f"{time.perf_counter() - started:.1f} s")
    return rows


def _short(r: dict) -> str:
    lo, hi = r["ci"]
    return f"{r['hits']}/{r['n']} {r['rate']:.0%} [{lo:.0%},{hi:.0%}]"
