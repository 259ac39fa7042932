"""The code location loads: assets, checks, sensor, resources, executor, pools, import cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from pipelines.defs.quality.checks import mart_data_checks, table_data_checks
from pipelines.defs.resources import WRITE_POOL, RawDirResource, StoreResource

INGEST_TABLES = {
    *("runs", "ranks", "slices", "kernels", "comm_ops", "step_breakdown", "quarantine"),
    "latency_points",
}


@pytest.fixture(scope="module")
def loaded() -> dg.Definitions:
    from pipelines.definitions import defs

    return defs()


def test_asset_keys_checks_and_sensor(loaded: dg.Definitions) -> None:
    keys = {k.to_user_string() for k in loaded.resolve_all_asset_keys()}
    comparison = {"run_metric_marts", "schedule_comparison", "change_points", "dashboard_site"}
    base = {"raw_run_files", "sim_campaign", "chunks", "tau_fits"}
    assert keys == INGEST_TABLES | base | comparison
    repo = loaded.get_repository_def()
    checks = {(k.asset_key.to_user_string(), k.name) for k in repo.asset_graph.asset_check_keys}
    quality = {
        (c.asset_key.to_user_string(), c.name)
        for d in (*table_data_checks, *mart_data_checks)
        for c in d.check_specs
    }
    assert quality <= checks  # data-check suites, tested in tests/quality
    assert checks - quality == {
        ("tau_fits", "dense_models_linear"),
        ("tau_fits", "dsa_models_flagged"),
        ("change_points", "no_confirmed_regression"),
    }
    sensor = repo.get_sensor_def("raw_run_folders")
    selected = {k.to_user_string() for k in sensor.asset_selection.resolve(repo.asset_graph)}
    assert selected == INGEST_TABLES | {"raw_run_files", "chunks"}


def test_refits_run_out_of_the_box(loaded: dg.Definitions) -> None:
    """The automation sensor that evaluates tau_fits' eager condition starts RUNNING (Dagster's
    implicit default one starts stopped), and sim_campaign feeds the ingest assets."""
    repo = loaded.get_repository_def()
    sensor = repo.get_sensor_def("refit_when_chunks_change")
    assert isinstance(sensor, dg.AutomationConditionSensorDefinition)
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert dg.AssetKey("tau_fits") in sensor.asset_selection.resolve(repo.asset_graph)
    raw = repo.asset_graph.get(dg.AssetKey("raw_run_files"))
    assert dg.AssetKey("sim_campaign") in raw.parent_keys


def test_partitions_pools_and_executor(loaded: dg.Definitions) -> None:
    assert loaded.executor is dg.in_process_executor
    assert set(loaded.resources) == {"warehouse", "raw_dir"}
    graph = loaded.get_repository_def().asset_graph
    partitioned = {
        k.to_user_string()
        for k in graph.get_all_asset_keys()
        if graph.get(k).partitions_def is not None
    }
    assert partitioned == INGEST_TABLES | {"raw_run_files", "chunks"}
    assert {graph.get(dg.AssetKey(k)).partitions_def.name for k in partitioned} == {"runs"}
    for assets_def in loaded.assets:
        writes = {k.to_user_string() for k in assets_def.keys} & (
            INGEST_TABLES | {"chunks", "tau_fits", "run_metric_marts", "schedule_comparison"}
        )
        assert (assets_def.op.pool == WRITE_POOL) == bool(writes), assets_def.keys


def test_resource_paths_follow_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRACEREPLAY_WAREHOUSE", str(tmp_path / "w.duckdb"))
    monkeypatch.setenv("TRACEREPLAY_RAW_DIR", str(tmp_path / "drop"))
    assert StoreResource().file == tmp_path / "w.duckdb"
    assert StoreResource(path="x.duckdb").file == Path("x.duckdb")
    assert RawDirResource().folder("run1") == tmp_path / "drop" / "run1"
    for bad in ("..", "a/b", "../etc", ""):
        with pytest.raises(ValueError):
            RawDirResource().folder(bad)


def test_loading_the_code_location_skips_heavy_imports() -> None:
    heavy = ("great_expectations", "altair", "statsmodels.api")
    code = (
        "import json, sys\n"
        "from pipelines.definitions import defs\n"
        "defs()\n"
        f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_tau_fits_are_requested_when_chunks_change(loaded: dg.Definitions) -> None:
    """tau_fits is eager: a new chunks materialization of any run makes the automation
    sensor request a refit; with nothing new, nothing is requested."""
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("runs", ["run_a"])
    defs = dg.Definitions(assets=loaded.assets, resources=loaded.resources)
    selection = dg.AssetSelection.assets("tau_fits")
    first = dg.evaluate_automation_conditions(
        defs=defs, instance=instance, asset_selection=selection
    )
    instance.report_runless_asset_event(dg.AssetMaterialization("chunks", partition="run_a"))
    second = dg.evaluate_automation_conditions(
        defs=defs, instance=instance, asset_selection=selection, cursor=first.cursor
    )
    assert second.get_num_requested(dg.AssetKey("tau_fits")) == 1
    third = dg.evaluate_automation_conditions(
        defs=defs, instance=instance, asset_selection=selection, cursor=second.cursor
    )
    assert third.get_num_requested(dg.AssetKey("tau_fits")) == 0
