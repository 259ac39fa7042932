"""Where the time went between two run sets: (a) the device ops (kernels, communication ops, names
normalised by sql/marts/fct_op_time_by_run.sql) whose total time per run changed most, and (b)
whether tau_k's slope (prefix-dependent cost: attention) or intercept (per-chunk fixed cost:
linear layers, MoE, launch overhead) moved, each with an interval and a test
(pipelines/analysis/comparison/compare.py), and which of three hypotheses of how tau_k moved
the runs leave standing (tau_hypotheses):

* proportional: every chunk x c (a clock, a slower device): a/b unchanged, Welch's t on the
  runs' log(a/b);
* slope only: the intercept unchanged, Welch's t on log a;
* intercept only: the slope unchanged, Welch's t on log b.

All two-sided at DEFAULT_ALPHA. The intercept's interval is typically 3-5x wider than the
slope's, so a proportional slowdown often moves the slope significantly and leaves the intercept
inside its noise: then both "proportional" and "slope only" stand and the label says the
intercept is undetermined instead of calling it a slope change."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import duckdb
import numpy as np
import polars as pl
from scipy import stats

from pipelines.analysis.comparison.compare import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_EFFECT,
    MetricComparison,
    compare_samples,
)
from pipelines.analysis.runs.run_metrics import build_marts
from pipelines.labels import json_value
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


@dataclass(frozen=True)
class TauHypothesis:
    """One hypothesis of how tau_k moved, its test and whether the runs leave it standing."""

    name: str  # proportional | slope only | intercept only
    null: str  # what the test holds unchanged
    test: str
    p_value: float  # two-sided; NaN when not testable (a value <= 0 or < MIN_RUNS a side)
    stands: bool

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Explanation:
    """Op changes (largest |delta| first), the tau_k slope / intercept comparison and the
    hypotheses of how tau_k moved."""

    ops: list[OpChange]
    net_delta_ns: float
    tau: list[MetricComparison]
    tau_moved: str  # see tau_label
    tau_hypotheses: list[TauHypothesis] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:

        return {
            "ops": [{k: json_value(v) for k, v in o.as_dict().items()} for o in self.ops],
            "net_delta_ns": json_value(self.net_delta_ns),
            "tau": [{k: json_value(v) for k, v in t.as_dict().items()} for t in self.tau],
            "tau_moved": self.tau_moved,
            "tau_hypotheses": [
                {k: json_value(v) for k, v in h.as_dict().items()} for h in self.tau_hypotheses
            ],
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


def _welch_log_p(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """Two-sided Welch p of equal mean log values; NaN when a value is <= 0 or not finite, or
    a side has fewer than 2 values; 1 or 0 when neither side varies."""
    if min(len(baseline), len(candidate)) < 2:
        return math.nan
    values = np.concatenate([baseline, candidate])
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        return math.nan
    lb, lc = np.log(baseline), np.log(candidate)
    if np.ptp(lb) == 0 and np.ptp(lc) == 0:
        return 1.0 if lb[0] == lc[0] else 0.0
    return float(stats.ttest_ind(lc, lb, equal_var=False).pvalue)


def tau_hypotheses(
    slopes: tuple[np.ndarray, np.ndarray],
    intercepts: tuple[np.ndarray, np.ndarray],
    alpha: float = DEFAULT_ALPHA,
) -> list[TauHypothesis]:
    """The three hypotheses of how tau_k = a + b k moved from the baseline runs' (a, b) to the
    candidate runs' (each a (baseline, candidate) pair of per-run values, in the same run
    order for slopes and intercepts), each standing when its test does not reject at alpha."""
    (b0, b1), (a0, a1) = slopes, intercepts
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio0, ratio1 = a0 / b0, a1 / b1
    tests = (
        ("proportional", "a/b", "welch_t_log(a/b)", _welch_log_p(ratio0, ratio1)),
        ("slope only", "intercept a", "welch_t_log(a)", _welch_log_p(a0, a1)),
        ("intercept only", "slope b", "welch_t_log(b)", _welch_log_p(b0, b1)),
    )
    return [
        TauHypothesis(name, null, test, p, bool(p >= alpha) if math.isfinite(p) else False)
        for name, null, test, p in tests
    ]


def tau_label(moved: set[str], hypotheses: list[TauHypothesis]) -> str:
    """How tau_k moved: `neither` (no parameter moved), `proportional`, `slope`, `intercept`,
    `slope; intercept undetermined` (proportional and slope-only both stand),
    `intercept; slope undetermined`, `slope or intercept; undetermined`, `both` (moved, and
    no single hypothesis stands); untestable (a value <= 0): what moved, as before."""
    if not moved:
        return "neither"
    if not any(math.isfinite(h.p_value) for h in hypotheses):  # untestable: what moved
        return "both" if len(moved) == 2 else ("slope" if "tau_slope_ns" in moved else "intercept")
    stands = {h.name for h in hypotheses if h.stands}
    prop = "proportional" in stands
    slope_only = "slope only" in stands and "tau_slope_ns" in moved
    intercept_only = "intercept only" in stands and "tau_intercept_ns" in moved
    if prop and slope_only and not intercept_only:
        return "slope; intercept undetermined"
    if prop and intercept_only and not slope_only:
        return "intercept; slope undetermined"
    if prop and not (slope_only or intercept_only):
        return "proportional"
    if slope_only and not intercept_only:
        return "slope"
    if intercept_only and not slope_only:
        return "intercept"
    if slope_only and intercept_only:  # both moved, each alone not ruled out
        return "slope or intercept; undetermined"
    return "both"


def tau_movement(
    con: duckdb.DuckDBPyConnection,
    baseline: list[str],
    candidate: list[str],
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> tuple[list[MetricComparison], str, list[TauHypothesis]]:
    """Compare the runs' tau_k slope and intercept (fct_run_metrics), test the three hypotheses
    of how tau_k moved and label it (tau_label; `unknown` below 3 runs a side)."""
    rows = queries.run_tau_parameters(con, baseline + candidate)
    if rows.is_empty():
        return [], "unknown", []
    samples = {}
    for metric in ("tau_slope_ns", "tau_intercept_ns"):
        side = dict(zip(rows["run_id"], rows[metric], strict=True))
        samples[metric] = (
            np.array([side[r] for r in baseline if r in side], dtype=float),
            np.array([side[r] for r in candidate if r in side], dtype=float),
        )
    return tau_attribution(samples["tau_slope_ns"], samples["tau_intercept_ns"], min_effect)


def tau_attribution(
    slopes: tuple[np.ndarray, np.ndarray],
    intercepts: tuple[np.ndarray, np.ndarray],
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> tuple[list[MetricComparison], str, list[TauHypothesis]]:
    """tau_movement on per-run values: (baseline, candidate) slopes and intercepts of the same
    runs in the same order."""
    samples = {"tau_slope_ns": slopes, "tau_intercept_ns": intercepts}
    result = compare_samples(
        samples, {"tau_slope_ns": True, "tau_intercept_ns": True}, min_effect=min_effect
    )
    moved = {r.metric for r in result if r.verdict in ("regressed", "improved")}
    if any(r.n_baseline < 3 or r.n_candidate < 3 for r in result):
        return result, "unknown", []
    hypotheses = tau_hypotheses(slopes, intercepts)
    return result, tau_label(moved, hypotheses), hypotheses


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
    tau, moved, hypotheses = tau_movement(con, baseline, candidate, min_effect)
    return Explanation(ops, net, tau, moved, hypotheses)
