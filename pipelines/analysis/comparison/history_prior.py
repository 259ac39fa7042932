"""The variance prior of `compare`'s moderated t: the run-to-run variance of each metric's log
values in the baseline configuration's nightly history (docs/regressions.md §compare).

The history is every measured run of the one configuration the baseline runs share (model,
schedule, seq_len, chunk_size, tp, pp, vp, hardware) with a collection time, less the runs being
compared. It is cut at its change points (`detect_change_points`, pending ones included), so a
step is not read as noise, and the variance is the pooled within-segment variance of the log
values with n - segments degrees of freedom. A metric gets a prior only with at least
MIN_PRIOR_NIGHTS nights and only with positive values (the moderated t is on logs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

import duckdb
import numpy as np

from pipelines.analysis.changes.changepoints import detect_change_points
from pipelines.analysis.comparison.compare import MIN_PRIOR_NIGHTS, VariancePrior
from pipelines.analysis.runs.run_metrics import CONFIG_KEYS
from pipelines.labels import config_label
from pipelines.store import queries


@dataclass(frozen=True)
class HistoryPriors:
    """The priors found ({metric: VariancePrior}) and, when some metric has none, why."""

    priors: dict[str, VariancePrior] = field(default_factory=dict)
    note: str = ""


def variance_from_history(values: np.ndarray) -> tuple[float, int] | None:
    """(pooled within-segment variance of log values, its df) of one metric's history in
    collection order; None with fewer than MIN_PRIOR_NIGHTS positive values."""
    y = np.asarray(values, float)
    y = y[np.isfinite(y)]
    if len(y) < MIN_PRIOR_NIGHTS or np.any(y <= 0):
        return None
    z = np.log(y)
    edges = [0, *(cp.index for cp in detect_change_points(y)), len(z)]
    ss = sum(float(np.sum((z[a:b] - z[a:b].mean()) ** 2)) for a, b in pairwise(edges))
    df = len(z) - (len(edges) - 1)
    return (ss / df, df) if df > 0 else None


def history_priors(
    con: duckdb.DuckDBPyConnection,
    baseline: list[str],
    candidate: list[str],
    metrics: list[str],
) -> HistoryPriors:
    """The variance prior of each metric from the baseline configuration's nightly history
    (marts already built)."""
    configs = queries.run_columns(con, baseline, CONFIG_KEYS).select(CONFIG_KEYS).unique()
    if configs.height != 1:
        return HistoryPriors(
            note=f"no variance prior: the baseline runs span {configs.height} configurations"
        )
    config = configs.row(0, named=True)
    label = config_label(config)
    compared = set(baseline) | set(candidate)
    history = [r for r, _ in queries.config_run_history(con, config) if r not in compared]
    values = queries.metric_values(con, history, metrics, collected_only=True)
    priors, short = {}, []
    for metric in metrics:
        rows = values.filter(values["metric"] == metric)
        found = variance_from_history(rows["value"].to_numpy())
        if found is None:
            short.append(metric)
            continue
        variance, df = found
        priors[metric] = VariancePrior(variance, df, rows.height, label)
    note = ""
    if short:
        note = (
            f"no variance prior for {', '.join(short)}: fewer than {MIN_PRIOR_NIGHTS} nights of "
            f"positive values in the history of {label} ({len(history)} other runs)"
        )
    return HistoryPriors(priors, note)
