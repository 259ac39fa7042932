"""Smoke test of `tracereplay bench ingest` at tiny scale (harness and report fields, never timing
assertions), and checks of the generated trace itself."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from pipelines.bench.generate import STEP_PREFIX, generate_rank, ns_to_ts, to_kineto, ts_to_ns
from pipelines.bench.harness import Measurement
from pipelines.bench.ingest_bench import ALL_PATHS, targets_of
from pipelines.cli import main

SOURCE = Path("msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")


@pytest.fixture
def source(real_dir: Path) -> Path:
    return real_dir / SOURCE


def test_ts_round_trip_is_exact() -> None:
    assert ts_to_ns("1736408883688177.930") == 1736408883688177930
    assert ns_to_ts(1736408883688177930 + 401_000_000) == "1736408884089177.930"
    assert ns_to_ts(5) == "0.005"


def test_generated_trace_replicates_real_events(tmp_path: Path, source: Path) -> None:
    real = json.loads((source / "ASCEND_PROFILER_OUTPUT/trace_view.json").read_bytes())
    trace = generate_rank(tmp_path, 5, source)
    assert trace.bytes >= 5_000_000
    assert (trace.rank_dir / "profiler_info_0.json").read_bytes() == (
        source / "profiler_info_0.json"
    ).read_bytes()
    events = json.loads(trace.trace_path.read_bytes())
    assert len(events) == trace.events
    meta = [e for e in events if e.get("ph") == "M"]
    assert len(meta) == sum(1 for e in real if e.get("ph") == "M")  # metadata once
    per_copy = len(real) - len(meta)
    assert trace.events == len(meta) + trace.copies * per_copy
    assert sum(1 for e in events if e.get("ph") == "X") == trace.complete_events
    # every ts keeps the 3-decimal string form; copy k is copy 0 shifted by k * shift_ns
    timed = [e for e in events if "ts" in e]
    assert all(isinstance(e["ts"], str) and len(e["ts"].split(".")[1]) == 3 for e in timed)
    first = [e for e in events if e.get("ph") != "M"][:per_copy]
    last = [e for e in events if e.get("ph") != "M"][-per_copy:]
    shift = (trace.copies - 1) * trace.shift_ns
    assert [ts_to_ns(b["ts"]) - ts_to_ns(a["ts"]) for a, b in zip(first, last, strict=True)] == [
        shift
    ] * per_copy
    # one ProfilerStep per copy, consecutive numbers, each shifted with its copy
    steps = [e for e in events if e.get("name", "").startswith(STEP_PREFIX)]
    numbers = [int(e["name"].removeprefix(STEP_PREFIX)) for e in steps]
    assert numbers == list(range(numbers[0], numbers[0] + trace.copies))
    starts = [ts_to_ns(e["ts"]) for e in steps]
    assert {b - a for a, b in itertools.pairwise(starts)} == {trace.shift_ns}


def test_kineto_slice_keeps_metadata_and_numeric_ts(tmp_path: Path, source: Path) -> None:
    import gzip

    trace = generate_rank(tmp_path, 3, source)
    kineto = to_kineto(trace, tmp_path / "k" / "rank0.json.gz", max_mb=1)
    assert not kineto.complete and 1_000_000 <= kineto.json_bytes < 1_200_000
    doc = json.loads(gzip.decompress(kineto.path.read_bytes()))
    assert doc["distributedInfo"]["rank"] == 0
    events = doc["traceEvents"]
    assert len(events) == kineto.events
    assert any(e.get("ph") == "M" and e["name"] == "process_name" for e in events)
    assert all(isinstance(e["ts"], float) and e["ts"] >= 0 for e in events if "ts" in e)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert kernels and all({"stream", "device", "correlation"} <= e["args"].keys() for e in kernels)


def test_targets_need_both_rates() -> None:
    ours = Measurement("ours", mb=100, events=1, wall_s=4, peak_rss_mb=150)
    duck = Measurement("duckdb", mb=100, events=1, wall_s=2)
    duck_1t = Measurement("duckdb_1t", mb=100, events=1, wall_s=3)  # slower: not the baseline
    hta = Measurement("hta", mb=10, events=1, status="skipped")
    targets = {t.name: t for t in targets_of([ours, duck, duck_1t, hta], file_mb=100)}
    assert targets["ours_vs_duckdb_rate"].value == pytest.approx(0.5)
    assert targets["ours_vs_duckdb_rate"].status == "met"
    assert targets["ours_vs_hta_rate"].status == "n/a"
    assert targets["rss_vs_file"].value == pytest.approx(1.5)
    ours.peak_rss_mb = 250
    assert {t.name: t for t in targets_of([ours, duck], 100)}["rss_vs_file"].status == "not met"


@pytest.mark.slow
def test_bench_ingest_smoke(tmp_path: Path, source: Path, capsys: pytest.CaptureFixture) -> None:
    workdir = tmp_path / "bench"
    argv = ["bench", "ingest", "--size-mb", "2", "--skip-hta", "--json", "--workdir", str(workdir)]
    argv += ["--shape", "generator", "--paths", ",".join(ALL_PATHS)]
    code = main(argv)
    assert code in (0, 1)  # 1 = a target missed: at 2 MB fixed costs dominate; not asserted
    report = json.loads(capsys.readouterr().out)
    trace = report["trace"]
    assert trace["mb"] >= 2 and trace["events"] > trace["complete_events"] > 0
    by_path = {m["path"]: m for m in report["measurements"]}
    assert set(by_path) == {
        "ours_cli",
        "duckdb_mem",
        "ours",
        "ours_streamed",
        "duckdb",
        "duckdb_1t",
        "floor",
        "msgspec",
        "orjson",
        "hta",
    }
    checked = ("ours_cli", "duckdb_mem", "ours", "ours_streamed", "duckdb", "duckdb_1t", "msgspec")
    checked += ("floor",)
    for name in checked:
        m = by_path[name]
        assert m["status"] == "ok", m["note"]
        keys = ("mb", "events", "wall_s", "cpu_s", "mb_per_s", "events_per_s", "peak_rss_mb")
        for key in keys:
            assert m[key] > 0, (name, key)
    assert by_path["ours_cli"]["rows"] == by_path["ours"]["rows"] == trace["complete_events"]
    assert by_path["ours_cli"]["note"] == ""
    # the CLI's wall is its whole process: at least the timed work inside it
    assert by_path["ours_cli"]["wall_s"] >= by_path["ours_cli"]["extra"]["work_wall_s"]
    assert by_path["duckdb_mem"]["rows"] == trace["events"]
    assert by_path["ours"]["note"] == ""  # nothing quarantined, every slice stored
    assert by_path["ours_streamed"]["rows"] == trace["complete_events"]
    assert by_path["ours_streamed"]["note"] == ""
    assert by_path["duckdb"]["rows"] == by_path["msgspec"]["rows"] == trace["events"]
    assert by_path["duckdb_1t"]["rows"] == trace["events"]
    assert by_path["floor"]["rows"] == trace["complete_events"]
    assert by_path["floor"]["note"] == ""
    assert report["floor"]["wall_s"] > 0 and report["floor"]["cores"] >= 1
    assert by_path["hta"]["status"] == "skipped"
    targets = {t["name"]: t for t in report["targets"]}
    assert list(targets) == [
        "cli_vs_duckdb_mem_wall",
        "cli_rss_vs_budget",
        "cli_vs_hta_rate",
        "streamed_vs_in_memory_rate",
        "streamed_rss_vs_budget",
        "ours_vs_duckdb_rate",
        "rss_vs_file",
    ]
    assert {t["status"] for t in report["targets"]} <= {"met", "not met", "n/a"}
    assert targets["cli_vs_hta_rate"]["status"] == "n/a"
    assert targets["cli_rss_vs_budget"]["status"] == "met"  # 2 MB under a 2 GiB budget
    assert report["cpu_ratios"]["ours_vs_duckdb_cpu"] > 0
    assert "ours_vs_hta_cpu" not in report["cpu_ratios"]  # unknown (HTA skipped): left out
    assert report["load"]["load1_start"] >= 0
    assert not (workdir / "run").exists()  # generated files removed without --keep
