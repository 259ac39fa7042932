"""Dagster asset checks generated from the data-check suites
(pipelines/quality/check_catalog.py): one multi-asset check per table, one check per
expectation, on the table's asset (the marts' suites on `run_metric_marts`, the asset that
rebuilds them). Error-severity checks are
blocking (a failure stops downstream materialisations); the failing count and the example rows
are metadata. The body calls pipelines.quality.checks.run_checks, the function `tracereplay
check` calls; Great Expectations is imported only when a check runs (the suite files are read
as JSON to list the checks: pipelines/quality/suite_files.py)."""

import dagster as dg

from pipelines.defs.metadata import markdown_rows
from pipelines.defs.resources import StoreResource
from pipelines.quality.check_catalog import MARTS, TABLES, Expectation, Severity, expectations_of
from pipelines.quality.checks import run_checks

_SEVERITY = {
    Severity.ERROR: dg.AssetCheckSeverity.ERROR,
    Severity.WARNING: dg.AssetCheckSeverity.WARN,
}


# run_inputs is written with runs and has no asset of its own: its checks sit on `runs`; the
# marts are rebuilt together by `run_metric_marts` (pipelines/defs/comparison/assets.py)
ASSET_OF = {"run_inputs": "runs", **dict.fromkeys(MARTS, "run_metric_marts")}


def asset_of(table: str) -> str:
    return ASSET_OF.get(table, table)


def check_name(table: str, name: str) -> str:
    return name if asset_of(table) == table else f"{table}_{name}"


def _kind(item: Expectation) -> str:
    if item.gx_types:
        return "GX " + ", ".join(dict.fromkeys(item.gx_types))
    return f"{item.kind.value} query"


def _specs(table: str) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            name=check_name(table, item.name),
            asset=asset_of(table),
            description=f"{item.doc} ({item.severity.value}; {_kind(item)})",
            blocking=item.severity is Severity.ERROR,
        )
        for item in expectations_of(table)
    ]


def _build(table: str) -> dg.AssetChecksDefinition:
    @dg.multi_asset_check(
        name=f"{table}_data_checks",
        specs=_specs(table),
        can_subset=True,
        description=f"Data-check suite of `{table}` (docs/quality.md).",
    )
    def _check(context: dg.AssetCheckExecutionContext, warehouse: StoreResource):
        wanted = {key.name for key in context.selected_asset_check_keys}
        with warehouse.connect(read_only=True) as con:
            report = run_checks(con, tables=[table])
        for result in report.results:
            name = check_name(table, result.expectation.name)
            if name not in wanted:
                continue
            rows = [tuple(str(v) for v in row) for row in result.examples]
            yield dg.AssetCheckResult(
                asset_key=asset_of(table),
                check_name=name,
                passed=result.passed,
                severity=_SEVERITY[result.expectation.severity],
                description=result.expectation.doc,
                metadata={
                    "failing_rows": result.failing,
                    "runs_checked": report.runs_checked,
                    "examples": dg.MetadataValue.md(
                        markdown_rows(list(result.columns), rows) if rows else "none"
                    ),
                },
            )

    return _check


table_data_checks = [_build(table) for table in TABLES]
mart_data_checks = [_build(mart) for mart in MARTS]
