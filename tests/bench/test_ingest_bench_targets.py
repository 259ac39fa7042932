"""The targets of `bench ingest` (issue 37): ours = the `tracereplay ingest` process against
DuckDB's in-memory read_json, the wall ratio taken within each interleaved round, peak RSS
against the ingest budget, rate against HTA; and the CLI's shape and path arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.bench.generate import generate_rank
from pipelines.bench.harness import Measurement
from pipelines.bench.ingest_bench import (
    DEFAULT_PATHS,
    SHAPES,
    IngestBenchReport,
    floor_of,
    paired_wall_ratio,
    targets_of,
)
from pipelines.bench.ingest_children import main as child_main
from pipelines.bench.ingest_report import format_report
from pipelines.cli import ExitCode, main

GIB = 2**30


def _m(path: str, wall: float, rss: float = 500.0, mb: float = 500.0) -> Measurement:
    return Measurement(path, mb=mb, events=1, wall_s=wall, peak_rss_mb=rss)


def test_the_wall_ratio_is_paired_within_rounds() -> None:
    # round 1 under load (both slow), round 2 quiet: per-round ratios 0.8 and 1.2, median 1.0;
    # ratios of the medians of each path would mix rounds (10 / 5 = 2.0 here)
    rounds = [
        {"ours_cli": _m("ours_cli", 16.0), "duckdb_mem": _m("duckdb_mem", 20.0)},
        {"ours_cli": _m("ours_cli", 6.0), "duckdb_mem": _m("duckdb_mem", 5.0)},
    ]
    assert paired_wall_ratio(rounds) == pytest.approx(1.0)
    assert paired_wall_ratio(rounds[:1]) == pytest.approx(0.8)
    failed = _m("duckdb_mem", 1.0)
    failed.status = "failed"
    assert paired_wall_ratio([{"ours_cli": _m("ours_cli", 1.0), "duckdb_mem": failed}]) is None


def test_cli_targets_met_and_missed() -> None:
    hta = _m("hta", 100.0, mb=460.0)  # 4.6 MB/s
    measured = [_m("ours_cli", 9.0, rss=1_500.0), _m("duckdb_mem", 10.0), hta]
    targets = {t.name: t for t in targets_of(measured, 500.0, 2 * GIB)}
    assert list(targets) == ["cli_vs_duckdb_mem_wall", "cli_rss_vs_budget", "cli_vs_hta_rate"]
    assert targets["cli_vs_duckdb_mem_wall"].value == pytest.approx(0.9)
    assert targets["cli_vs_duckdb_mem_wall"].status == "met"
    assert targets["cli_rss_vs_budget"].value == pytest.approx(1_500 / (2 * GIB / 1e6))
    assert targets["cli_rss_vs_budget"].status == "met"
    assert targets["cli_vs_hta_rate"].value == pytest.approx((500 / 9) / 4.6)
    assert targets["cli_vs_hta_rate"].status == "met"
    slow = [_m("ours_cli", 12.0, rss=2_200.0), _m("duckdb_mem", 10.0), _m("hta", 50.0, mb=460)]
    missed = {t.name: t.status for t in targets_of(slow, 500.0, 2 * GIB, wall_ratio=1.3)}
    assert missed == {
        "cli_vs_duckdb_mem_wall": "not met",  # the paired ratio wins over the medians' 1.2
        "cli_rss_vs_budget": "not met",  # 2,200 MB > 2,147 MB
        "cli_vs_hta_rate": "not met",  # 41.7 / 9.2 MB/s = 4.5x
    }


def test_a_failed_cli_run_meets_nothing() -> None:
    broken = _m("ours_cli", 1.0)
    broken.status = "failed"
    targets = targets_of([broken, _m("duckdb_mem", 10.0)], 500.0, 2 * GIB)
    assert {t.status for t in targets} == {"n/a"}


def test_defaults_compare_what_the_acceptance_names() -> None:
    assert DEFAULT_PATHS == ("ours_cli", "duckdb_mem", "floor", "hta")
    assert SHAPES == {
        "generator": ("renumbered", False),
        "repeated-ids": ("repeated", False),
        "markers": ("renumbered", True),
        "markers-repeated-ids": ("repeated", True),
    }


def test_the_floor_is_its_cpu_over_the_cores() -> None:
    floor = Measurement("floor", mb=500.0, events=1, wall_s=3.8, cpu_s=4.2)
    floor.extra["startup_cpu_s"] = 0.4
    measured = [_m("ours_cli", 7.0), _m("duckdb_mem", 2.5), floor]
    got = floor_of(measured, cpus=2)
    assert got["cpu_s"] == pytest.approx(4.6) and got["wall_s"] == pytest.approx(2.3)
    assert got["vs_duckdb_mem"] == pytest.approx(2.3 / 2.5)
    assert got["ours_cli_vs_floor"] == pytest.approx(7.0 / 2.3)
    assert floor_of(measured, cpus=4)["wall_s"] == pytest.approx(1.15)
    floor.status = "failed"
    assert floor_of(measured, cpus=2) is None
    assert floor_of([_m("ours_cli", 7.0)], cpus=2) is None
    trace = {"path": "t.json", "mb": 500.0, "events": 1, "complete_events": 1, "copies": 1}
    floor.status = "ok"
    report = IngestBenchReport(trace | {"source_events": 1}, measured, [], {"cores": 2})
    text = format_report(report)
    assert "floor: 4.60 s CPU over 2 cores = 2.30 s = 0.92x DuckDB in memory" in text
    assert max(len(line) for line in text.splitlines()) <= 120
    assert report.as_json()["floor"]["wall_s"] == pytest.approx(2.3)


def test_the_floor_probe_stores_the_complete_events_and_hashes(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import hashlib

    trace = real_dir / "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
    path = trace / "ASCEND_PROFILER_OUTPUT/trace_view.json"
    assert child_main(["floor", str(path), str(tmp_path / "f.duckdb")]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    result = json.loads(line.removeprefix("BENCH_RESULT "))
    complete = sum(1 for e in json.loads(path.read_text()) if e.get("ph") == "X")
    assert result["rows"] == complete > 0
    assert result["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert result["startup_cpu_s"] > 0 and result["cpu_s"] > 0


@pytest.mark.parametrize(
    "extra",
    [["--shape", "kineto"], ["--shape", ","], ["--paths", "ours_cli,fast"]],
)
def test_bench_ingest_rejects_unknown_shapes_and_paths(
    extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "ingest", "--size-mb", "1", *extra]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tracereplay bench ingest:")


@pytest.mark.parametrize("repeat_ids", [False, True], ids=["markers", "markers-repeated-ids"])
def test_marker_shape_is_segmented_into_one_chunk_per_copy(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], repeat_ids: bool
) -> None:
    source = real_dir / "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
    trace = generate_rank(tmp_path / "gen", 4, source, repeat_ids=repeat_ids, markers=True)
    plain = generate_rank(tmp_path / "plain", 4, source, repeat_ids=repeat_ids)
    assert trace.copies == plain.copies >= 2
    assert trace.complete_events == plain.complete_events + trace.copies
    warehouse = str(tmp_path / "w.duckdb")
    argv = ["ingest", str(trace.rank_dir), "--warehouse", warehouse, "--json", "--no-progress"]
    assert main(argv) == ExitCode.OK
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["chunks"] == trace.copies
    assert run["events"] == trace.complete_events
