"""Where the time went between two run sets: (a) the device ops (kernels, communication ops, names
normalised by sql/marts/fct_op_time_by_run.sql) whose total time per run changed most, and (b)
whether tau_k's slope (prefix-dependent cost: attention) or intercept (per-chunk fixed cost:
linear layers, MoE, launch overhead) moved, each with a bootstrap interval and a test
(pipelines/analysis/comparison/compare.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import duckdb
import numpy as np
import polars as pl

from pipelines.analysis.comparison.compare import (
    DEFAULT_MIN_EFFECT,
    MetricComparison,
    compare_samples,
)
from pipelines.analysis.runs.run_metrics import build_marts
from pipelines.store import queries

TOP_OPS = 8


@dataclass(frozen=True)
class OpChange:
    """One op's change in total device time per run (summed over ranks), candidate - baseline."""

    kind: str  # kernel | comm
    op: str
    n_baseline: int
    n_candidate: int
    launches_baseline: float  # mean launches per run
    launches_candidate: float
    time_baseline_ns: float  # mean total time per run
    time_candidate_ns: float
    delta_ns: float
    relative: float  # delta / baseline time (inf for a new op)
    share: float  # delta / net change of all ops' time

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Explanation:
    """Op changes (largest |delta| first) and the tau_k slope / intercept comparison."""

    ops: list[OpChange]
    net_delta_ns: float
    tau: list[MetricComparison]
    tau_moved: str  # slope, intercept, both, neither, unknown

    def to_json(self) -> dict[str, object]:
        from pipelines.labels import json_value

        return {
            "ops": [{k: json_value(v) for k, v in o.as_dict().items()} for o in self.ops],
            "net_delta_ns": json_value(self.net_delta_ns),
            "tau": [{k: json_value(v) for k, v in t.as_dict().items()} for t in self.tau],
            "tau_moved": self.tau_moved,
        }


def op_changes(
    con: duckdb.DuckDBPyConnection, baseline: list[str], candidate: list[str], top: int = TOP_OPS
) -> tuple[list[OpChange], float]:
    """The `top` ops whose mean total time per run changed most, and the net change of all."""
    frame = queries.op_time_by_run(con, baseline + candidate)
    if frame.is_empty():
        return [], float("nan")
    # every run x op, zero where a run never launched the op
    runs = pl.DataFrame({"run_id": baseline + candidate}).unique()
    ops = frame.select("kind", "op").unique()
    full = (
        runs.join(ops, how="cross")
        .join(frame, on=["run_id", "kind", "op"], how="left")
        .with_columns(pl.col("n_launches").fill_null(0), pl.col("total_ns").fill_null(0.0))
        .with_columns(pl.col("run_id").is_in(candidate).alias("is_candidate"))
    )
    sides = full.group_by("kind", "op", "is_candidate").agg(
        pl.len().alias("n"),
        pl.col("n_launches").mean().alias("launches"),
        pl.col("total_ns").mean().alias("time"),
    )
    b = sides.filter(~pl.col("is_candidate")).drop("is_candidate")
    c = sides.filter(pl.col("is_candidate")).drop("is_candidate")
    joined = b.join(c, on=["kind", "op"], suffix="_c").with_columns(
        (pl.col("time_c") - pl.col("time")).alias("delta")
    )
    net = float(joined["delta"].sum())
    # ties (a send and its receive move alike) by kind and name: group_by has no order
    joined = joined.sort(
        [pl.col("delta").abs(), "kind", "op"], descending=[True, False, False]
    ).head(top)
    out = [
        OpChange(
            kind=r["kind"],
            op=r["op"],
            n_baseline=r["n"],
            n_candidate=r["n_c"],
            launches_baseline=r["launches"],
            launches_candidate=r["launches_c"],
            time_baseline_ns=r["time"],
            time_candidate_ns=r["time_c"],
            delta_ns=r["delta"],
            relative=r["delta"] / r["time"] if r["time"] else float("inf"),
            share=r["delta"] / net if net else float("nan"),
        )
        for r in joined.to_dicts()
    ]
    return out, net


def tau_movement(
    con: duckdb.DuckDBPyConnection,
    baseline: list[str],
    candidate: list[str],
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> tuple[list[MetricComparison], str]:
    """Compare the runs' tau_k slope and intercept (fct_run_metrics) and say which moved."""
    rows = queries.run_tau_parameters(con, baseline + candidate)
    if rows.is_empty():
        return [], "unknown"
    samples = {}
    for metric in ("tau_slope_ns", "tau_intercept_ns"):
        side = dict(zip(rows["run_id"], rows[metric], strict=True))
        samples[metric] = (
            np.array([side[r] for r in baseline if r in side], dtype=float),
            np.array([side[r] for r in candidate if r in side], dtype=float),
        )
    result = compare_samples(
        samples, {"tau_slope_ns": True, "tau_intercept_ns": True}, min_effect=min_effect
    )
    moved = {r.metric for r in result if r.verdict in ("regressed", "improved")}
    if any(r.n_baseline < 3 or r.n_candidate < 3 for r in result):
        label = "unknown"
    elif moved == {"tau_slope_ns", "tau_intercept_ns"}:
        label = "both"
    elif moved == {"tau_slope_ns"}:
        label = "slope"
    elif moved == {"tau_intercept_ns"}:
        label = "intercept"
    else:
        label = "neither"
    return result, label


def explain_run_sets(
    con: duckdb.DuckDBPyConnection,
    baseline: list[str],
    candidate: list[str],
    *,
    build: bool = True,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> Explanation:
    """Attribution of the change from `baseline` runs to `candidate` runs."""
    if build:
        build_marts(con)
    ops, net = op_changes(con, baseline, candidate)
    tau, moved = tau_movement(con, baseline, candidate, min_effect)
    return Explanation(ops, net, tau, moved)
