"""One pipeline behind three doors: `tracereplay demo` and the Dagster assets write the same
campaign (same folders, same bytes), fit it through the same step and judge it by the same
verdict policy; `tracereplay fit` and the Dagster `tau_fits` store identical rows.

The module fixture runs the demo's --quick campaign (9 runs) once through the demo and once through
the code location (pipelines.cli.materialize): about a minute on a quiet machine."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.analysis.tau.fit_store import load_fits
from pipelines.cli import main
from pipelines.cli.materialize import materialize_all
from pipelines.defs.resources import RawDirResource, StoreResource
from pipelines.demo import DemoConfig, DemoReport, run_demo
from pipelines.publish import same_tree

pytestmark = pytest.mark.slow


class Doors:
    demo: DemoReport
    dagster: dg.ExecuteInProcessResult
    demo_raw: Path
    dagster_raw: Path
    dagster_warehouse: Path


def _fits(path: Path) -> pl.DataFrame:
    con = duckdb.connect(str(path), read_only=True)
    try:
        fits = load_fits(con)
    finally:
        con.close()
    assert fits is not None
    return fits


@pytest.fixture(scope="module")
def doors(tmp_path_factory) -> Doors:
    root = tmp_path_factory.mktemp("doors")
    state = Doors()
    config = replace(DemoConfig(out=root / "demo").quick(), replay_schedules=(), dashboards=False)
    state.demo = run_demo(config, log=lambda _: None)
    state.demo_raw = config.raw_dir
    state.dagster_raw = root / "dagster" / "raw"
    state.dagster_warehouse = root / "dagster" / "warehouse.duckdb"
    resources = {
        "warehouse": StoreResource(path=str(state.dagster_warehouse)),
        "raw_dir": RawDirResource(path=str(state.dagster_raw), settle_seconds=0),
    }
    quick = config.campaign
    campaign = {
        "schedules": list(quick.schedules),
        "seq_lens": list(quick.seq_lens),
        "more_schedules": list(quick.more_schedules),
        "nights": quick.history.nights,
        "short_prompts": quick.short is not None,
    }
    with dg.DagsterInstance.ephemeral() as instance:
        state.dagster = materialize_all(instance, resources, campaign, log=lambda _: None)
    return state


def test_demo_and_dagster_write_the_same_run_folders_byte_for_byte(doors: Doors) -> None:
    demo = sorted(p.name for p in doors.demo_raw.iterdir())
    dagster = sorted(p.name for p in doors.dagster_raw.iterdir())
    assert demo == dagster and len(demo) == 9  # 3 models x cpp x 128K x 3 repeats
    assert all(same_tree(doors.demo_raw / name, doors.dagster_raw / name) for name in demo)


def test_the_same_verdict_checks_pass_on_both(doors: Doors) -> None:
    demo = {r.expectation.name: r for r in doors.demo.check.results}
    dagster = {e.check_name: e for e in doors.dagster.get_asset_check_evaluations()}
    assert set(demo) == set(dagster) == {"dense_models_linear", "dsa_models_flagged"}
    assert doors.demo.check.ok, doors.demo.check.failures
    curves = {"dense_models_linear": 4, "dsa_models_flagged": 2}  # 2 dense models, 1 DSA, 2 stages
    for name, result in demo.items():
        assert result.passed and dagster[name].passed, name
        assert dagster[name].metadata["curves_checked"].value == result.covered.height
        assert result.covered.height == curves[name]
        assert dagster[name].metadata["curves_decided"].value == result.decided > 0


def test_demo_and_dagster_store_the_same_fits(doors: Doors) -> None:
    demo = _fits(doors.demo.config.warehouse_path)
    dagster = _fits(doors.dagster_warehouse)
    assert demo.height == 6  # 3 models x 2 stages
    assert_frame_equal(demo, dagster)


def test_cli_fit_and_dagster_tau_fits_store_identical_rows(doors: Doors, capsys) -> None:
    stored_by_dagster = _fits(doors.dagster_warehouse)
    assert main(["fit", "--warehouse", str(doors.dagster_warehouse)]) == 0
    out = capsys.readouterr().out
    assert "ok   dense_models_linear" in out and "ok   dsa_models_flagged" in out
    assert_frame_equal(_fits(doors.dagster_warehouse), stored_by_dagster)
