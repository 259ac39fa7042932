"""Seeded cells of curves shaped like measured operator-latency facts, and the verdict rates on
them (docs/tau_k.md §4 "Measured"), with Wilson intervals.

The facts (issue 32, read from operator-latency tables of A30 / H200 dense, DSA and MSA modules
as tau_k = t(c, p = k c)): a dense attention kernel alone at chunks >= 512 has a/b 1.2-1.5; a
whole layer a/b 25-730 at <= 4K context; a DSA module is flat in prefix with a small linear term
(2.00 -> 2.03 ms over 0..128K for the kernel; a/b 10-90 for the modules); MSA has a knee at a
prefix of 1.5K; the first chunk's no-prefix path makes tau_1/tau_0 = 3.2 at 128-token chunks; a
kernel steps every 256 keys. Each cell draws its shape parameters from those ranges and
multiplicative noise per point, independent across points: an operator table is one separate
measurement per (c, p), and its curves are fitted as such (fits.fit_curve(independent=True), as
curves.fit_curves does for a table's points). `--as-trace` fits the same curves as one run of a
trace instead (AR(1) rho estimated from the line's residuals).

    uv run python -m pipelines.analysis.tau.taxonomy_cells --draws 1000 [--as-trace]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pipelines.analysis.tau.fits import fit_curve
from pipelines.analysis.tau.verdicts import SHAPE_VERDICTS, classify

Draw = Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray, dict]]


@dataclass(frozen=True)
class Cell:
    """A family of curves, how to draw one, and which verdicts count as right."""

    name: str
    fact: str
    draw: Draw
    right: Callable[[str, dict, dict], bool]
    target: float
    noise: float = 0.02


def _noisy(rng: np.random.Generator, tau: np.ndarray, sd: float) -> np.ndarray:
    return tau * np.exp(rng.normal(0.0, sd, len(tau)))


def dense_kernel(n: int) -> Draw:
    """The dense attention kernel alone at chunks >= 512: tau_k = b (r + k), r in [1.2, 1.5]."""

    def draw(rng):
        r = rng.uniform(1.2, 1.5)
        k = np.arange(n, dtype=float)
        return k, 1e5 * (r + k), {"r": r}

    return draw


def whole_layer(n: int) -> Draw:
    """A whole layer (projections, MLP, norms) at <= 4K context: a/b 25-730 (log-uniform)."""

    def draw(rng):
        r = math.exp(rng.uniform(math.log(25), math.log(730)))
        k = np.arange(n, dtype=float)
        return k, 1e5 * (r + k), {"r": r}

    return draw


def dsa_module(n: int, lo: float = 10.0, hi: float = 90.0, grid: tuple[int, ...] = ()) -> Draw:
    """A DSA module: flat with a small linear term, a/b `lo`-`hi` (log-uniform). 10-90 are the
    issue's modules over chunks 0 .. n-1; 5-7.6 the public tables' DSA at 8K chunks, read as the
    product reads them at a 128K request: measured at the tables' prefixes 0, 8K, 16K, 32K, 64K
    (`grid`, k = 0, 1, 2, 4, 8) and judged as a request of n = 16 chunks (docs/tau_k.md §4)."""

    def draw(rng):
        r = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        k = np.array(grid, dtype=float) if grid else np.arange(n, dtype=float)
        return k, 2e6 * (1 + k / r), {"r": r, "n_chunks": n if grid else None}

    return draw


def dsa_topk(n: int, chunk: int, top_k: int) -> Draw:
    """DSA at small chunks: tau rises like dense attention until the prefix reaches top-k keys,
    then only the indexer's small linear term is left (a/b 10-90 past the knee)."""

    def draw(rng):
        k = np.arange(n, dtype=float)
        knee = top_k / chunk
        rise = rng.uniform(0.6, 1.0)  # the attention share of tau_0 per chunk of prefix
        r = math.exp(rng.uniform(math.log(10), math.log(90)))
        tau = 1 + rise * np.minimum(k, knee) + (1 + rise * knee) / r * np.maximum(k - knee, 0)
        return k, 1e6 * tau, {"knee": knee}

    return draw


def msa_knee(n: int, chunk: int, knee_prefix: int = 1536) -> Draw:
    """MSA: dense-like growth up to a prefix of 1.5K, then flat with a small slope."""

    def draw(rng):
        k = np.arange(n, dtype=float)
        knee = knee_prefix / chunk
        r = rng.uniform(1.2, 3.0)
        after = rng.uniform(0.0, 0.1)
        tau = r + np.minimum(k, knee) + after * np.maximum(k - knee, 0)
        return k, 1e6 * tau, {"knee": knee}

    return draw


def first_chunk(n: int, ratio: float = 3.2) -> Draw:
    """Dense attention at 128-token chunks: the line through chunks 1 on (a/b 2-6) and chunk 0 on
    the cheaper no-prefix path, tau_1 / tau_0 = `ratio`."""

    def draw(rng):
        k = np.arange(n, dtype=float)
        r = rng.uniform(2.0, 6.0)
        tau = r + k
        tau[0] = tau[1] / ratio
        return k, 1e5 * tau, {}

    return draw


def staircase(n: int, chunk: int = 128, keys: int = 256) -> Draw:
    """A kernel that steps every 256 keys at 128-token chunks: steps every 2 chunks."""

    def draw(rng):
        k = np.arange(n, dtype=float)
        base = rng.uniform(1.0, 3.0)
        blocks = np.ceil((k + 1) * chunk / keys)
        return k, 1e5 * (base + blocks), {}

    return draw


def _flagged(label: str, fit: dict, info: dict) -> bool:
    return label == "flattened" or label in SHAPE_VERDICTS


def _knee_near(label: str, fit: dict, info: dict) -> bool:
    """A knee located within one chunk of the true one (the knee's prefix falls inside chunk
    floor(knee): the break shows between that chunk and the next)."""
    if label != "knee":
        return False
    at = fit["breakpoint_k"]
    return at is not None and abs(at - info["knee"]) <= 1.0


CELLS = (
    Cell("dense kernel N=16", "a/b 1.2-1.5", dense_kernel(16), lambda v, f, i: v == "linear", 0.95),
    Cell("dense kernel N=32", "a/b 1.2-1.5", dense_kernel(32), lambda v, f, i: v == "linear", 0.95),
    Cell("whole layer N=8", "a/b 25-730", whole_layer(8), lambda v, f, i: v == "flattened", 0.95),
    Cell("dense kernel N=5", "a/b 1.2-1.5", dense_kernel(5), lambda v, f, i: v == "linear", 0.95),
    Cell("DSA module N=16", "a/b 10-90", dsa_module(16), _flagged, 0.97),
    Cell(
        "DSA 8K chunks at 128K",
        "a/b 5-7.6, k = 0, 1, 2, 4, 8 of N = 16",
        dsa_module(16, 5.0, 7.6, grid=(0, 1, 2, 4, 8)),
        _flagged,
        0.97,
    ),
    Cell("DSA 1K chunks top-k 2K N=16", "knee k=2", dsa_topk(16, 1024, 2048), _flagged, 0.97),
    # a knee 3 chunks before the end of a 16-chunk curve: located in 47.7 % [44.6, 50.8] when
    # fitted as one trace run (rho from the line's residuals, which the knee inflates to
    # 0.6-0.9), as a table's independent points see docs/tau_k.md §4 "Measured"
    Cell("MSA 128-token chunks N=16", "knee 1.5K = k 12", msa_knee(16, 128), _knee_near, 0.95),
    Cell("MSA 128-token chunks N=32", "knee 1.5K = k 12", msa_knee(32, 128), _knee_near, 0.95),
    Cell("MSA 512-token chunks N=16", "knee 1.5K = k 3", msa_knee(16, 512), _knee_near, 0.95),
    Cell(
        "first chunk 128 tokens N=16",
        "tau_1/tau_0 = 3.2",
        first_chunk(16),
        lambda v, f, i: v == "knee" and f["knee_at"] == "0->1",
        0.95,
    ),
    Cell(
        "staircase 256 keys N=16", "period 2", staircase(16), lambda v, f, i: v == "staircase", 0.9
    ),
)
"""N = 16 (a 2K prefix at 128-token chunks, 16K at 1K) for most shapes: one fit of 32 chunks
costs about twice one of 16 (the one-run bootstrap-t line, the outlier screen)."""


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion hits/n (95 % by default)."""
    if n == 0:
        return math.nan, math.nan
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def run_cell(
    cell: Cell, draws: int, seed: int = 0, progress: bool = False, as_trace: bool = False
) -> dict:
    """The cell's verdict counts and its rate of right verdicts over `draws` seeded curves,
    fitted as a table's independent points (or, `as_trace`, as one run of a trace)."""
    counts: Counter[str] = Counter()
    hits = 0
    for i in range(draws):
        rng = np.random.default_rng([seed, i])
        k, tau, info = cell.draw(rng)
        fit = fit_curve(k, _noisy(rng, tau, cell.noise), n_boot=0, independent=not as_trace)
        verdict = classify(fit, n_chunks=info.get("n_chunks"))
        row = {"breakpoint_k": verdict.breakpoint_k, "knee_at": verdict.knee_at}
        label = verdict.label + (f"@{verdict.knee_at}" if verdict.knee_at else "")
        counts[label] += 1
        hits += cell.right(verdict.label, row, info)
        if progress and (i + 1) % 100 == 0:
            print(f"{cell.name}: {hits}/{i + 1} {dict(counts.most_common(3))}", file=sys.stderr)
    lo, hi = wilson(hits, draws)
    return {
        "cell": cell.name,
        "fact": cell.fact,
        "noise": cell.noise,
        "draws": draws,
        "seed": seed,
        "fitted_as": "trace run" if as_trace else "table points",
        "right": hits,
        "rate": hits / draws,
        "wilson_lo": lo,
        "wilson_hi": hi,
        "target": cell.target,
        "verdicts": dict(counts.most_common()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cell", action="append", help="only cells whose name starts so")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--as-trace",
        action="store_true",
        help="fit each curve as one run of a trace (AR(1) rho from the line's residuals), "
        "not as a table's independent points",
    )
    args = parser.parse_args(argv)
    cells = [c for c in CELLS if not args.cell or any(c.name.startswith(p) for p in args.cell)]
    results = []
    for cell in cells:
        result = run_cell(cell, args.draws, args.seed, progress=True, as_trace=args.as_trace)
        results.append(result)
        if not args.json:
            top = ", ".join(f"{v} {n}" for v, n in list(result["verdicts"].items())[:4])
            print(
                f"{cell.name:<30} {result['right']:>5}/{args.draws} = {result['rate']:.1%} "
                f"[{result['wilson_lo']:.1%}, {result['wilson_hi']:.1%}] target >= "
                f"{cell.target:.0%}; {top}",
                flush=True,
            )
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
