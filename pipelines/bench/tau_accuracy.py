"""How well the tau_k fits and verdicts recover what the simulator put in.

    uv run tracereplay bench tau-accuracy [--runs 200] [--seed 0] [--json]

Four campaigns of seeded simulated runs (pipelines.sim.run.simulate, 3% multiplicative noise per
task), each fitted per run and virtual stage with pipelines.analysis.tau.curves.fit_curves:

1. dense: Qwen3-Coder-30B-A3B and DeepSeek-V3.1 presets, 128K-1M tokens, chunk 8K-32K (pairs
   with at least 5 full chunks), CPP or VPP. Target: verdict `linear` in >= 95% of the stage
   curves, and the 95% slope interval covers the true slope (the slope of the same run without
   noise, which the preset makes exactly affine in k) in >= 90%.
2. dsa: GLM-5.2 (DSA) preset on the same grid. Target: not `linear` in >= 95%, with the
   offset a/b or the breakpoint reported.
3. noise: a cost model constant in the prefix (tau_k = const), same grid. Target: `too_noisy`
   or `linear_offset`, never `linear`.
4. balance: shaped curves (shaped_curve: per-chunk roughness, zigzag, a step, convex/concave
   bends, a slope collapse, each at several amounts, plus the unshaped base curve) of the
   per-chunk latency of six strata (BALANCE_STRATA: model, length and chunk size fix N and the
   base curve), each simulated under VPP (pp=2, vp=2, free transfers) RUNS_PER_CURVE times, 3
   seeds per point. Spearman rho (bootstrap 95% CI) of the balance residual of the pooled curve
   with (a) the runs' whole-run VPP bubble ratio (the issue's acceptance, target >= 0.9) and
   (b) their steady-state bubble ratio (between the fill and the drain), per stratum, pooled
   over the strata, per family, with one run per curve and without noise; next to it the
   Spearman rho of the fit table's predicted VPP bubble (CurveFit.vpp_bubble_pred: the exact
   identity pipelines.analysis.tau.fits.vpp_bubble_ratio on the pooled mean curve) with the
   whole-run bubble, its bias, and the identity's error on the noise-free runs.

Every rate is printed with n and a 95% Wilson interval.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from pipelines.analysis.tau.curves import fit_curves
from pipelines.analysis.tau.fits import balance_residual, fit_curve, vpp_bubble_ratio
from pipelines.replay.tables import chunks_frame
from pipelines.replay.tabulated_cost import TabulatedCost
from pipelines.sim.fitted_cost import FittedCost
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate

K = 1024
SEQ_LENS = (128 * K, 256 * K, 512 * K, 1024 * K)
CHUNKS = (8 * K, 16 * K, 24 * K, 32 * K)
DENSE_MODELS = ("qwen3-coder-30b-a3b", "deepseek-v3.1")
DSA_MODEL = "glm-5.2"
SCHEDULES = ("cpp", "vpp")
NOISE = 0.03
MIN_FULL_CHUNKS = 5


@dataclass(frozen=True)
class Config:
    model: str
    schedule: str
    seq_len: int
    chunk: int


def grid(models: tuple[str, ...]) -> list[Config]:
    """Every (model, schedule, seq_len, chunk) with at least MIN_FULL_CHUNKS full chunks."""
    return [
        Config(m, s, n, c)
        for m in models
        for s in SCHEDULES
        for n in SEQ_LENS
        for c in CHUNKS
        if n // c >= MIN_FULL_CHUNKS
    ]


def draw(configs: list[Config], runs: int, rng: np.random.Generator) -> list[Config]:
    """`runs` configurations drawn uniformly (with replacement) from the grid."""
    return [configs[i] for i in rng.integers(0, len(configs), runs)]


def wilson(hits: int, n: int) -> str:
    lo, hi = proportion_confint(hits, n, alpha=0.05, method="wilson")
    return f"{hits}/{n} = {hits / n:.1%} [95% CI {lo:.1%}, {hi:.1%}]"


def rate(hits: int, n: int) -> dict:
    lo, hi = proportion_confint(hits, n, alpha=0.05, method="wilson")
    return {"hits": hits, "n": n, "rate": hits / n, "ci": [lo, hi]}


def _with_config(chunks: pl.DataFrame, config: Config) -> pl.DataFrame:
    return chunks.with_columns(
        pl.lit(config.model).alias("model"),
        pl.lit(config.schedule).alias("schedule"),
        pl.lit(config.chunk, pl.Int64).alias("chunk_size"),
        pl.lit(config.seq_len, pl.Int64).alias("seq_len"),
    )


def run_curves(config: Config, seed: int, model=None) -> pl.DataFrame:
    """Per-stage fit table of one simulated run (its own curves, not pooled)."""
    result = simulate(
        config.seq_len,
        config.schedule,
        model=model if model is not None else config.model,
        chunk_size=config.chunk,
        noise=NOISE,
        seed=seed,
    )
    chunks = _with_config(chunks_frame(result, f"run{seed}"), config)
    return fit_curves(chunks, keys=("run_id", "vstage"))


def true_slopes(config: Config, model=None) -> dict[int, float]:
    """Slope per virtual stage of the noise-free run (the full chunks' exact line)."""
    result = simulate(
        config.seq_len,
        config.schedule,
        model=model if model is not None else config.model,
        chunk_size=config.chunk,
        noise=0.0,
    )
    chunks = chunks_frame(result, "truth").filter(pl.col("tokens") == config.chunk)
    out = {}
    for (vstage,), group in chunks.group_by(["vstage"]):
        k = group["chunk_idx"].to_numpy().astype(float)
        tau = group["busy_ns"].to_numpy().astype(float)
        out[int(vstage)] = float(np.polyfit(k, tau, 1)[0])
    return out


def dense_campaign(runs: int, rng: np.random.Generator) -> dict:
    configs = draw(grid(DENSE_MODELS), runs, rng)
    truth_cache: dict[Config, dict[int, float]] = {}
    linear = covered = curves = 0
    labels: dict[str, int] = {}
    for seed, config in enumerate(configs):
        table = run_curves(config, seed)
        truth = truth_cache.setdefault(config, true_slopes(config))
        for row in table.iter_rows(named=True):
            curves += 1
            labels[row["verdict"]] = labels.get(row["verdict"], 0) + 1
            linear += row["verdict"] == "linear"
            covered += row["slope_lo"] <= truth[row["vstage"]] <= row["slope_hi"]
    return {
        "runs": runs,
        "curves": curves,
        "verdicts": labels,
        "linear": rate(linear, curves),
        "slope_coverage": rate(covered, curves),
    }


def dsa_campaign(runs: int, rng: np.random.Generator) -> dict:
    configs = draw(grid((DSA_MODEL,)), runs, rng)
    curves = not_linear = reported = 0
    labels: dict[str, int] = {}
    ratios, breaks = [], []
    for seed, config in enumerate(configs):
        table = run_curves(config, 10_000 + seed)
        for row in table.iter_rows(named=True):
            curves += 1
            labels[row["verdict"]] = labels.get(row["verdict"], 0) + 1
            not_linear += row["verdict"] != "linear"
            if row["verdict"] == "flattened":
                reported += "a/b=" in row["evidence"]
                ratios.append(row["ab_ratio"])
            elif row["verdict"] == "knee":
                reported += "break at k=" in row["evidence"]
                breaks.append(row["breakpoint_k"])
    return {
        "runs": runs,
        "curves": curves,
        "verdicts": labels,
        "not_linear": rate(not_linear, curves),
        "offset_or_breakpoint_reported": rate(reported, curves),
        "a_over_b_median": float(np.median(ratios)) if ratios else None,
        "a_over_b_range": [float(np.min(ratios)), float(np.max(ratios))] if ratios else None,
        "breakpoints": sorted({int(b) for b in breaks}),
    }


def constant_cost(chunk: int, seq_len: int, tau_ns: float) -> TabulatedCost:
    """A cost model whose full-model chunk latency is tau_ns whatever the prefix."""
    prefixes = np.arange(0, seq_len, chunk, dtype=float)
    return TabulatedCost(
        table={chunk: (prefixes, np.full(len(prefixes), tau_ns))},
        fallback=FittedCost(alpha_ns=tau_ns / chunk, beta_ns=0.0),
    )


def noise_campaign(runs: int, rng: np.random.Generator) -> dict:
    configs = draw(grid(("constant",)), runs, rng)
    curves = ok = 0
    labels: dict[str, int] = {}
    for seed, config in enumerate(configs):
        cost = constant_cost(config.chunk, config.seq_len, 2e9)
        table = run_curves(config, 20_000 + seed, model=cost)
        for row in table.iter_rows(named=True):
            curves += 1
            labels[row["verdict"]] = labels.get(row["verdict"], 0) + 1
            ok += row["verdict"] in ("too_noisy", "flattened")
    linear = labels.get("linear", 0)
    return {
        "runs": runs,
        "curves": curves,
        "verdicts": labels,
        "too_noisy_or_offset": rate(ok, curves),
        "linear": rate(linear, curves),
    }


def shaped_curve(line: np.ndarray, family: str, amount: float, seed: int) -> np.ndarray:
    """The line tau_k (k = 0..N-1) made non-affine by `amount` (0 = unchanged):

    base     the line itself
    rough    each chunk off the line by amount x N(0,1) of itself (per-chunk irregularity:
             expert-load imbalance, allocator stalls)
    zigzag   every other chunk amount above / below the line
    step     a jump of amount x mean tau from the middle chunk on (a kernel switch at a
             prefix threshold)
    convex / concave   end-to-end bend, amount x mean tau off the line in the middle
    collapse the slope drops to (1 - amount) of itself from the middle chunk on (the DSA shape)
    """
    n = len(line)
    k = np.arange(n, dtype=float)
    mean = float(line.mean())
    slope = (line[-1] - line[0]) / (n - 1)
    middle = n // 2
    bend = 4 * k * (n - 1 - k) / (n - 1) ** 2  # 0 at both ends, 1 in the middle
    if family == "base":
        return line.copy()
    if family == "rough":
        z = np.random.default_rng(seed).standard_normal(n)
        return line * (1 + amount * z)
    if family == "zigzag":
        return line * (1 + amount * (-1.0) ** k)
    if family == "step":
        return line + amount * mean * (k >= middle)
    if family == "convex":
        return line - amount * mean * bend
    if family == "concave":
        return line + amount * mean * bend
    if family == "collapse":
        return line - amount * slope * np.maximum(k - middle, 0.0)
    raise ValueError(family)


BALANCE_FAMILIES = {
    "rough": (0.02, 0.05, 0.1, 0.15, 0.2, 0.3),
    "zigzag": (0.02, 0.05, 0.1, 0.15, 0.2, 0.3),
    "step": (0.05, 0.1, 0.2, 0.4, 0.8),
    "convex": (0.1, 0.2, 0.4),
    "concave": (0.1, 0.2, 0.4),
    "collapse": (0.3, 0.6, 0.9),
}
"""Amounts > 0 per shape family; amount 0 is the unshaped base curve, simulated once per stratum
and seed (family "base") and shared by every family's correlation."""

BALANCE_STRATA = (
    ("deepseek-v3.1", 128 * K, 16 * K),
    ("deepseek-v3.1", 256 * K, 16 * K),
    ("deepseek-v3.1", 512 * K, 32 * K),
    ("deepseek-v3.1", 1024 * K, 32 * K),
    ("qwen3-coder-30b-a3b", 256 * K, 16 * K),
    ("glm-5.2", 256 * K, 16 * K),
)
"""(model, seq_len, chunk): the paper's models, lengths and chunk budgets, with chunk sizes that
divide the length (every chunk full); each fixes the chunk count N and the base curve (a/b)."""

RUNS_PER_CURVE = 4
"""Runs per shaped curve, as the paper averages 4 runs per configuration: the residual is that
of the pooled curve (fit_curve with runs), the bubble the mean over the runs."""


def base_curve(model: str, seq_len: int, chunk: int) -> np.ndarray:
    """Noise-free per-chunk latency (sum over the stages) of the preset under CPP."""
    run = simulate(seq_len, "cpp", model=model, chunk_size=chunk, noise=0.0)
    per_chunk = chunks_frame(run, "base").group_by("chunk_idx").agg(pl.col("busy_ns").sum())
    return per_chunk.sort("chunk_idx")["busy_ns"].to_numpy().astype(float)


def steady_state_bubble(result) -> float:
    """Bubble ratio of the steady state of a single-request VPP (pp=2, vp=2) run: both ranks
    between the start of cycle 1 (rank 0's s3(0)) and the start of the last cycle (s3(N-2)),
    i.e. without the fill and the drain."""
    compute = result.tasks.filter(pl.col("kind") == "compute")
    last_stage, n = int(compute["vstage"].max()), int(compute["chunk_idx"].max()) + 1
    exits = compute.filter(pl.col("vstage") == last_stage).sort("chunk_idx")["start_ns"]
    t0, t1 = int(exits[0]), int(exits[n - 2])
    start = compute["start_ns"].to_numpy().clip(t0, t1)
    end = compute["end_ns"].to_numpy().clip(t0, t1)
    ranks = compute["rank"].n_unique()
    return 1.0 - float((end - start).sum()) / (ranks * (t1 - t0))


def spearman_ci(x: np.ndarray, y: np.ndarray, n_boot: int = 1000, seed: int = 0) -> list[float]:
    """[rho, lo, hi]: Spearman rho with a percentile bootstrap 95% interval over the points."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    rho = float(stats.spearmanr(x, y)[0])
    pick = np.random.default_rng(seed).integers(0, len(x), (n_boot, len(x)))
    rx, ry = stats.rankdata(x[pick], axis=1), stats.rankdata(y[pick], axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (rx * ry).sum(axis=1) / np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
    lo, hi = np.nanquantile(boot, [0.025, 0.975])
    return [rho, float(lo), float(hi)]


def vpp_runs(chunk: int, tau: np.ndarray, noise: float, seeds: range) -> list:
    """One request with per-chunk latency tau (equal stages) under VPP (pp=2, vp=2, free
    transfers), once per seed."""
    n = len(tau)
    cost = TabulatedCost(
        table={chunk: (np.arange(n, dtype=float) * chunk, tau)},
        fallback=FittedCost(alpha_ns=float(tau.mean()) / chunk, beta_ns=0.0),
    )
    return [
        simulate(n * chunk, "vpp", model=cost, chunk_size=chunk, comm=None, noise=noise, seed=s)
        for s in seeds
    ]


def pooled_fit(results: list, n_boot: int) -> tuple:
    """fit_curve of the runs' per-chunk totals (clusters = runs) and those totals."""
    per_chunk = (
        pl.concat([chunks_frame(res, f"r{i}") for i, res in enumerate(results)])
        .group_by(["run_id", "chunk_idx"])
        .agg(pl.col("busy_ns").sum())
        .sort(["run_id", "chunk_idx"])
    )
    k = per_chunk["chunk_idx"].to_numpy()
    runs = per_chunk["run_id"].to_numpy()
    return fit_curve(k, per_chunk["busy_ns"].to_numpy(), runs, n_boot=n_boot), per_chunk


def balance_curve(chunk: int, tau: np.ndarray, seed: int) -> dict:
    """Simulate one shaped curve under VPP RUNS_PER_CURVE times with noise and once without."""
    n = len(tau)
    seeds = range(seed * RUNS_PER_CURVE, (seed + 1) * RUNS_PER_CURVE)
    results = vpp_runs(chunk, tau, NOISE, seeds)
    fit, per_chunk = pooled_fit(results, n_boot=0)
    one = per_chunk.filter(pl.col("run_id") == "r0")
    (clean,) = vpp_runs(chunk, tau, 0.0, range(1))
    clean_summary = summarize(clean)
    return {
        "balance": fit.balance,
        "whole": float(np.mean([summarize(res)["bubble_ratio"] for res in results])),
        "steady": float(np.mean([steady_state_bubble(res) for res in results])),
        "vpp_bubble_pred": fit.vpp_bubble_pred,
        "balance_1run": balance_residual(
            one["chunk_idx"].to_numpy().astype(float), one["busy_ns"].to_numpy().astype(float)
        ),
        "whole_1run": summarize(results[0])["bubble_ratio"],
        "vpp_bubble_pred_1run": vpp_bubble_ratio(one["busy_ns"].to_numpy().astype(float)),
        "steady_1run": steady_state_bubble(results[0]),
        "balance_clean": balance_residual(np.arange(n, dtype=float), tau),
        "whole_clean": clean_summary["bubble_ratio"],
        "vpp_bubble_pred_clean": vpp_bubble_ratio(tau),
        "steady_clean": steady_state_bubble(clean),
    }


TARGETS = {"whole": "VPP bubble ratio, whole run", "steady": "steady-state bubble ratio"}

COVERAGE_SHAPES = (("base", 0.0), ("rough", 0.1), ("step", 0.2), ("concave", 0.2))
COVERAGE_RUNS = 8
"""Runs pooled per fit in the interval check: enough for the bootstrap over runs (>= 5)."""


def interval_coverage(reps: int) -> dict:
    """How often the fit table's 95% interval of vpp_bubble_pred (bootstrap over
    COVERAGE_RUNS pooled runs) holds (a) the noise-free curve's VPP bubble and (b) the mean
    simulated bubble of those same runs, per COVERAGE_SHAPES curve of every stratum, `reps`
    replications each; plus the mean offsets of the prediction from both."""
    hits = {"clean": 0, "runs": 0}
    offsets = {"clean": [], "runs": []}
    widths = []
    for model, seq_len, chunk in BALANCE_STRATA:
        line = base_curve(model, seq_len, chunk)
        for family, amount in COVERAGE_SHAPES:
            tau = shaped_curve(line, family, amount, seed=1)
            clean = vpp_bubble_ratio(tau)
            for r in range(reps):
                seeds = range(50_000 + 100 * r, 50_000 + 100 * r + COVERAGE_RUNS)
                results = vpp_runs(chunk, tau, NOISE, seeds)
                fit, _ = pooled_fit(results, n_boot=500)
                whole = float(np.mean([summarize(res)["bubble_ratio"] for res in results]))
                for key, truth in (("clean", clean), ("runs", whole)):
                    hits[key] += fit.vpp_bubble_lo <= truth <= fit.vpp_bubble_hi
                    offsets[key].append(fit.vpp_bubble_pred - truth)
                widths.append(fit.vpp_bubble_hi - fit.vpp_bubble_lo)
    n = len(widths)
    return {
        "fits": n,
        "runs_per_fit": COVERAGE_RUNS,
        "covers_clean": rate(hits["clean"], n),
        "covers_runs": rate(hits["runs"], n),
        "mean_offset_clean": float(np.mean(offsets["clean"])),
        "mean_offset_runs": float(np.mean(offsets["runs"])),
        "median_width": float(np.median(widths)),
    }


def balance_frame(seeds_per_point: int) -> pl.DataFrame:
    """One row per shaped curve: stratum, family, amount, seed and balance_curve's measures."""
    rows = []
    for model, seq_len, chunk in BALANCE_STRATA:
        line = base_curve(model, seq_len, chunk)
        k = np.arange(len(line), dtype=float)
        slope, intercept = np.polyfit(k, line, 1)
        stratum = f"{model} {seq_len // K}K/{chunk // K}K N={len(line)} a/b={intercept / slope:.3g}"
        for family, amounts in {"base": (0.0,), **BALANCE_FAMILIES}.items():
            for amount in amounts:
                for s in range(seeds_per_point):
                    seed = 30_000 + len(rows)
                    tau = shaped_curve(line, family, amount, seed)
                    row = {"stratum": stratum, "family": family, "amount": amount, "seed": s}
                    rows.append(row | balance_curve(chunk, tau, seed))
    return pl.DataFrame(rows)


def balance_campaign(seeds_per_point: int) -> dict:
    frame = balance_frame(seeds_per_point)
    bal = frame["balance"].to_numpy()

    def rhos(group: pl.DataFrame, suffix: str = "", n_boot: int = 1000) -> dict:
        """rho of the balance residual with each target, and of the predicted VPP bubble with
        the whole-run bubble ("pred")."""
        x = group[f"balance{suffix}"].to_numpy()
        out = {t: spearman_ci(x, group[f"{t}{suffix}"].to_numpy(), n_boot) for t in TARGETS}
        pred = group[f"vpp_bubble_pred{suffix}"].to_numpy()
        out["pred"] = spearman_ci(pred, group[f"whole{suffix}"].to_numpy(), n_boot)
        return out

    strata = {
        name: {"n": group.height, **rhos(group)}
        for (name,), group in frame.group_by(["stratum"], maintain_order=True)
    }
    # noise floor per stratum: the median residual of its unshaped curves (amount 0)
    floor = frame.group_by("stratum").agg(
        pl.col("balance").filter(pl.col("amount") == 0).median().alias("floor")
    )
    below_floor = frame.join(floor, on="stratum").filter(pl.col("balance_clean") < pl.col("floor"))
    families = {}
    for family in BALANCE_FAMILIES:  # each family with the base curves (its amount 0)
        group = frame.filter(pl.col("family").is_in(["base", family]))
        families[family] = {
            "n": group.height,
            **rhos(group, n_boot=200),
            "no_noise": {t: v[0] for t, v in rhos(group, "_clean", 1).items()},
            "shape_below_floor": int(below_floor["family"].is_in(["base", family]).sum()),
        }
    return {
        "curves": frame.height,
        "runs_per_curve": RUNS_PER_CURVE,
        "pooled": {"n": frame.height, **rhos(frame)},
        "strata": strata,
        "families": families,
        "one_run": {t: v[0] for t, v in rhos(frame, "_1run", 1).items()},
        "no_noise": {t: v[0] for t, v in rhos(frame, "_clean", 1).items()},
        "pred_error": {
            "mean": float((frame["vpp_bubble_pred"] - frame["whole"]).mean()),
            "max_abs": float((frame["vpp_bubble_pred"] - frame["whole"]).abs().max()),
        },
        "identity_max_error": float(
            (frame["vpp_bubble_pred_clean"] - frame["whole_clean"]).abs().max()
        ),
        "shape_below_floor": below_floor.height,
        "bubble_range": [float(frame["whole"].min()), float(frame["whole"].max())],
        "steady_range": [float(frame["steady"].min()), float(frame["steady"].max())],
        "balance_range": [float(bal.min()), float(bal.max())],
    }


def run_tau_accuracy(runs: int = 200, seed: int = 0, as_json: bool = False) -> None:
    """Run the four campaigns (`runs` per campaign, DSA half) and print the report."""
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    report = {
        "noise": NOISE,
        "dense": dense_campaign(runs, rng),
        "dsa": dsa_campaign(max(runs // 2, 1), rng),
        "noise_only": noise_campaign(runs, rng),
        "balance": balance_campaign(seeds_per_point=3),
        "vpp_interval": interval_coverage(reps=5),
    }
    report["seconds"] = round(time.perf_counter() - started, 1)
    if as_json:
        json.dump(report, sys.stdout, indent=1)
        print()
        return
    d, g, z, b = report["dense"], report["dsa"], report["noise_only"], report["balance"]
    print(f"tau_k accuracy report ({NOISE:.0%} multiplicative noise per task, seed {seed})")
    print(f"\n1. dense presets: {d['runs']} runs, {d['curves']} stage curves")
    print(f"   verdict linear            {wilson(**_hn(d['linear']))}   target >= 95%")
    print(f"   slope CI covers truth     {wilson(**_hn(d['slope_coverage']))}   target >= 90%")
    print(f"   verdicts                  {d['verdicts']}")
    print(f"\n2. DSA preset ({DSA_MODEL}): {g['runs']} runs, {g['curves']} stage curves")
    print(f"   verdict not linear        {wilson(**_hn(g['not_linear']))}   target >= 95%")
    print(f"   offset/breakpoint given   {wilson(**_hn(g['offset_or_breakpoint_reported']))}")
    print(f"   verdicts                  {g['verdicts']}")
    if g["a_over_b_median"] is not None:
        lo, hi = g["a_over_b_range"]
        print(
            f"   a/b of linear_offset      median {g['a_over_b_median']:.3g}, "
            f"range [{lo:.3g}, {hi:.3g}]"
        )
    print(f"   breakpoints at k          {g['breakpoints']}")
    print(f"\n3. constant tau + noise: {z['runs']} runs, {z['curves']} stage curves")
    print(f"   too_noisy or linear_offset {wilson(**_hn(z['too_noisy_or_offset']))}")
    print(f"   linear (must be 0)         {wilson(**_hn(z['linear']))}")
    print(f"   verdicts                   {z['verdicts']}")
    print(
        f"\n4. balance residual and predicted VPP bubble vs simulated VPP bubble (pp=2, vp=2, "
        f"free transfers): {b['curves']} shaped curves, {b['runs_per_curve']} runs each"
    )
    print(
        f"   identity vpp_bubble_ratio(tau), no noise: max |error| {b['identity_max_error']:.1e} "
        f"of the bubble ratio (task times rounded to whole ns)"
    )
    print(
        "   Spearman rho [bootstrap 95% CI] with the VPP bubble ratio: balance residual (whole run,"
        " steady state) and predicted VPP bubble vpp_bubble_pred (whole run)"
    )
    width = max(len(name) for name in [*b["strata"], *b["families"]]) + 2
    columns = ("balance~whole run", "balance~steady state", "vpp_bubble_pred~whole run")
    header = f"   {{:<{width}}} {'n':<6}" + "".join(f"{c:<27}" for c in columns)
    print(header.format("stratum").rstrip())
    for name, r in [*b["strata"].items(), ("pooled (mixed N, a/b)", b["pooled"])]:
        print(
            f"   {name:<{width}} {r['n']:<6}{_rho(r['whole']):<27}{_rho(r['steady']):<27}"
            f"{_rho(r['pred'])}"
        )
    targets = {"whole": "balance residual", "steady": "balance residual", "pred": "predicted"}
    for t, label in [*TARGETS.items(), ("pred", TARGETS["whole"])]:
        rho, lo, _ = b["pooled"][t]
        verdict = "met" if lo >= 0.9 else ("point estimate only" if rho >= 0.9 else "NOT met")
        print(f"   target rho >= 0.9, {targets[t]} ~ {label}: {verdict}")
    print(header.format("family (with the base curves)") + "steady, no noise  shape < floor")
    for name, r in b["families"].items():
        print(
            f"   {name:<{width}} {r['n']:<6}{_rho(r['whole']):<27}{_rho(r['steady']):<27}"
            f"{_rho(r['pred']):<27}{r['no_noise']['steady']:<18.3f}"
            f"{r['shape_below_floor']}/{r['n']}"
        )
    print(f"   one run per curve: {_round(b['one_run'])};  no noise: {_round(b['no_noise'])}")
    lowest = min(r["pred"][0] for r in b["strata"].values())
    err = b["pred_error"]
    print(
        f"   vpp_bubble_pred - whole-run bubble: mean {err['mean']:+.4f}, max |.| "
        f"{err['max_abs']:.4f}; lowest stratum rho {lowest:.3f}"
    )
    c = report["vpp_interval"]
    print(
        f"   95% interval of vpp_bubble_pred ({c['runs_per_fit']} runs pooled, bootstrap over "
        f"runs; {len(COVERAGE_SHAPES)} shapes x {len(BALANCE_STRATA)} strata): median width "
        f"{c['median_width']:.4f}"
    )
    print(
        f"     holds the noise-free curve's bubble {wilson(**_hn(c['covers_clean']))}, "
        f"pred - it {c['mean_offset_clean']:+.4f} on average"
    )
    print(
        f"     holds the same runs' simulated bubble {wilson(**_hn(c['covers_runs']))}, "
        f"pred - it {c['mean_offset_runs']:+.4f} on average"
    )
    print(
        f"   shape below floor (residual of the noise-free curve < median residual of the "
        f"stratum's base curves): {b['shape_below_floor']}/{b['curves']} curves"
    )
    print(
        f"   ranges: bubble {_round(b['bubble_range'])}, steady {_round(b['steady_range'])}, "
        f"residual {_round(b['balance_range'])}"
    )
    print(f"\n{report['seconds']} s")


def _hn(r: dict) -> dict:
    return {"hits": r["hits"], "n": r["n"]}


def _rho(r: list[float]) -> str:
    return f"{r[0]:.3f} [{r[1]:.3f}, {r[2]:.3f}]"


def _round(x):
    if isinstance(x, dict):
        return {k: round(v, 3) for k, v in x.items()}
    return [round(v, 4) for v in x]
