"""The comparison assets and the regression check, materialised on simulated ingested runs."""

from __future__ import annotations

import dagster as dg
import pytest

from pipelines.defs.comparison.assets import (
    change_points,
    dashboard_site,
    run_metric_marts,
    schedule_comparison,
)
from pipelines.defs.comparison.checks import no_confirmed_regression
from pipelines.defs.resources import StoreResource
from tests.analysis import metrics_warehouse


@pytest.mark.slow  # a Dagster materialisation end to end (CI runs it: .ci/run)
def test_comparison_assets_materialise(tmp_path, monkeypatch):
    path, _ = metrics_warehouse.build(tmp_path, ("cpp", "vpp"), repeats=3)
    project = tmp_path / "project"
    project.mkdir()
    (project / "tracereplay.toml").write_text("")
    monkeypatch.chdir(project)  # the pages go to <project>/data/site (docs/paths.md)
    result = dg.materialize(
        [
            run_metric_marts,
            schedule_comparison,
            change_points,
            dashboard_site,
            no_confirmed_regression,
        ],
        resources={"warehouse": StoreResource(path=str(path))},
    )
    assert result.success
    events = [e.materialization for e in result.get_asset_materialization_events()]
    meta = {m.asset_key.to_user_string(): m.metadata for m in events}
    assert meta["run_metric_marts"]["dagster/row_count"].value == 6
    assert meta["schedule_comparison"]["workloads"].value == 1
    assert "| vpp | total |" in meta["schedule_comparison"]["table"].value
    index = project / "data" / "site" / "index.html"
    assert index.is_file() and meta["dashboard_site"]["pages"].value >= 1
    assert meta["dashboard_site"]["index"].value == str(index)
    checks = result.get_asset_check_evaluations()
    assert [c.check_name for c in checks] == ["no_confirmed_regression"]
    assert checks[0].passed  # 3 runs a configuration: no history, no regression
