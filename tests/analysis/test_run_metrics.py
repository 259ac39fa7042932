"""The metric marts (sql/marts/fct_*.sql) on simulated runs read back through the real ingest:
TTFT, makespan, throughput and per-rank compute agree with the simulator's own figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipelines.analysis.runs.run_metrics import METRICS, build_marts
from pipelines.sim.metrics import summarize
from pipelines.store import open_store
from tests.analysis import metrics_warehouse


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("metrics")
    path, results = metrics_warehouse.build(root, repeats=2)
    con = open_store(path).open()
    build_marts(con)
    yield con, results
    con.close()


def test_run_metrics_match_the_simulator(built):
    con, results = built
    rows = con.execute(
        "select regexp_extract(r.origin, '([a-z]+[0-9])$', 1) as folder, m.*"
        " from fct_run_metrics as m join runs as r using (run_id)"
    ).pl()
    assert rows.height == len(results)
    for row in rows.to_dicts():
        truth = summarize(results[row["folder"]])
        assert row["ttft_ns"] == pytest.approx(truth["ttft_mean_ns"], rel=1e-9)
        assert row["makespan_ns"] == pytest.approx(truth["makespan_ns"], rel=1e-9)
        assert row["throughput_tok_s"] == pytest.approx(truth["throughput_tok_s"], rel=1e-9)
        assert row["compute_ns"] == pytest.approx(truth["compute_ns"], rel=1e-6)
        assert row["n_requests"] == 1
        assert row["tau_slope_ns"] > 0 and row["tau_intercept_ns"] > 0
        assert 0 < row["bubble_ns"] < row["makespan_ns"]


def test_config_aggregates_have_n_and_an_interval(built):
    con, _ = built
    rows = con.execute("select * from fct_config_metrics where metric = 'ttft_ns'").pl()
    assert sorted(rows["schedule"].to_list()) == ["cpp", "vpp"]
    for row in rows.to_dicts():
        assert row["n"] == 2
        assert row["ci_lo"] < row["mean"] < row["ci_hi"]
        # t(0.975, 1) = 12.706: the interval is that many standard errors wide on each side
        half = (row["ci_hi"] - row["ci_lo"]) / 2
        assert half == pytest.approx(12.7062 * row["sd"] / math.sqrt(2), rel=1e-4)


def test_every_long_form_metric_is_defined(built):
    con, _ = built
    names = {
        r[0] for r in con.execute("select distinct metric from fct_run_metric_values").fetchall()
    }
    assert names <= set(METRICS)
    assert {"ttft_ns", "makespan_ns", "compute_ns", "bubble_ns"} <= names


def test_op_names_are_normalised(built):
    con, _ = built
    ops = {r[0] for r in con.execute("select distinct op from fct_op_time_by_run").fetchall()}
    assert not any("__" in op for op in ops if op.startswith("hcom_"))
    assert {"hcom_send", "hcom_receive"} <= ops


def test_ttft_percentiles_over_several_requests(tmp_path):
    """Four requests of different lengths in one simulated run: the mart's p50 / p90 / p99 are
    numpy's linear-interpolation percentiles of the run's per-request TTFTs (fct_request_ttft),
    ordered and bounded by the mean and the maximum."""
    from pipelines.analysis.chunks.chunk_store import extract_chunks
    from pipelines.ingest.load import ingest_paths
    from pipelines.sim.run import simulate
    from pipelines.sim.writers_ascend import write_ascend_pt

    result = simulate(
        [16384, 49152, 32768, 65536], "cpp", model="llama3-8b", chunk_size=16384, pp=2
    )
    write_ascend_pt(result, tmp_path / "raw")
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        runs = ingest_paths([tmp_path / "raw"], con, progress=False).runs
        extract_chunks(con, [r.run_id for r in runs])
        build_marts(con)
        ttft = [r[0] for r in con.execute("select ttft_ns from fct_request_ttft").fetchall()]
        row = con.execute("select * from fct_run_metrics").pl().row(0, named=True)
        values = dict(
            con.execute(
                "select metric, value from fct_run_metric_values where metric like 'ttft_p%'"
            ).fetchall()
        )
    finally:
        con.close()
    assert len(ttft) == row["n_requests"] == 4 and len(set(ttft)) == 4
    for q in (50, 90, 99):
        want = float(np.percentile(ttft, q))
        assert row[f"ttft_p{q}_ns"] == pytest.approx(want, rel=1e-12)
        assert values[f"ttft_p{q}_ns"] == pytest.approx(want, rel=1e-12)
    assert row["ttft_p50_ns"] < row["ttft_p90_ns"] < row["ttft_p99_ns"] < row["ttft_max_ns"]
    assert row["ttft_p99_ns"] > row["ttft_ns"]
