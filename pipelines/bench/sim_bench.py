"""Simulator timings: one 1M-token request at 4K chunks under each schedule, and a sweep.

    uv run tracereplay bench sim [--repeat 5] [--sweep 10000]

Part 1 times `run.simulate` (chunking, plan, engine, task table) for one 1,048,576-token prompt in
4,096-token chunks on 4 pipeline ranks (VPP: 4 x 2 virtual stages) with the DeepSeek-V3.1 preset
and its transfers. Part 2 times `sweep.sweep` over a grid of configurations (models x schedules x
pipeline sizes x sequence lengths x chunk sizes x noise seeds).
"""

from __future__ import annotations

import itertools
import statistics
import time

import polars as pl

from pipelines import schedule_kinds
from pipelines.sim.run import simulate
from pipelines.sim.sweep import SweepPoint, sweep

SCHEDULES = schedule_kinds.DISTINCT
MODELS = ("deepseek-v3.1", "glm-5.2", "qwen3-coder-30b-a3b")
SWEEP_SCHEDULES = tuple(s for s in schedule_kinds.BASES if not schedule_kinds.packs(s))
LENGTHS = (65536, 131072, 262144, 524288, 1048576)
CHUNKS = (8192, 16384, 24576, 32768)
PIPELINES = (2, 4)


def time_single(repeat: int) -> None:
    print("one 1,048,576-token request, 4,096-token chunks, pp=4 (deepseek-v3.1 preset)")
    print(f"{'schedule':<12}{'tasks':>8}{'median ms':>11}{'min ms':>9}")
    for schedule in SCHEDULES:
        simulate(1 << 20, schedule, chunk_size=4096, pp=4)  # warm caches and imports
        times, rows = [], 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            result = simulate(1 << 20, schedule, chunk_size=4096, pp=4)
            times.append(time.perf_counter() - t0)
            rows = result.tasks.height
        print(
            f"{schedule:<12}{rows:>8}{1e3 * statistics.median(times):>11.1f}"
            f"{1e3 * min(times):>9.1f}"
        )


def sweep_points(count: int) -> list[SweepPoint]:
    grid = list(itertools.product(MODELS, SWEEP_SCHEDULES, PIPELINES, LENGTHS, CHUNKS))
    seeds = -(-count // len(grid))
    points = [
        SweepPoint(m, s, n, c, pp, seed=seed, noise=0.03)
        for seed in range(seeds)
        for m, s, pp, n, c in grid
    ]
    return points[:count]


def time_sweep(count: int) -> None:
    points = sweep_points(count)
    t0 = time.perf_counter()
    frame = sweep(points)
    elapsed = time.perf_counter() - t0
    shapes = frame.select("schedule", "pp", "vp", "seq_len", "chunk_size").n_unique()
    print(
        f"\nsweep: {frame.height} configurations ({len(MODELS)} models x "
        f"{len(SWEEP_SCHEDULES)} schedules x {len(PIPELINES)} pp x {len(LENGTHS)} lengths x "
        f"{len(CHUNKS)} chunk sizes x noise seeds; {shapes} schedule/shape groups)"
    )
    print(f"sweep wall time {elapsed:.2f} s ({1e3 * elapsed / frame.height:.2f} ms/configuration)")
    best = (
        frame.filter(pl.col("seed") == 0)
        .group_by("model", "seq_len", "schedule")
        .agg((pl.col("makespan_ns").min() / 1e9).round(2).alias("best_s"))
        .pivot("schedule", index=["model", "seq_len"], values="best_s")
        .sort("model", "seq_len")
    )
    print("best makespan (s) over chunk sizes and pp, seed 0:")
    with pl.Config(tbl_rows=-1, tbl_width_chars=120):
        # a small --sweep may not reach every schedule
        print(best.select("model", "seq_len", *(s for s in SWEEP_SCHEDULES if s in best.columns)))


def run_sim_bench(repeat: int = 5, sweep_size: int = 10_000) -> None:
    """Print both parts: the single-request timings and the sweep."""
    time_single(repeat)
    time_sweep(sweep_size)
