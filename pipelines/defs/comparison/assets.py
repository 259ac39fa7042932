"""Comparison assets, downstream of the tau_k fits and refreshed with them (eager): the metric
marts (sql/marts, docs/metrics.md), the schedule comparison
(pipelines.analysis.comparison.schedule_table, the
step `tracereplay schedules` calls) and the change points of the nightly history
(pipelines.analysis.changes.history.find_changes, the step `tracereplay regressions` calls)."""

import dagster as dg

from dashboards.data import change_point_frame
from pipelines import paths
from pipelines.analysis.changes.history import find_changes
from pipelines.analysis.comparison.schedule_table import compare_schedules, workload_label
from pipelines.analysis.runs.run_metrics import MART_BUILD_ORDER, build_marts
from pipelines.defs.analysis.assets import tau_fits
from pipelines.defs.metadata import markdown_rows
from pipelines.defs.resources import WRITE_POOL, StoreResource
from pipelines.labels import config_label
from pipelines.selectors import SelectorError
from pipelines.store import queries

CHANGE_COLUMNS = (
    "config",
    "metric",
    "status",
    "direction",
    "before",
    "after",
    "after, 95 % set",
    "magnitude",
    "p",
)


def change_rows(changes) -> list[tuple]:
    """One row per change point, for the Markdown table."""
    return [
        (
            config_label(ch.config),
            ch.metric,
            ch.status,
            ch.direction,
            f"{ch.collected_before[:10]} {ch.run_before}",
            f"{ch.collected_after[:10]} {ch.run_after}",
            f"{ch.earliest_after_at[:10]} … {ch.latest_after_at[:10]}",
            f"{ch.magnitude:+.1%} [{ch.magnitude_lo:+.1%}, {ch.magnitude_hi:+.1%}]",
            ch.p_value,
        )
        for ch in changes
    ]


@dg.asset(
    deps=[tau_fits],
    group_name="comparison",
    kinds={"duckdb"},
    pool=WRITE_POOL,
    automation_condition=dg.AutomationCondition.eager(),
    description="The metric marts of sql/marts (docs/metrics.md), rebuilt after the fits.",
)
def run_metric_marts(warehouse: StoreResource) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        build_marts(con)
        counts = queries.row_counts(con, ["fct_run_metrics", "fct_config_metrics"])
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": counts["fct_run_metrics"],
            "configurations": counts["fct_config_metrics"],
            "relations": ", ".join(name for name, _ in MART_BUILD_ORDER),
        }
    )


@dg.asset(
    deps=[run_metric_marts],
    group_name="comparison",
    kinds={"duckdb", "polars"},
    pool=WRITE_POOL,
    automation_condition=dg.AutomationCondition.eager(),
    description="CPP vs DCPP vs VPP per workload with intervals and the replayed prediction "
    "(docs/schedule_comparison.md); replays CPP runs not yet replayed.",
)
def schedule_comparison(
    context: dg.AssetExecutionContext, warehouse: StoreResource
) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        try:
            report = compare_schedules(con)
        except SelectorError as exc:
            context.log.warning(str(exc))
            return dg.MaterializeResult(metadata={"workloads": 0, "note": str(exc)})
    rows = [
        (workload_label(w.workload), r.schedule, r.part, r.n, r.mean / 1e9, r.delta_rel,
         r.delta_rel_lo, r.delta_rel_hi, r.verdict, r.predicted_rel, r.versus_predicted)
        for w in report.workloads
        for r in w.rows
    ]  # fmt: skip
    columns = ("workload", "schedule", "part", "n", "mean_s", "delta_rel", "lo", "hi",
               "verdict", "predicted_rel", "vs_replay")  # fmt: skip
    return dg.MaterializeResult(
        metadata={
            "workloads": len(report.workloads),
            "shortfalls": len(report.shortfalls),
            "replayed": len(report.replayed),
            "table": dg.MetadataValue.md(markdown_rows(columns, rows, max_rows=200)),
        }
    )


@dg.asset(
    deps=[run_metric_marts],
    group_name="comparison",
    kinds={"duckdb"},
    automation_condition=dg.AutomationCondition.eager(),
    description="Change points per configuration and metric over collected_at "
    "(docs/regressions.md), confirmed or pending.",
)
def change_points(
    context: dg.AssetExecutionContext, warehouse: StoreResource
) -> dg.MaterializeResult:
    with warehouse.connect(read_only=True) as con:
        try:
            scan = find_changes(con)
            changes, series = scan.changes, scan.series
        except SelectorError as exc:
            context.log.warning(str(exc))
            changes, series = [], 0
    return dg.MaterializeResult(
        metadata={
            "series": series,
            "change_points": len(changes),
            "regressions": sum(ch.is_regression for ch in changes),
            "table": dg.MetadataValue.md(markdown_rows(CHANGE_COLUMNS, change_rows(changes))),
        }
    )


@dg.asset(
    deps=[schedule_comparison, change_points],
    group_name="comparison",
    kinds={"html"},
    automation_condition=dg.AutomationCondition.eager(),
    description="The offline dashboard pages (dashboards.site.build_site, the step `tracereplay "
    "dashboards` calls) under data/site/, with the change points marked.",
)
def dashboard_site(
    context: dg.AssetExecutionContext, warehouse: StoreResource
) -> dg.MaterializeResult:
    from dashboards.site import build_site

    with warehouse.connect(read_only=True) as con:
        try:
            changes = find_changes(con).changes
            site = build_site(con, None, paths.site_dir(), change_point_frame(changes))
        except SelectorError as exc:
            context.log.warning(str(exc))
            return dg.MaterializeResult(metadata={"pages": 0, "why": str(exc)})
    return dg.MaterializeResult(
        metadata={
            "index": dg.MetadataValue.path(str(site.index)),
            "pages": len(site.pages),
            "runs": len(site.run_ids),
            "skipped": dg.MetadataValue.json(site.skipped),
            "seconds": round(site.seconds, 1),
        }
    )
