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

from pipelines.analysis.tau.bubble_pred import (
    cpp_bubble_stages,
    percentile_interval,
    predict_bubbles,
    shrunk_curve,
    ttft_saving,
    ttft_saving_interval,
    virtual_stages,
    vpp_bubble_stages,
)
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
    covered = zero = negative = withheld = 0
    errors, widths = [], []
    for i in range(fits):
        base = seed * 1_000_003 + 7919 * i
        frames = [
            chunks_frame(_run(model, n, "vpp", noise, base + r), f"run{r}") for r in range(runs)
        ]
        table = fit_curves(pl.concat(frames), keys=("vstage",), seed=i)
        row = table.row(0, named=True)
        errors.append(row["vpp_bubble_pred"] - bubble)
        if np.isnan(row["vpp_bubble_lo"]):  # one run: no interval (bubble_pred.NO_INTERVAL)
            withheld += 1
        else:
            covered += row["vpp_bubble_lo"] <= bubble <= row["vpp_bubble_hi"]
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
        "covered": _rate_of(covered, fits - withheld),
        "no_interval": withheld,
        "mean_error_pp": 100 * float(np.mean(errors)),
        "median_width_pp": 100 * float(np.median(widths)) if widths else float("nan"),
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


def _rate_of(hits: int, n: int) -> dict:
    """tau_accuracy.rate, or an empty rate when nothing was counted."""
    if n == 0:
        return {"hits": 0, "n": 0, "rate": float("nan"), "ci": [float("nan"), float("nan")]}
    return rate(hits, n)


def _rate(r: dict) -> str:
    lo, hi = r["ci"]
    return f"{r['rate']:.1%} [{100 * lo:.1f},{100 * hi:.1f}]"


def _short(r: dict) -> str:
    if not r["n"]:
        return "no interval"
    lo, hi = r["ci"]
    return f"{r['hits']}/{r['n']} {r['rate']:.0%} [{lo:.0%},{hi:.0%}]"


# ---------------------------------------------------------------------------------------------
# The interval on shaped curves: >= 1,000 seeded draws per cell, the old percentile bootstrap
# beside the bound interval (bubble_pred.bubble_bounds) on the same draws.

SHAPES = ("proportional", "linear a/b=4", "kink x0.3 at N/2", "concave", "knee at 2 (DSA-like)")
STAGE_SPLIT = np.array([16, 15, 15, 15]) / 61  # DeepSeek-V3.1's 61 layers on 4 virtual stages
INTERVAL_NS = (8, 16)
INTERVAL_GS = (2, 5)
INTERVAL_NOISES = (0.05,)


def shaped_curve(shape: str, n: int) -> np.ndarray:
    """A whole-model tau_k (arbitrary units) of one of SHAPES on k = 0..n-1."""
    k = np.arange(n, dtype=float)
    if shape == "proportional":
        return k + 1
    if shape == "linear a/b=4":
        return 4 + k
    if shape == "kink x0.3 at N/2":
        half = n // 2
        return 1 + np.minimum(k, half) + 0.3 * np.maximum(k - half, 0)
    if shape == "concave":
        return 1 + 2 * np.sqrt(k) * np.sqrt(n) / 2
    if shape == "knee at 2 (DSA-like)":
        return 4 + 2 * np.minimum(k, 2) + 0.1 * k
    raise ValueError(f"unknown shape {shape!r}")


def interval_cell(shape: str, n: int, runs: int, noise: float, draws: int, seed: int) -> dict:
    """Coverage of the noise-free VPP bubble (and gain) by the bound interval and by the
    percentile bootstrap it replaced, on the same `draws` seeded sets of `runs` noisy runs."""

    full = shaped_curve(shape, n)
    truth_stages = np.outer(STAGE_SPLIT, full)
    true_vpp = float(vpp_bubble_stages(truth_stages))
    true_gain = float(cpp_bubble_stages(truth_stages)) - true_vpp
    true_saving = ttft_saving(true_vpp, true_gain)
    k_grid = np.arange(n)
    k = np.tile(k_grid, runs)
    run_ids = np.repeat(np.arange(runs), n)
    kept = np.ones(n, dtype=bool)
    line = np.column_stack([np.ones(n), k_grid])
    rng = np.random.default_rng(seed * 7919 + runs * 131 + n)
    hits = dict.fromkeys(
        ("bound", "bound_gain", "ttft", "percentile", "percentile_gain", "inside"), 0
    )
    widths, old_widths, errors, saving_widths = [], [], [], []
    for draw in range(draws):
        curves = []
        for stage in truth_stages:
            y = np.tile(stage, runs) * np.exp(noise * rng.standard_normal(n * runs))
            curves.append(
                shrunk_curve(k_grid, k, y, run_ids, kept, line, 200, seed * 100_003 + draw)
            )
        pred = predict_bubbles(curves, 0.95)
        hits["bound"] += pred.vpp_bubble_lo <= true_vpp <= pred.vpp_bubble_hi
        hits["bound_gain"] += pred.vpp_gain_lo <= true_gain <= pred.vpp_gain_hi
        hits["inside"] += pred.vpp_bubble_lo <= pred.vpp_bubble_pred <= pred.vpp_bubble_hi
        s_lo, s_hi = ttft_saving_interval(
            pred.vpp_bubble_lo, pred.vpp_bubble_hi, pred.vpp_gain_lo, pred.vpp_gain_hi
        )
        hits["ttft"] += s_lo <= true_saving <= s_hi
        saving_widths.append(s_hi - s_lo)
        widths.append(pred.vpp_bubble_hi - pred.vpp_bubble_lo)
        errors.append(pred.vpp_bubble_pred - true_vpp)
        drawn, _ = virtual_stages([c.draws for c in curves])
        vpp_draws = vpp_bubble_stages(drawn)
        lo, hi = percentile_interval(vpp_draws, 0.95)
        glo, ghi = percentile_interval(cpp_bubble_stages(drawn) - vpp_draws, 0.95)
        hits["percentile"] += lo <= true_vpp <= hi
        hits["percentile_gain"] += glo <= true_gain <= ghi
        old_widths.append(hi - lo)
    return {
        "shape": shape,
        "n_chunks": n,
        "runs": runs,
        "noise": noise,
        "truth": true_vpp,
        "true_gain": true_gain,
        **{name: rate(count, draws) for name, count in hits.items()},
        "median_width_pp": 100 * float(np.median(widths)),
        "median_old_width_pp": 100 * float(np.median(old_widths)),
        "mean_error_pp": 100 * float(np.mean(errors)),
        "true_ttft_saving": true_saving,
        "median_ttft_width_pp": 100 * float(np.median(saving_widths)),
    }


def run_vpp_interval(draws: int = 1000, seed: int = 0, as_json: bool = False) -> list[dict]:
    """Every (shape, N, G, noise) cell of the interval study, printed or as JSON."""
    started = time.perf_counter()
    rows = []
    for shape in SHAPES:
        for noise in INTERVAL_NOISES:
            for n in INTERVAL_NS:
                for runs in INTERVAL_GS:
                    rows.append(interval_cell(shape, n, runs, noise, draws, seed))
                    print(
                        f"[{time.perf_counter() - started:6.0f} s] {shape}, {noise:.0%}, "
                        f"N {n}, G {runs}",
                        file=sys.stderr,
                    )
    if as_json:
        json.dump({"draws_per_cell": draws, "cells": rows}, sys.stdout, indent=1)
        print()
        return rows
    print(
        "VPP bubble interval vs the noise-free bubble (pp=2, vp=2, stages 16/15/15/15 of 61 "
        "layers, lognormal noise per chunk)"
    )
    print(f"{draws} seeded draws per cell, 95 % intervals; coverage rate [95 % Wilson CI]")
    print(
        f"{'shape':<21}{'noise':>4}{'N':>3}{'G':>2} {'truth':>6} {'bubble holds':<20}"
        f"{'gain holds':<20}{'TTFT saving holds':<20}{'old':>6}{'pp':>5}{'old':>5}"
    )
    for r in rows:
        print(
            f"{r['shape']:<21}{r['noise']:>4.0%}{r['n_chunks']:>3}{r['runs']:>2} "
            f"{r['truth']:>6.2%} {_rate(r['bound']):<20}{_rate(r['bound_gain']):<20}"
            f"{_rate(r['ttft']):<20}{r['percentile']['rate']:>6.1%}"
            f"{r['median_width_pp']:>5.1f}{r['median_old_width_pp']:>5.1f}"
        )
    print(
        "old: coverage of the percentile bootstrap it replaced (CI in --json); pp: median "
        "width of the bubble interval, old: of the old one"
    )
    low = min(rows, key=lambda r: r["bound"]["rate"])
    old_low = min(rows, key=lambda r: r["percentile"]["rate"])
    print(
        f"lowest coverage: bound {_short(low['bound'])} ({low['shape']}, N {low['n_chunks']}, "
        f"G {low['runs']}); percentile bootstrap {_short(old_low['percentile'])}"
    )
    inside = sum(r["inside"]["hits"] for r in rows)
    print(f"point inside its interval in {inside}/{sum(r['inside']['n'] for r in rows)} draws")
    print(f"{time.perf_counter() - started:.1f} s")
    return rows


def main(argv: list[str] | None = None) -> int:
    """`python -m pipelines.bench.vpp_pred [DRAWS] [--seed S] [--json]`: the interval study
    (DRAWS per cell, default 1,000)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pipelines.bench.vpp_pred")
    parser.add_argument("draws", nargs="?", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.draws < 1:
        parser.error("draws must be >= 1")
    run_vpp_interval(args.draws, args.seed, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
