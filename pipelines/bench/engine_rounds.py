"""`tracereplay bench engine`: CPP, DCPP and VPP measured on the reference engine, interleaved.

`run_rounds` runs the engine (pipelines.workload) `rounds` times over the schedules in a fixed
order (round 1: cpp dcpp vpp, round 2: cpp dcpp vpp, ...: interleaved, so a drift in other
jobs' load hits every schedule alike), each rank pinned to its own core
(os.sched_setaffinity), and validates every run (pipelines.workload.validation: measured TTFT
and bubble, the replay of each run under its own schedule, steps per request, the window work
ratio with its t interval over the passes). On-CPU time is reported twice: the forwards' thread
CPU time (the engine's `chunk_cpu_ns`) and the rank processes' whole CPU time
(resource.getrusage of the children: start-up, profiler and communication included).

`acceptance` checks issue 34's lines per round: VPP's measured bubble below CPP's, DCPP's steps
per request above CPP's, every schedule's replayed TTFT (with the measured host time per call)
within 10 % of the measured one; and pools the fold-back ratio of every VPP pass into one
interval.

`run_sweep` runs CPP and VPP once per (hidden, chunk) configuration and compares the TTFT share
VPP saves, measured and replayed (the CPP run's own tau replayed under VPP), with the analytic
g(a/b, N) of a straight tau_k (pipelines.analysis.tau.bubble_pred.analytic_bubbles), a/b from a
least-squares line through the CPP run's on-CPU tau_k (both stages summed per chunk).
"""

from __future__ import annotations

import resource
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from pipelines.analysis.comparison.mean_interval import mean_interval
from pipelines.analysis.tau.bubble_pred import analytic_bubbles
from pipelines.store import open_store
from pipelines.workload.config import WorkloadConfig
from pipelines.workload.launch import run_workload
from pipelines.workload.on_cpu import chunk_cpu
from pipelines.workload.validation import validate

SCHEDULES = ("cpp", "dcpp", "vpp")
TTFT_TOLERANCE = 0.10
SWEEP = ((64, 512), (128, 256), (256, 128), (512, 64))
"""(hidden, chunk) of the default sweep: a/b from about 1 (attention-bound) to about 10."""


@dataclass(frozen=True)
class EngineRun:
    """One engine run of the bench: where its traces are and what it cost."""

    label: str
    round: int
    schedule: str
    folder: Path
    wall_s: float
    process_cpu_s: float


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_engine(cfg: WorkloadConfig, folder: Path, label: str, round_: int) -> EngineRun:
    """One engine run into `folder`, with its wall time and its rank processes' CPU time."""

    cpu0 = _children_cpu_s()
    _, wall_s = run_workload(cfg, folder)
    return EngineRun(label, round_, cfg.schedule, folder, wall_s, _children_cpu_s() - cpu0)


def run_rounds(
    base: WorkloadConfig,
    out: Path,
    rounds: int = 5,
    schedules: Sequence[str] = SCHEDULES,
    log: Callable[[str], None] = lambda _m: None,
) -> list[EngineRun]:
    """`rounds` x `schedules` engine runs of `base` (its schedule replaced, ranks pinned), in
    interleaved order, under out/r<round>-<schedule>."""
    runs = []
    for r in range(1, rounds + 1):
        for schedule in schedules:
            cfg = replace(base, schedule=schedule, pin=True)
            label = f"r{r}-{schedule}"
            runs.append(run_engine(cfg, out / label, label, r))
            log(f"{label}: {runs[-1].wall_s:.1f} s wall, {runs[-1].process_cpu_s:.1f} s CPU")
    return runs


def validate_runs(runs: Sequence[EngineRun], warehouse: Path) -> list[dict[str, Any]]:
    """pipelines.workload.validation.validate on every run, one row per run joined with the
    run's round, wall and CPU time and its forwards' on-CPU time."""

    with open_store(warehouse).session() as con:
        rows = validate([r.folder for r in runs], con)
    # ingest names a run <parent folder>-<folder>-<hash>
    by_folder = {row["run_id"].rsplit("-", 1)[0]: row for row in rows}
    out = []
    for run in runs:
        row = by_folder.get(run.label) or by_folder.get(f"{run.folder.parent.name}-{run.label}")
        if row is None:
            continue
        cpu = chunk_cpu(sorted(run.folder.glob("rank*.pt.trace.json")))
        out.append(
            {
                **row,
                "label": run.label,
                "round": run.round,
                "wall_s": run.wall_s,
                "process_cpu_s": run.process_cpu_s,
                "forward_cpu_s": float(cpu["cpu_ns"].sum()) / 1e9 if cpu.height else None,
            }
        )
    return out


def acceptance(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue 34's measured-engine lines, each with met (bool) and what it rests on."""
    by_round: dict[int, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_round.setdefault(row["round"], {})[row["schedule"]] = row
    checks = []
    bubble = [
        (r, s["vpp"]["measured_bubble"], s["cpp"]["measured_bubble"])
        for r, s in sorted(by_round.items())
        if "vpp" in s and "cpp" in s
    ]
    checks.append(
        {
            "line": "VPP bubble below CPP's in every round",
            "met": bool(bubble) and all(v < c for _, v, c in bubble),
            "detail": ", ".join(f"r{r} {100 * v:.1f}% vs {100 * c:.1f}%" for r, v, c in bubble),
        }
    )
    steps = [
        (r, s["dcpp"]["steps"], s["cpp"]["steps"])
        for r, s in sorted(by_round.items())
        if "dcpp" in s and "cpp" in s
    ]
    checks.append(
        {
            "line": "DCPP steps per request above CPP's in every round",
            "met": bool(steps) and all(d > c for _, d, c in steps),
            "detail": ", ".join(f"r{r} {d:.1f} vs {c:.1f}" for r, d, c in steps),
        }
    )
    for schedule in SCHEDULES:
        errs = [
            row["replays"][schedule]["ttft_rel_err"]
            for row in rows
            if row["schedule"] == schedule and "ttft_rel_err" in row["replays"].get(schedule, {})
        ]
        checks.append(
            {
                "line": f"{schedule} replayed TTFT within 10% of measured in every round",
                "met": bool(errs) and all(abs(e) <= TTFT_TOLERANCE for e in errs),
                "detail": ", ".join(f"{100 * e:+.1f}%" for e in errs),
            }
        )
    pooled = {key: pooled_fold_back(rows, key) for key in ("window_ratio", "window_ratio_on_cpu")}

    def text(p: dict[str, Any] | None) -> str:
        if p is None:
            return "-"
        if p["low"] is None:
            return f"{p['mean']:.3f} (n={p['n']})"
        return f"{p['mean']:.3f} [{p['low']:.3f}, {p['high']:.3f}] n={p['n']} passes"

    checks.append(
        {
            "line": "fold-back identity interval printed (VPP window ratio, passes pooled)",
            "met": pooled["window_ratio"] is not None and pooled["window_ratio"]["low"] is not None,
            "detail": f"wall {text(pooled['window_ratio'])}, on-CPU "
            f"{text(pooled['window_ratio_on_cpu'])} (t intervals)",
        }
    )
    return checks


def pooled_fold_back(
    rows: Sequence[dict[str, Any]], key: str = "window_ratio"
) -> dict[str, Any] | None:
    """Mean fold-back window ratio of every VPP pass of every round, t interval over passes;
    `key` window_ratio (wall clock) or window_ratio_on_cpu."""

    values = [
        v
        for row in rows
        if row["schedule"] == "vpp" and row.get(key)
        for v in row[key]["per_request"]
    ]
    if not values:
        return None
    mean, low, high = mean_interval(values)
    ok = bool(np.isfinite(low))
    low_, high_ = (low, high) if ok else (None, None)
    return {"mean": mean, "low": low_, "high": high_, "n": len(values)}


def ab_ratio(cpu: pl.DataFrame) -> tuple[float, float, float]:
    """(a, b, a/b) of tau_k = a + b k through the on-CPU time of each chunk summed over the
    stages (least squares over every pass)."""
    per_chunk = cpu.group_by("request_id", "chunk_idx").agg(pl.col("cpu_ns").sum())
    k = per_chunk["chunk_idx"].to_numpy().astype(np.float64)
    t = per_chunk["cpu_ns"].to_numpy().astype(np.float64)
    b, a = np.polyfit(k, t, 1)
    return float(a), float(b), float(a / b) if b > 0 else float("inf")


def run_sweep(
    base: WorkloadConfig,
    out: Path,
    configs: Sequence[tuple[int, int]] = SWEEP,
    chunks: int = 8,
    log: Callable[[str], None] = lambda _m: None,
) -> list[EngineRun]:
    """CPP then VPP for each (hidden, chunk) of `configs`, `chunks` chunks per request."""
    runs = []
    for i, (hidden, chunk) in enumerate(configs, start=1):
        for schedule in ("cpp", "vpp"):
            cfg = replace(
                base,
                hidden=hidden,
                chunk=chunk,
                seq_len=chunk * chunks,
                schedule=schedule,
                pin=True,
                heads=max(2, hidden // 32),
                kv_heads=max(1, hidden // 64),
            )
            label = f"h{hidden}-c{chunk}-{schedule}"
            runs.append(run_engine(cfg, out / label, label, i))
            log(f"{label}: {runs[-1].wall_s:.1f} s wall")
    return runs


def sweep_rows(rows: Sequence[dict[str, Any]], runs: Sequence[EngineRun]) -> list[dict[str, Any]]:
    """Per configuration: a/b (on-CPU), N, analytic g(a/b, N), the saving replayed (the CPP
    run's tau under VPP, on busy time alone as g assumes, and with the host time per call) and
    measured (one run each: within the runs' TTFT intervals at load 12-17)."""

    by_label = {row["label"]: row for row in rows}
    out = []
    for run in runs:
        if run.schedule != "cpp":
            continue
        cpp = by_label.get(run.label)
        vpp = by_label.get(run.label.replace("-cpp", "-vpp"))
        if cpp is None or vpp is None:
            continue
        cpu = chunk_cpu(sorted(run.folder.glob("rank*.pt.trace.json")))
        a, b, ab = ab_ratio(cpu)
        n = int(cpu["chunk_idx"].max()) + 1
        rep = cpp["replays"]
        replayed = 1 - rep["vpp"]["ttft_ns"] / rep["cpp"]["ttft_ns"]
        busy_only = 1 - rep["vpp"]["ttft_busy_only_ns"] / rep["cpp"]["ttft_busy_only_ns"]
        out.append(
            {
                "config": run.label.removesuffix("-cpp"),
                "n_chunks": n,
                "a_ms": a / 1e6,
                "b_ms": b / 1e6,
                "ab": ab,
                "analytic_saving": analytic_bubbles(ab, n)["ttft_saving"],
                "replayed_saving": replayed,
                "replayed_busy_saving": busy_only,
                "measured_saving": 1 - vpp["measured_ttft_ns"] / cpp["measured_ttft_ns"],
                "cpp_bubble": cpp["measured_bubble"],
                "vpp_bubble": vpp["measured_bubble"],
            }
        )
    return out
