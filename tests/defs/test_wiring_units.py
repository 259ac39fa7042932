"""Plain functions of the wiring and the library parts it calls: the verdict policy's coverage
by the attention fact, a check with no fit table, and how the campaign publishes a run folder."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.analysis.tau.verdict_policy import DENSE_LINEAR, SPARSE_FLAGGED, check_expectation
from pipelines.defs.analysis.checks import dense_models_linear, dsa_models_flagged
from pipelines.defs.resources import StoreResource
from pipelines.publish import NotOurFolder, publish, same_tree
from tests.defs.conftest import write_tiny_run

FITS = pl.DataFrame(
    {
        "model": ["Qwen3-Coder-30B-A3B", "deepseek-v3.1", "deepseek-v3.2", "glm-5.2", "x"],
        "attention": ["dense", "dense", "sparse", "sparse", None],
        "verdict": ["linear", "too_noisy", "linear_offset", "linear", "convex"],
        "ba_lo": [0.0, 0.0, -0.01, 0.0, 0.0],
        "ba_hi": [0.0, 0.0, 0.05, 0.0, 0.0],
    }
)


def test_policy_covers_curves_by_their_attention_fact_not_their_name() -> None:
    dense = check_expectation(FITS, DENSE_LINEAR)
    sparse = check_expectation(FITS, SPARSE_FLAGGED)
    assert dense.covered["model"].to_list() == ["Qwen3-Coder-30B-A3B", "deepseek-v3.1"]
    assert dense.passed and dense.decided == 1 and dense.inconclusive.height == 1
    assert sparse.covered["model"].to_list() == ["deepseek-v3.2", "glm-5.2"]
    assert not sparse.passed and sparse.offending["model"].to_list() == ["glm-5.2"]
    assert sparse.covered["magnitude"].to_list() == ["|slope/intercept| <= 0.05", ""]
    assert check_expectation(FITS.drop("attention"), DENSE_LINEAR).covered.is_empty()


@pytest.mark.parametrize(
    ("check", "severity"),
    [
        (dense_models_linear, dg.AssetCheckSeverity.ERROR),
        (dsa_models_flagged, dg.AssetCheckSeverity.WARN),
    ],
)
def test_check_without_a_fit_table_fails(check, severity, tmp_path: Path) -> None:
    for path in (tmp_path / "absent.duckdb", tmp_path / "empty.duckdb"):
        if path.name == "empty.duckdb":
            with StoreResource(path=str(path)).connect():
                pass  # canonical schema only, no tau_fits
        result = check(warehouse=StoreResource(path=str(path)))
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
    with pytest.raises(NotOurFolder, match="not written by the simulator"):
        publish(tmp_path / ".staged", mine)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert not (tmp_path / ".staged").exists()
