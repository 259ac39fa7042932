"""How well the tau_k fits and verdicts recover what the simulator put in.

    uv run python benchmarks/report_tau_accuracy.py [--runs 200] [--seed 0] [--json]

Four campaigns of seeded simulated runs (pipelines.sim.run.simulate, 3% multiplicative noise per
task), each fitted per run and virtual stage with pipelines.analysis.curves.fit_curves:

1. dense: Qwen3-Coder-30B-A3B and DeepSeek-V3.1 presets, 128K-1M tokens, chunk 8K-32K (pairs
   with at least 5 full chunks), CPP or VPP. Target: verdict `linear` in >= 95% of the stage
   curves, and the 95% slope interval covers the true slope (the slope of the same run without
   noise, which the preset makes exactly affine in k) in >= 90%.
2. dsa: GLM-5.2 (DSA) preset on the same grid. Target: not `linear` in >= 95%, with the
   offset a/b or the breakpoint reported.
3. noise: a cost model constant in the prefix (tau_k = const), same grid. Target: `too_noisy`
   or `linear_offset`, never `linear`.
4. balance: one DeepSeek-V3.1 256K request at 16K chunks (16 chunks) whose per-chunk latency
   is made non-affine by a controlled amount (shaped_curve: per-chunk roughness, zigzag, a step,
   convex/concave bends, a slope collapse), simulated under VPP (pp=2, vp=2, free transfers),
   3 seeds per point. Target: Spearman correlation of the measured balance residual (of the
   per-chunk total over the four virtual stages) with the run's VPP bubble ratio >= 0.9.

Every rate is printed with n and a 95% Wilson interval.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from pipelines.analysis.curves import fit_curves
from pipelines.analysis.fits import fit_curve
from pipelines.sim.measured import FittedCost, TabulatedCost
from pipelines.sim.metrics import chunks_frame, summarize
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
            if row["verdict"] == "linear_offset":
                reported += "a/b=" in row["evidence"]
                ratios.append(row["ab_ratio"])
            elif row["verdict"] == "kinked":
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
            ok += row["verdict"] in ("too_noisy", "linear_offset")
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
    "rough": (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3),
    "zigzag": (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3),
    "step": (0.0, 0.05, 0.1, 0.2, 0.4, 0.8),
    "convex": (0.0, 0.1, 0.2, 0.4),
    "concave": (0.0, 0.1, 0.2, 0.4),
    "collapse": (0.0, 0.3, 0.6, 0.9),
}


LOCAL_FAMILIES = ("rough", "zigzag", "step")
"""Shapes that change tau from one chunk to the next (what eq. 3b balances); the smooth bends
and the slope collapse stay locally affine and move VPP's bubble only through fill and drain."""


def balance_campaign(seeds_per_point: int) -> dict:
    seq_len, chunk = 256 * K, 16 * K
    line_run = simulate(seq_len, "cpp", model="deepseek-v3.1", chunk_size=chunk, noise=0.0)
    full = chunks_frame(line_run, "base").group_by("chunk_idx").agg(pl.col("busy_ns").sum())
    line = full.sort("chunk_idx")["busy_ns"].to_numpy().astype(float)
    prefixes = np.arange(len(line), dtype=float) * chunk
    rows = []
    for family, amounts in BALANCE_FAMILIES.items():
        for amount in amounts:
            for s in range(seeds_per_point):
                seed = 30_000 + len(rows)
                tau = shaped_curve(line, family, amount, seed)
                cost = TabulatedCost(
                    table={chunk: (prefixes, tau)},
                    fallback=FittedCost(alpha_ns=float(tau.mean()) / chunk, beta_ns=0.0),
                )
                result = simulate(
                    seq_len, "vpp", model=cost, chunk_size=chunk, comm=None, noise=NOISE, seed=seed
                )
                per_chunk = (
                    chunks_frame(result, "b")
                    .group_by("chunk_idx")
                    .agg(pl.col("busy_ns").sum())
                    .sort("chunk_idx")
                )
                fit = fit_curve(
                    per_chunk["chunk_idx"].to_numpy(), per_chunk["busy_ns"].to_numpy(), n_boot=200
                )
                rows.append(
                    {
                        "family": family,
                        "amount": amount,
                        "seed": s,
                        "balance": fit.balance,
                        "balance_floor": fit.balance_floor,
                        "vpp_bubble_ratio": summarize(result)["bubble_ratio"],
                    }
                )
    frame = pl.DataFrame(rows)
    bal, bub = frame["balance"].to_numpy(), frame["vpp_bubble_ratio"].to_numpy()
    rho, p = stats.spearmanr(bal, bub)
    boot = np.random.default_rng(0).integers(0, frame.height, (2000, frame.height))
    lo, hi = np.quantile([stats.spearmanr(bal[i], bub[i])[0] for i in boot], [0.025, 0.975])
    by_family = {
        family: float(stats.spearmanr(group["balance"], group["vpp_bubble_ratio"])[0])
        for (family,), group in frame.group_by(["family"], maintain_order=True)
    }
    local = frame.filter(pl.col("family").is_in(LOCAL_FAMILIES))
    rho_local = stats.spearmanr(local["balance"], local["vpp_bubble_ratio"])[0]
    return {
        "runs": frame.height,
        "chunks": len(line),
        "spearman": float(rho),
        "spearman_p": float(p),
        "spearman_ci": [float(lo), float(hi)],
        "spearman_by_family": by_family,
        "spearman_local_families": float(rho_local),
        "local_families": list(LOCAL_FAMILIES),
        "runs_local": local.height,
        "bubble_range": [float(bub.min()), float(bub.max())],
        "balance_range": [float(bal.min()), float(bal.max())],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="runs per campaign (dsa: half)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the configuration draws")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    report = {
        "noise": NOISE,
        "dense": dense_campaign(args.runs, rng),
        "dsa": dsa_campaign(max(args.runs // 2, 1), rng),
        "noise_only": noise_campaign(args.runs, rng),
        "balance": balance_campaign(seeds_per_point=3),
    }
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
        return 0
    d, g, z, b = report["dense"], report["dsa"], report["noise_only"], report["balance"]
    print(f"tau_k accuracy report ({NOISE:.0%} multiplicative noise per task, seed {args.seed})")
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
    print(f"\n4. balance residual vs VPP bubble ratio: {b['runs']} runs")
    lo, hi = b["spearman_ci"]
    print(
        f"   Spearman rho = {b['spearman']:.3f} [bootstrap 95% CI {lo:.3f}, {hi:.3f}], "
        f"p = {b['spearman_p']:.2g}   target >= 0.9"
    )
    print(f"   per family                {_round(b['spearman_by_family'])}")
    print(
        f"   local shapes only ({', '.join(b['local_families'])}, {b['runs_local']} runs): "
        f"rho = {b['spearman_local_families']:.3f}"
    )
    print(
        f"   bubble ratio range {_round(b['bubble_range'])}, "
        f"residual range {_round(b['balance_range'])}"
    )
    print(f"\n{report['seconds']} s")
    return 0


def _hn(r: dict) -> dict:
    return {"hits": r["hits"], "n": r["n"]}


def _round(x):
    if isinstance(x, dict):
        return {k: round(v, 3) for k, v in x.items()}
    return [round(v, 4) for v in x]


if __name__ == "__main__":
    sys.exit(main())
