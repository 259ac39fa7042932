"""The Dagster asset checks come from the same suites as `tracereplay check`: one per
expectation on its table's asset (the marts' on `run_metric_marts`), blocking when
error-severity, failing rows as metadata."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipelines.defs.quality.checks import (
    asset_of,
    check_name,
    mart_data_checks,
    table_data_checks,
)
from pipelines.defs.resources import StoreResource
from pipelines.quality.check_catalog import EXPECTATIONS, MARTS, Severity

ALL_CHECKS = [*table_data_checks, *mart_data_checks]


@pytest.fixture(scope="session")
def demo_warehouse(quick_demo_warehouse: Path) -> Path:
    """The session's quick demo warehouse (tests/conftest.py), shared, never changed in place."""
    return quick_demo_warehouse


def _run_checks(warehouse: Path) -> dg.ExecuteInProcessResult:
    assets = sorted({asset_of(e.table) for e in EXPECTATIONS})
    defs = dg.Definitions(
        assets=[dg.AssetSpec(a) for a in assets],
        asset_checks=ALL_CHECKS,
        resources={"warehouse": StoreResource(path=str(warehouse))},
        jobs=[dg.define_asset_job("checks", selection=dg.AssetSelection.all_asset_checks())],
    )
    with dg.DagsterInstance.ephemeral() as instance:
        return defs.resolve_job_def("checks").execute_in_process(
            instance=instance, raise_on_error=False
        )


@pytest.fixture(scope="module")
def clean_evaluations(demo_warehouse: Path) -> list[dg.AssetCheckEvaluation]:
    """The checks' evaluations on the clean demo warehouse, run once for this module's tests."""
    return _run_checks(demo_warehouse).get_asset_check_evaluations()


def test_one_check_per_expectation_blocking_for_errors() -> None:
    specs = {
        (spec.asset_key.to_user_string(), spec.name): spec
        for checks in ALL_CHECKS
        for spec in checks.check_specs
    }
    assert set(specs) == {(asset_of(e.table), check_name(e.table, e.name)) for e in EXPECTATIONS}
    for e in EXPECTATIONS:
        spec = specs[(asset_of(e.table), check_name(e.table, e.name))]
        assert spec.blocking == (e.severity is Severity.ERROR)


def test_checks_pass_on_the_demo_and_fail_with_rows(
    demo_warehouse, clean_evaluations, tmp_path
) -> None:
    evaluations = clean_evaluations
    assert len(evaluations) == len(EXPECTATIONS)
    assert all(ev.passed for ev in evaluations if ev.severity == dg.AssetCheckSeverity.ERROR)
    warned = {ev.check_name for ev in evaluations if not ev.passed}

    broken = tmp_path / "warehouse.duckdb"
    shutil.copy(demo_warehouse, broken)
    con = duckdb.connect(str(broken))
    con.execute("insert into slices select * from slices order by run_id, start_ns limit 1")
    con.close()
    failed = [
        ev
        for ev in _run_checks(broken).get_asset_check_evaluations()
        if not ev.passed and ev.check_name not in warned
    ]
    assert [(ev.asset_key.to_user_string(), ev.check_name) for ev in failed] == [
        ("slices", "no_duplicated_events")
    ]
    assert failed[0].severity == dg.AssetCheckSeverity.ERROR
    assert failed[0].metadata["failing_rows"].value == 2  # GX: both copies are unexpected rows
    assert "run_id" in failed[0].metadata["examples"].value


def test_a_broken_mart_fails_its_check_on_run_metric_marts(
    demo_warehouse, clean_evaluations, tmp_path
) -> None:
    """The marts' suites are checks of the asset that rebuilds them: a request whose chunks
    carry no tokens fails `fct_request_ttft`'s prompt check there, at error severity."""
    clean = {ev.check_name for ev in clean_evaluations}
    assert {check_name(m, e.name) for m in MARTS for e in EXPECTATIONS if e.table == m} <= clean
    broken = tmp_path / "warehouse.duckdb"
    shutil.copy(demo_warehouse, broken)
    con = duckdb.connect(str(broken))
    con.execute(
        "update chunks set tokens = 0 where (run_id, request_id) ="
        " (select (run_id, request_id) from chunks order by all limit 1)"
    )
    con.close()
    failed = {
        (ev.asset_key.to_user_string(), ev.check_name): ev
        for ev in _run_checks(broken).get_asset_check_evaluations()
        if not ev.passed
    }
    key = ("run_metric_marts", "fct_request_ttft_positive_prompt_tokens")
    assert key in failed
    assert failed[key].severity == dg.AssetCheckSeverity.ERROR
    assert failed[key].metadata["failing_rows"].value == 1
