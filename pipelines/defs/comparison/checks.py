"""The regression check: fails (error) when the nightly history holds a confirmed regression
(pipelines.analysis.changes.history.find_changes, as `tracereplay regressions` exits 1); the change
points are the Markdown metadata."""

import dagster as dg

from pipelines.analysis.changes.history import find_changes
from pipelines.defs.comparison.assets import CHANGE_COLUMNS, change_points, change_rows
from pipelines.defs.metadata import markdown_rows
from pipelines.defs.resources import StoreResource
from pipelines.selectors import SelectorError


@dg.asset_check(
    asset=change_points,
    description="Fails when a configuration's history has a confirmed regression "
    "(a change point beyond the minimum magnitude, confirmed by later runs).",
)
def no_confirmed_regression(warehouse: StoreResource) -> dg.AssetCheckResult:
    changes = []
    if warehouse.file.exists():
        with warehouse.connect(read_only=True) as con:
            try:
                changes = find_changes(con).changes
            except SelectorError:
                changes = []
    regressions = [ch for ch in changes if ch.is_regression]
    return dg.AssetCheckResult(
        passed=not regressions,
        severity=dg.AssetCheckSeverity.ERROR,
        description=f"{len(regressions)} confirmed regression(s), {len(changes)} change point(s)",
        metadata={
            "regressions": dg.MetadataValue.md(
                markdown_rows(CHANGE_COLUMNS, change_rows(regressions)) if regressions else "none"
            )
        },
    )
