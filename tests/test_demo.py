"""`tracereplay demo --quick` end to end, in-process: simulated Ascend folders -> warehouse ->
chunks -> fits; the DSA model's curves are flagged, the dense ones linear; a second run adds no
rows. The two demo runs take about 10 s together (marked slow)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from pipelines.campaign import MODELS as DEMO_MODELS
from pipelines.cli import main
from pipelines.demo import check_curves


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory) -> tuple[Path, dict, dict]:
    out = tmp_path_factory.mktemp("demo")
    argv = ["demo", "--quick", "--no-dashboards", "--out", str(out), "--json"]
    results = []
    for _ in range(2):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = main(argv)
        assert code == 0
        results.append(json.loads(buffer.getvalue()))
    return out, results[0], results[1]


@pytest.mark.slow
def test_campaign_is_written_as_ascend_folders_and_ingested(demo_runs) -> None:
    out, first, _ = demo_runs
    runs = sorted(p.name for p in (out / "raw").iterdir())
    assert len(runs) == len(DEMO_MODELS) * 3 == first["runs"]  # quick: cpp at 128K, 3 repeats
    assert all(len(list((out / "raw" / r).glob("*_ascend_pt"))) == 2 for r in runs)  # pp=2
    assert (out / "warehouse.duckdb").is_file() and first["warehouse"].startswith(str(out))
    assert first["quarantined"] == []
    assert first["chunks"] == first["runs"] * 8 * 2  # 128K / 16K chunks x 2 stages
    assert first["unassigned_fraction_max"] == 0.0


@pytest.mark.slow
def test_dsa_curves_are_flagged_and_dense_curves_linear(demo_runs) -> None:
    _, first, _ = demo_runs
    curves = first["curves"]
    assert len(curves) == len(DEMO_MODELS) * 2  # one curve per model and stage
    for curve in curves:
        assert curve["n_runs"] == 3 and curve["n_points"] == 3 * 8
        if curve["attention"] == "sparse":
            assert curve["model"] == "glm-5.2"
            assert curve["verdict"] != "linear", curve
        else:
            assert curve["attention"] == "dense"
            assert curve["verdict"] == "linear", curve
    check = first["check"]
    assert check["ok"] and check["failures"] == []
    assert check["expectations"]["dsa_models_flagged"]["offending"] == 0
    assert check["expectations"]["dsa_models_flagged"]["decided"] == 2


@pytest.mark.slow
def test_second_run_adds_no_rows_and_fits_the_same(demo_runs) -> None:
    _, first, second = demo_runs
    assert sum(first["rows_added"].values()) > 0
    assert all(n == 0 for n in second["rows_added"].values()), second["rows_added"]
    assert second["run_ids"] == first["run_ids"]
    assert second["curves"] == first["curves"]


@pytest.mark.slow
def test_replay_of_the_first_deepseek_cpp_run(demo_runs) -> None:
    _, first, _ = demo_runs
    replay = first["replay"]
    assert replay["model"] == "deepseek-v3.1" and replay["replay_of"] in first["run_ids"]
    by_schedule = {r["schedule"]: r for r in replay["rows"] if r["kind"] == "replay"}
    assert set(by_schedule) == {"cpp", "vpp", "vpp_pack"}
    assert by_schedule["cpp"]["speedup"] == 1.0
    assert by_schedule["vpp_pack"]["speedup"] > 1.0


def test_self_check_fails_when_a_dsa_curve_is_linear() -> None:
    import polars as pl

    curves = pl.DataFrame(
        {
            "model": ["glm-5.2", "deepseek-v3.1"],
            "attention": ["sparse", "dense"],
            "schedule": ["cpp", "cpp"],
            "seq_len": [131072, 131072],
            "vstage": [0, 0],
            "verdict": ["linear", "linear"],
            "curvature_effect": [0.0, 0.05],
        }
    )
    check = check_curves(curves)
    assert not check.ok and check.failures == [
        "dsa_models_flagged: glm-5.2 cpp s131072 vs0: linear"
    ]
    dense_convex = check_curves(curves.with_columns(pl.Series("verdict", ["kinked", "convex"])))
    assert not dense_convex.ok and dense_convex.failures == [
        "dense_models_linear: deepseek-v3.1 cpp s131072 vs0: convex departure 5.0% of mean tau"
    ]


def test_inconclusive_curves_count_neither_way_but_the_demo_needs_decided_ones() -> None:
    import polars as pl

    curves = pl.DataFrame(
        {
            "model": ["glm-5.2", "deepseek-v3.1"],
            "attention": ["sparse", "dense"],
            "schedule": ["cpp", "cpp"],
            "seq_len": [131072, 131072],
            "vstage": [0, 0],
            "verdict": ["too_noisy", "linear"],
        }
    )
    check = check_curves(curves)
    assert all(r.passed for r in check.results)  # what the Dagster checks report
    assert check.failures == ["dsa_models_flagged: no decided curve of runs with sparse attention"]


def test_the_regression_summary_names_the_widest_date_set_of_a_change() -> None:
    """Two metrics of one change with different 95 % sets: one entry, their union."""
    from pipelines.analysis.changes.history import HistoryChange
    from pipelines.demo import RegressionCheck

    def change(metric: str, earliest: str, latest: str) -> HistoryChange:
        return HistoryChange(
            config={"model": "m", "schedule": "cpp", "seq_len": 65536},
            metric=metric,
            status="confirmed",
            direction="regression",
            run_before="r13",
            collected_before="2026-02-14T02:00:00",
            run_after="r14",
            collected_after="2026-02-15T02:00:00",
            earliest_after_run="rA",
            earliest_after_at=earliest,
            latest_after_run="rB",
            latest_after_at=latest,
            n_before=14,
            n_after=6,
            magnitude=0.043,
            magnitude_lo=0.027,
            magnitude_hi=0.059,
            p_value=0.0016,
        )

    expected = {"model": "m", "schedule": "cpp", "seq_len": 65536, "night": 13}
    expected |= {"date": "2026-02-14", "slowdown": 0.05}
    check = RegressionCheck(
        [
            change("ttft_ns", "2026-02-14T02:00:00", "2026-02-16T02:00:00"),
            change("makespan_ns", "2026-02-13T02:00:00", "2026-02-15T02:00:00"),
        ],
        series=6,
        expected=expected,
        first_night="2026-02-01",
    )
    assert check.ok
    assert "(m cpp from 2026-02-15, 95 % set 02-13 … 02-16)" in check.summary()
