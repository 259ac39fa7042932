"""`tracereplay schedules` and pipelines.analysis.comparison.schedule_table on the DeepSeek-V3.1
512K preset (the
workload of seed 000's Table 2: 24K chunks, pp 2): 3 seeded repeats (2 % noise) of CPP, DCPP and
VPP-pack, simulated, written as Ascend profiler folders and read back by the real ingest."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from pipelines.analysis.chunks.chunk_store import extract_chunks
from pipelines.analysis.comparison.schedule_table import _versus, _welch_interval, compare_schedules
from pipelines.cli import ExitCode, main
from pipelines.ingest.load import ingest_paths
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import open_store

MODEL = "deepseek-v3.1"
SCHEDULES = ("cpp", "dcpp", "vpp_pack")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("schedules")
    folders = []
    for schedule in SCHEDULES:
        for seed in range(3):
            result = simulate(
                524288, schedule, model=MODEL, chunk_size=24576, pp=2, noise=0.02, seed=seed
            )
            folders.append(root / "raw" / f"{schedule}{seed}")
            write_ascend_pt(result, folders[-1])
    path = root / "warehouse.duckdb"
    con = open_store(path).open()
    try:
        ingested = ingest_paths(folders, con, progress=False)
        extract_chunks(con, [r.run_id for r in ingested.runs])
    finally:
        con.close()
    return path


@pytest.fixture(scope="module")
def report(built):
    con = open_store(built).open()
    try:
        first = compare_schedules(con)
        second = compare_schedules(con)
    finally:
        con.close()
    return first, second


def test_one_workload_with_every_schedule_and_part(report):
    first, _ = report
    assert len(first.workloads) == 1
    w = first.workloads[0]
    assert w.workload["model"] == MODEL
    assert list(w.runs) == list(SCHEDULES)
    assert all(len(ids) == 3 for ids in w.runs.values())
    assert len(w.rows) == len(SCHEDULES) * 4
    for r in w.rows:
        assert r.n == 3
        assert r.mean_lo <= r.mean <= r.mean_hi
        if r.schedule == "cpp":
            assert r.verdict == "baseline" and math.isnan(r.delta)
        else:
            assert r.delta_lo <= r.delta <= r.delta_hi
            assert r.delta_rel_lo <= r.delta_rel <= r.delta_rel_hi
            assert r.n_predicted == 3  # the three CPP runs, replayed


def test_direction_of_seed_000_table_2(report):
    w = report[0].workloads[0]
    dcpp_bubble, dcpp_compute = w.row("dcpp", "bubble"), w.row("dcpp", "compute")
    assert dcpp_bubble.verdict == "improved" and dcpp_bubble.delta_rel_hi < 0
    assert dcpp_compute.verdict == "regressed" and dcpp_compute.delta_rel_lo > 0
    dcpp_comm = w.row("dcpp", "exposed comm")  # Table 2: 16.7 s (CPP) -> 22.7 s (DCPP)
    assert dcpp_comm.verdict == "regressed" and dcpp_comm.delta_rel_lo > 0
    vpp_bubble = w.row("vpp_pack", "bubble")
    assert vpp_bubble.delta_rel_hi < -0.5  # most of the bubble gone, the whole interval
    total = w.row("vpp_pack", "total")
    assert total.mean == pytest.approx(
        sum(w.row("vpp_pack", p).mean for p in ("compute", "bubble", "exposed comm"))
    )


def test_exposed_comm_is_never_negative(report):
    # the simulator books VPP-pack's overlapped receives as the profiler's Bubble; the rank
    # breakdown counts receive wait only up to the non-overlapped communication
    for r in report[0].workloads[0].rows:
        if r.part == "exposed comm":
            assert r.mean >= 0


def test_replays_once(report):
    first, second = report
    assert len(first.replayed) == 3
    assert second.replayed == []
    rows = [(r.schedule, r.part, r.predicted_rel) for r in second.workloads[0].rows]
    assert rows == [(r.schedule, r.part, r.predicted_rel) for r in first.workloads[0].rows]


def test_versus_prediction_rule():
    # measured [+4 %, +6 %] against predicted [-1 %, +1 %]: short by 5 points
    assert _versus(0.04, 0.06, 0.05, -0.01, 0.01, 0.0, 0.01)[0] == "short"
    assert _versus(-0.06, -0.04, -0.05, -0.01, 0.01, 0.0, 0.01)[0] == "beyond"
    # intervals apart but by less than the minimum magnitude
    assert _versus(0.011, 0.013, 0.012, 0.0, 0.01, 0.005, 0.01)[0] == "within_noise"
    assert _versus(0.0, 0.1, 0.05, -0.01, 0.01, 0.0, 0.01)[0] == "within_noise"
    assert _versus(math.nan, math.nan, 0.05, -0.01, 0.01, 0.0, 0.01)[0] == "n/a"


def test_cli_table_fits_and_json(built, capsys):
    assert main(["schedules", "--warehouse", str(built), "--no-replay"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 120
    assert "dcpp" in out and "vs rp" in out and "replay Δ%" in out
    assert main(["schedules", "--warehouse", str(built), "--json", "--no-replay"]) == ExitCode.OK
    payload = json.loads(capsys.readouterr().out)
    rows = payload["workloads"][0]["rows"]
    assert {r["schedule"] for r in rows} == set(SCHEDULES)


def test_cli_bad_selector_is_exit_2(built, capsys):
    assert main(["schedules", "--warehouse", str(built), "model=nope"]) == ExitCode.BAD_INPUT
    assert "no run matches" in capsys.readouterr().err


def test_welch_interval_with_one_side_fixed_is_scipys_without_the_warning():
    fixed, varied = np.array([16.0, 16.0, 16.0]), np.array([15.9, 16.7, 16.4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's precision-loss warning on the fixed side
        ci = stats.ttest_ind(varied, fixed, equal_var=False).confidence_interval(0.95)
        back = stats.ttest_ind(fixed, varied, equal_var=False).confidence_interval(0.95)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _welch_interval(fixed, varied)[1:] == pytest.approx((ci.low, ci.high))
        assert _welch_interval(varied, fixed)[1:] == pytest.approx((back.low, back.high))
