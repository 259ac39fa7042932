"""Plain functions of the wiring: model patterns of the checks, a check with no fit table, and
how the campaign publishes a run folder."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.defs.analysis.checks import (
    DenseLinearConfig,
    DsaFlaggedConfig,
    curves_of,
    dense_models_linear,
    dsa_models_flagged,
)
from pipelines.defs.resources import WarehouseResource
from pipelines.defs.simulation.assets import publish, same_tree
from tests.defs.conftest import write_tiny_run

FITS = pl.DataFrame(
    {
        "model": ["Qwen3-Coder-30B-A3B", "deepseek-v3.1", "deepseek-v3.2", "glm-5.2", None],
        "verdict": ["linear", "linear", "linear_offset", "linear_offset", "linear"],
    }
)


def test_default_model_patterns() -> None:
    dense = curves_of(FITS, DenseLinearConfig().models)["model"].to_list()
    dsa = curves_of(FITS, DsaFlaggedConfig().models)["model"].to_list()
    assert dense == ["Qwen3-Coder-30B-A3B", "deepseek-v3.1"]  # case-insensitive, V3.2 is DSA
    assert dsa == ["deepseek-v3.2", "glm-5.2"]
    assert curves_of(FITS, ["mistral*"]).is_empty()


@pytest.mark.parametrize(
    ("check", "config", "severity"),
    [
        (dense_models_linear, DenseLinearConfig(), dg.AssetCheckSeverity.ERROR),
        (dsa_models_flagged, DsaFlaggedConfig(), dg.AssetCheckSeverity.WARN),
    ],
)
def test_check_without_a_fit_table_fails(check, config, severity, tmp_path: Path) -> None:
    for path in (tmp_path / "absent.duckdb", tmp_path / "empty.duckdb"):
        if path.name == "empty.duckdb":
            with WarehouseResource(path=str(path)).connect():
                pass  # canonical schema only, no tau_fits
        result = check(config=config, warehouse=WarehouseResource(path=str(path)))
        assert not result.passed and result.severity == severity
        assert "materialise tau_fits" in result.description


def test_publish_replaces_only_simulator_folders(tmp_path: Path) -> None:
    final = tmp_path / "run"
    write_tiny_run(tmp_path / ".staged", seed=0)
    assert publish(tmp_path / ".staged", final) == "written"
    write_tiny_run(tmp_path / ".staged", seed=0)
    assert publish(tmp_path / ".staged", final) == "unchanged"
    write_tiny_run(tmp_path / ".staged", seed=1)
    assert publish(tmp_path / ".staged", final) == "replaced"
    write_tiny_run(tmp_path / "expected", seed=1)
    assert same_tree(final, tmp_path / "expected")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expected", "run"]

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("a user's folder")
    write_tiny_run(tmp_path / ".staged", seed=0)
    with pytest.raises(dg.Failure, match="not written by the simulator"):
        publish(tmp_path / ".staged", mine)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert not (tmp_path / ".staged").exists()
