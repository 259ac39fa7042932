"""One comparison of two run sets out of the warehouse: select, build the marts, compare. The
library door that `tracereplay compare`, the demo and Dagster share."""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import numpy as np

from pipelines.analysis.comparison.compare import (
    DEFAULT_MIN_EFFECT,
    RUN_SET_CORRECTION,
    MetricComparison,
    VariancePrior,
    compare_samples,
)
from pipelines.analysis.comparison.history_prior import HistoryPriors, history_priors
from pipelines.analysis.runs.run_metrics import (
    DEFAULT_COMPARE_METRICS,
    METRICS,
    build_marts,
    check_metrics,
    metric_values,
)
from pipelines.selectors import parse_selector, require_runs


@dataclass
class RunSetComparison:
    """The two run sets and the per-metric comparisons."""

    baseline: str
    candidate: str
    baseline_runs: list[str]
    candidate_runs: list[str]
    metrics: list[MetricComparison]
    min_effect: float
    correction: str
    overlap: list[str] = field(default_factory=list)  # runs on both sides
    priors: dict[str, VariancePrior] = field(default_factory=dict)  # moderated t, per metric
    prior_note: str = ""  # why a metric has no prior (when history priors were asked for)

    @property
    def regressed(self) -> list[MetricComparison]:
        return [m for m in self.metrics if m.verdict == "regressed"]


def compare_run_sets(
    con: duckdb.DuckDBPyConnection,
    baseline: str,
    candidate: str,
    metrics: list[str] | None = None,
    *,
    min_effect: float = DEFAULT_MIN_EFFECT,
    correction: str = RUN_SET_CORRECTION,
    build: bool = True,
    history_prior: bool = True,
) -> RunSetComparison:
    """Compare the runs `candidate` selects with those `baseline` selects (selector text).
    `history_prior`: a metric whose baseline configuration has >= 20 nights of history is tested
    with the moderated t, its variance shrunk to the history's (history_prior.history_priors).
    SelectorError when a selector is bad or matches nothing; UnknownMetricError for a metric."""
    chosen = check_metrics(metrics, DEFAULT_COMPARE_METRICS)
    base_sel, cand_sel = parse_selector(baseline), parse_selector(candidate)
    base_runs = require_runs(con, base_sel)
    cand_runs = require_runs(con, cand_sel)
    if build:
        build_marts(con)
    values = metric_values(con, base_runs + cand_runs, chosen)
    samples = {}
    for metric in chosen:
        rows = values.filter(values["metric"] == metric)
        side = dict(zip(rows["run_id"].to_list(), rows["value"].to_list(), strict=True))
        samples[metric] = (
            np.array([side[r] for r in base_runs if r in side], dtype=float),
            np.array([side[r] for r in cand_runs if r in side], dtype=float),
        )
    found = HistoryPriors()
    if history_prior:
        found = history_priors(con, base_runs, cand_runs, chosen)
    results = compare_samples(
        samples,
        {m: METRICS[m].lower_is_better for m in chosen},
        min_effect=min_effect,
        correction=correction,
        priors=found.priors,
    )
    overlap = sorted(set(base_runs) & set(cand_runs))
    return RunSetComparison(
        base_sel.text,
        cand_sel.text,
        base_runs,
        cand_runs,
        results,
        min_effect,
        results[0].correction if results else correction,
        overlap,
        found.priors,
        found.note,
    )
