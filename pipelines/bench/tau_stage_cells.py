"""The disturbance table on stage curves: the same cells and targets as tau_cells, ~2x faster.

    uv run tracereplay bench tau-accuracy --stage-cells 200 [--only "x1.05 step"] [--repeats 3,5]
        [--json]

Where tau_cells simulates every run of every fit, this draws the disturbances around the
simulator's noise-free stage curves (CPP, pp=2, one request of N chunks of 16K tokens, the
DeepSeek-V3.1 and GLM-5.2 presets) and fits each stage curve with fits.fit_stage + classify,
the functions fit_curves calls per curve. A draw of one run of a stage curve tau:

    tau_k x f_k x exp(noise z_k),  rounded to integer ns

with z white or AR(1) over the chunk sequence, f_k the throttle factor from a chunk drawn per
run (1..N-1, pipelines.sim.disturbance.draw_onset) on and the outlier factor at one chunk index
1..N-2 drawn per fit (the same index in every run of the fit), as pipelines.sim.disturbance
draws them in the simulator.
Every cell starts from the same seed; per fit, the outlier index, then per stage the dense,
GLM-5.2 and collapse draws (the collapse curve: the dense curve with its slope halved from N/2).
The slope target is the noise-free dense stage curve's least-squares slope. Measured
2026-12-03 (2 cores, one process): 8 fits a cell, all 63 cells, 71 s against tau_cells' 130 s.

Each rate is printed with n (2 stage curves per fit) and a 95 % Wilson interval, plus how many
fits named a step (`+step` in ci_method) and how many joined a step model's interval.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits

from pipelines.analysis.tau.fits import fit_stage
from pipelines.analysis.tau.outliers import screen_outliers
from pipelines.analysis.tau.robust_slope import robust_slope_interval
from pipelines.analysis.tau.verdict_policy import FLAGGED_VERDICTS
from pipelines.analysis.tau.verdicts import classify
from pipelines.bench.tau_accuracy import rate
from pipelines.bench.tau_cells import (
    CELLS,
    CHUNK,
    CHUNK_COUNTS,
    DENSE_OK,
    KINDS,
    REPEATS,
    Cell,
    collapsed,
    rate_text,
    target_of,
)
from pipelines.replay.tables import chunks_frame
from pipelines.sim.disturbance import ar1_sequence, draw_onset
from pipelines.sim.run import simulate

ONE_BLAS_THREAD = threadpool_limits.wrap(limits=1, user_api="blas")
"""The cells' fits solve matrices of 8-21 rows; OpenBLAS splits even those over its threads,
which then wait on each other when the cores are shared: measured 2026-12-04 (2 cores, load 4,
cProfile of `--one-run 20 --chunks 9 --only "iid 3%"`), scipy's solve_triangular on 9x9 took
13 ms a call and half the run (22.0 s), one thread 4.2 s in all. Same LAPACK routines, one
thread: identical numbers (every interval of 400 stage curves, bit for bit; docs/tau_k_accuracy.md
§6.11). Applied as a decorator: the limit holds while a cell runs, then is restored."""


def stage_curves(model: str, n: int) -> list[np.ndarray]:
    """The noise-free compute time (ns) of chunk k on each virtual stage, k = 0..n-1."""
    run = simulate(n * CHUNK, "cpp", model=model, chunk_size=CHUNK, comm=None, collectives=None)
    frame = chunks_frame(run, "t")
    return [
        frame.filter(pl.col("vstage") == vs).sort("chunk_idx")["busy_ns"].to_numpy().astype(float)
        for vs in sorted(frame["vstage"].unique().to_list())
    ]


def draw_runs(
    tau: np.ndarray, runs: int, cell: Cell, rng: np.random.Generator, outlier_k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k, tau, run) of `runs` disturbed runs of one stage curve."""
    n = len(tau)
    d = cell.disturbance
    rho = d.ar_rho if d is not None else 0.0
    ys = []
    for _ in range(runs):
        factor = np.ones(n)
        if d is not None and d.throttle_factor != 1.0:  # the onset drawn per run
            factor[draw_onset(n, rng) :] *= d.throttle_factor
        if d is not None and d.outlier_factor != 1.0:
            factor[outlier_k] *= d.outlier_factor
        z = ar1_sequence(n, rho, rng) if rho else rng.standard_normal(n)
        ys.append(np.rint(tau * factor * np.exp(cell.noise * z)))
    k = np.tile(np.arange(n, dtype=float), runs)
    return k, np.concatenate(ys), np.repeat(np.arange(runs), n)


@ONE_BLAS_THREAD
def stage_cell_rates(cell: Cell, n: int, runs: int, fits: int, seed: int) -> dict:
    """The four rates of one cell over `fits` draws of the 2 stage curves."""
    rng = np.random.default_rng(seed)
    dense, glm = stage_curves("deepseek-v3.1", n), stage_curves("glm-5.2", n)
    collapse = [collapsed(tau) for tau in dense]
    truth = [float(np.polyfit(np.arange(n, dtype=float), t, 1)[0]) for t in dense]
    counts = dict.fromkeys(KINDS, 0)
    named_step = joined_step = 0
    verdicts: dict[str, dict[str, int]] = {"dense": {}, "glm": {}, "collapse": {}}
    for _ in range(fits):
        outlier_k = int(rng.integers(1, n - 1))
        for s, tau in enumerate(dense):
            for kind, curve in (("dense", tau), ("glm", glm[s]), ("collapse", collapse[s])):
                fit, _ = fit_stage(*draw_runs(curve, runs, cell, rng, outlier_k), n_boot=0)
                label = classify(fit).label
                verdicts[kind][label] = verdicts[kind].get(label, 0) + 1
                if kind == "dense":
                    counts["dense"] += label in DENSE_OK
                    counts["covered"] += fit.slope_lo <= truth[s] <= fit.slope_hi
                    named_step += "+step" in fit.ci_method
                    joined_step += "joined with a level step" in fit.ci_method
                elif kind == "glm":
                    counts["glm"] += label in FLAGGED_VERDICTS
                else:
                    counts["collapse"] += label in ("knee", "flattened")
    total = fits * len(dense)
    return {
        "cell": cell.name,
        "n_chunks": n,
        "runs": runs,
        "fits": fits,
        **{key: rate(counts[key], total) for key in KINDS},
        "dense_step_named": named_step,
        "dense_step_joined": joined_step,
        "verdicts": verdicts,
    }


def run_stage_cells(
    fits: int = 200,
    seed: int = 0,
    only: tuple[str, ...] = (),
    as_json: bool = False,
    repeats: tuple[int, ...] = (),
) -> list[dict]:
    """Every cell of CELLS (or those named in `only`) x CHUNK_COUNTS x REPEATS (or the run
    counts in `repeats`); rows are printed as they finish (a cell of 200 fits takes 30 s to
    4 min on one core, the one-run rows the longest). A row's draws do not depend on which
    other rows run."""
    cells = [c for c in CELLS if not only or c.name in only]
    if not cells:
        names = ", ".join(repr(c.name) for c in CELLS)
        raise ValueError(f"no cell named {', '.join(map(repr, only))}; cells are {names}")
    unknown = [g for g in repeats if g not in REPEATS]
    if unknown:
        raise ValueError(
            f"no run count {', '.join(map(str, unknown))} in the table; it has "
            f"{', '.join(map(str, REPEATS))}"
        )
    counts = [g for g in REPEATS if not repeats or g in repeats]
    started = time.perf_counter()
    if not as_json:
        print(
            f"tau_k verdicts on stage curves under disturbances: {fits} fits x 2 stage curves per "
            f"cell, seed {seed}\nrate % [95% Wilson CI], * = outside the target; "
            "step named/joined: dense fits that named a drift step /\n"
            "joined the interval of a step too weak to name"
        )
        print(
            f"{'cell':<15}{'N':>3}{'G':>3}{'n':>5}  {'dense lin/drift':<17}{'slope CI covers':<17}"
            f"{'GLM flagged':<17}{'collapse':<17}step named/joined"
        )
    rows = []
    for cell in cells:
        for n in CHUNK_COUNTS:
            for runs in counts:
                row = stage_cell_rates(cell, n, runs, fits, seed)
                rows.append(row)
                if not as_json:
                    texts = [
                        rate_text(row[key], target_of(key, runs), counts=False) for key in KINDS
                    ]
                    parts = "".join(f"{text:<17}" for text in texts)
                    print(
                        f"{cell.name:<15}{n:>3}{runs:>3}{row['dense']['n']:>5}  {parts}"
                        f"{row['dense_step_named']}/{row['dense_step_joined']}",
                        flush=True,
                    )
                else:  # progress on stderr, the JSON alone on stdout
                    done = len(rows)
                    total = len(cells) * len(CHUNK_COUNTS) * len(counts)
                    elapsed = time.perf_counter() - started
                    print(
                        f"cell {done}/{total} ({cell.name}, N={n}, G={runs}) {elapsed:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    if as_json:
        json.dump({"fits_per_cell": fits, "seed": seed, "cells": rows}, sys.stdout, indent=1)
        print()
    else:
        print(f"{time.perf_counter() - started:.1f} s")
    return rows


ONE_RUN_CHUNKS = (8,)
"""The one-run table's chunk counts by default: a run too short to bound rho (10 chunks or
fewer, pipelines.analysis.tau.one_run_line) and the table's shortest (issue 33 item 3)."""
ONE_RUN_TARGETS = {"model": (0.93, 0.97), "robust": (0.93, 1.0), "glm": (0.97, 1.0)}
MODEL_TARGET_CELLS = ("iid 3%", "iid 5%", "one x2 chunk", "one x1.3 chunk")
"""The cells where the model interval's 93-97 % target applies (its noise model holds)."""


@ONE_BLAS_THREAD
def one_run_rates(cell: Cell, n: int, fits: int, seed: int) -> dict:
    """One run of n chunks per fit, 2 stage curves each: coverage of the model slope interval
    and of the robust one (pipelines.analysis.tau.robust_slope), the median ratio of each
    interval's half-width to the white-noise t interval's (WLS 1/tau_hat^2, t(m - 2), on the
    points the outlier screen keeps) and, in the cells without a disturbance, GLM-5.2 flagged
    (the robust interval changes no verdict; the disturbed cells' GLM rates are in the
    --stage-cells table)."""
    rng = np.random.default_rng(seed)
    dense, glm = stage_curves("deepseek-v3.1", n), stage_curves("glm-5.2", n)
    truth = [float(np.polyfit(np.arange(n, dtype=float), t, 1)[0]) for t in dense]
    hits = {"model": 0, "robust": 0, "glm": 0}
    robust_ratio, model_ratio, robust_rel = [], [], []
    for _ in range(fits):
        outlier_k = int(rng.integers(1, n - 1))
        for s, tau in enumerate(dense):
            k, y, _ = draw_runs(tau, 1, cell, rng, outlier_k)
            fit, _ = fit_stage(k, y, n_boot=0)
            hits["model"] += fit.slope_lo <= truth[s] <= fit.slope_hi
            hits["robust"] += fit.slope_robust_lo <= truth[s] <= fit.slope_robust_hi
            keep = screen_outliers(k, y).keep
            ks, ys = k[keep], y[keep]
            level = np.maximum(np.polyval(np.polyfit(ks, ys, 1), ks), 0.1 * ys.mean())
            white = robust_slope_interval(ks, ys, np.ones(len(ks)), level, rho_cap=0.0).white_half
            robust_ratio.append((fit.slope_robust_hi - fit.slope_robust_lo) / 2 / white)
            model_ratio.append((fit.slope_hi - fit.slope_lo) / 2 / white)
            robust_rel.append((fit.slope_robust_hi - fit.slope_robust_lo) / 2 / truth[s])
            if cell.disturbance is None:
                gfit, _ = fit_stage(*draw_runs(glm[s], 1, cell, rng, outlier_k), n_boot=0)
                hits["glm"] += classify(gfit).label in FLAGGED_VERDICTS
    total = fits * len(dense)
    return {
        "cell": cell.name,
        "n_chunks": n,
        "runs": 1,
        "fits": fits,
        "model": rate(hits["model"], total),
        "robust": rate(hits["robust"], total),
        "glm": rate(hits["glm"], total) if cell.disturbance is None else None,
        "robust_half_over_white_median": float(np.median(robust_ratio)),
        "model_half_over_white_median": float(np.median(model_ratio)),
        "robust_half_over_slope_median": float(np.median(robust_rel)),
    }


def run_one_run_cells(
    fits: int = 500,
    seed: int = 0,
    only: tuple[str, ...] = (),
    as_json: bool = False,
    chunks: tuple[int, ...] = ONE_RUN_CHUNKS,
) -> list[dict]:
    """The one-run table: every cell of CELLS (or those in `only`) x `chunks`, rows printed as
    they finish (2 cores shared: ~0.3 s a fit, ~5 min a cell of 500 fits, ~10 with GLM-5.2)."""
    cells = [c for c in CELLS if not only or c.name in only]
    if not cells:
        names = ", ".join(repr(c.name) for c in CELLS)
        raise ValueError(f"no cell named {', '.join(map(repr, only))}; cells are {names}")
    started = time.perf_counter()
    out = sys.stderr if as_json else sys.stdout
    print(
        f"one run of N chunks: slope interval coverage, {fits} fits x 2 stage curves per cell, "
        f"seed {seed}\nrate % [95% Wilson CI], * = outside the target (model 93-97 % in the iid "
        "and outlier cells, robust >= 93 %, GLM-5.2 flagged >= 97 %);\nhalf/white: median "
        "half-width over the white-noise t interval's (target robust <= 4), half/slope: robust",
        file=out,
    )
    print(
        f"{'cell':<15}{'N':>3}{'n':>6}  {'model covers':<17}{'robust covers':<17}"
        f"{'GLM flagged':<17}{'half/white model robust':<25}half/slope",
        file=out,
    )
    rows = []
    for cell in cells:
        for n in chunks:
            row = one_run_rates(cell, n, fits, seed)
            rows.append(row)
            targets = dict(ONE_RUN_TARGETS)
            if cell.name not in MODEL_TARGET_CELLS:
                targets["model"] = None
            texts = [
                "-" if row[key] is None else rate_text(row[key], targets[key], counts=False)
                for key in targets
            ]
            ratio = row["robust_half_over_white_median"]
            print(
                f"{cell.name:<15}{n:>3}{row['model']['n']:>6}  "
                + "".join(f"{text:<17}" for text in texts)
                + f"{row['model_half_over_white_median']:>5.2f} {ratio:>6.2f}"
                + ("*" if ratio > 4 else " ")
                + f"{'':<12}{row['robust_half_over_slope_median']:.1%}",
                file=out,
                flush=True,
            )
    if as_json:
        json.dump({"fits_per_cell": fits, "seed": seed, "cells": rows}, sys.stdout, indent=1)
        print()
    else:
        print(f"{time.perf_counter() - started:.1f} s")
    return rows


__all__ = [
    "draw_runs",
    "one_run_rates",
    "run_one_run_cells",
    "run_stage_cells",
    "stage_cell_rates",
    "stage_curves",
]
