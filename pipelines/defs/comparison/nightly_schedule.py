"""The nightly schedule: refit, rebuild the marts, compare the schedules, look for change points
(with the regression check) and rebuild the dashboard pages every night at 03:00."""

import dagster as dg

from pipelines.defs.analysis.assets import tau_fits
from pipelines.defs.comparison.assets import (
    change_points,
    dashboard_site,
    run_metric_marts,
    schedule_comparison,
)

nightly_refresh = dg.define_asset_job(
    "nightly_refresh",
    selection=dg.AssetSelection.assets(
        tau_fits, run_metric_marts, schedule_comparison, change_points, dashboard_site
    ),
    description="tau_fits, the metric marts, the schedule comparison, the change points and the "
    "dashboard pages.",
)

nightly = dg.ScheduleDefinition(
    name="nightly",
    job=nightly_refresh,
    cron_schedule="0 3 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every night at 03:00: refresh the comparison assets and their checks.",
)
