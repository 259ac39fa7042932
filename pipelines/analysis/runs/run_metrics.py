"""Run metrics: the marts of sql/marts/ that compare, regressions and explain read, and the
registry of metrics they define (docs/metrics.md is the definition of each)."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from pipelines.store import functions, queries, relations
from pipelines.vocabulary.configuration import RUN_CONFIG_KEYS

# (relation, layer) in dependency order; the integrator will hand these to the general runner.
MART_BUILD_ORDER: tuple[tuple[str, str], ...] = (
    ("int_step_breakdown_preferred", "intermediate"),
    ("int_chunk_tau", "intermediate"),
    ("fct_request_ttft", "marts"),
    ("fct_rank_breakdown", "marts"),
    ("fct_run_tau_fit", "marts"),
    ("fct_run_metrics", "marts"),
    ("fct_run_metric_values", "marts"),
    ("fct_config_metrics", "marts"),
    ("fct_op_time_by_run", "marts"),
)

CONFIG_KEYS: tuple[str, ...] = RUN_CONFIG_KEYS
"""A configuration: runs that repeat one workload on one setup, read by one reader
(pipelines/vocabulary/configuration.py)."""


@dataclass(frozen=True)
class Metric:
    """One run-level metric: its unit and which way is better."""

    name: str
    unit: str  # ns, tok/s, ratio, count
    lower_is_better: bool
    label: str


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("ttft_ns", "ns", True, "TTFT, mean over requests"),
        Metric("ttft_p50_ns", "ns", True, "TTFT, median request"),
        Metric("ttft_p90_ns", "ns", True, "TTFT, 90th percentile of requests"),
        Metric("ttft_p99_ns", "ns", True, "TTFT, 99th percentile of requests"),
        Metric("ttft_max_ns", "ns", True, "TTFT, slowest request"),
        Metric("makespan_ns", "ns", True, "prefill makespan"),
        Metric("throughput_tok_s", "tok/s", False, "prompt tokens per second"),
        Metric("compute_ns", "ns", True, "compute per rank"),
        Metric("bubble_ns", "ns", True, "bubble per rank"),
        Metric("exposed_comm_ns", "ns", True, "exposed communication per rank"),
        Metric("total_ns", "ns", True, "compute + bubble + exposed comm per rank"),
        Metric("bubble_ratio", "ratio", True, "bubble / (compute + bubble + exposed comm)"),
        Metric("overlap_ratio", "ratio", False, "overlapped / communication time"),
        Metric("n_steps", "count", True, "scheduling steps"),
        Metric("tau_slope_ns", "ns", True, "tau_k slope b (per chunk of prefix)"),
        Metric("tau_intercept_ns", "ns", True, "tau_k intercept a"),
        Metric("tau_ab", "ratio", False, "tau_k a/b"),
    )
}
DEFAULT_COMPARE_METRICS: tuple[str, ...] = (
    "ttft_ns",
    "makespan_ns",
    "throughput_tok_s",
    "compute_ns",
    "bubble_ns",
    "exposed_comm_ns",
)


class UnknownMetricError(ValueError):
    """A metric name that METRICS does not define."""


def check_metrics(names: list[str] | tuple[str, ...] | None, default: tuple[str, ...]) -> list[str]:
    """The metrics asked for (default when none), each known; UnknownMetricError otherwise."""
    chosen = list(names or default)
    unknown = [m for m in chosen if m not in METRICS]
    if unknown:
        raise UnknownMetricError(
            f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(METRICS)}"
        )
    return chosen


def build_marts(con: duckdb.DuckDBPyConnection) -> None:
    """The metric marts are views that pipelines.store.relations builds on every connection
    (pipelines.store); this only makes sure they are there on a connection opened
    some other way."""
    functions.register(con)
    relations.build(con, [relation for relation, _ in MART_BUILD_ORDER], temporary=True)


def metric_values(
    con: duckdb.DuckDBPyConnection, run_ids: list[str], metrics: list[str]
) -> pl.DataFrame:
    """fct_run_metric_values rows of the given runs and metrics (after build_marts)."""
    return queries.metric_values(con, run_ids, metrics)
