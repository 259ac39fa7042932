"""trace_view.json reader on the real exports (sets B0, B1, G) and synthetic variants."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers.trace_view import lane_of_process, read_trace_view

B1 = "msinsight/test/data/pytorch/text/level1"
B0 = "msinsight/test/data/pytorch/text/level0"
G_TRACE = "msprof-analyze/test/ut/advisor/advisor_backend/timeline_advice/trace_view.json"


@pytest.fixture(scope="module")
def b1_rank0(real_dir: Path):
    return read_trace_view(real_dir / B1 / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json")


def test_lanes_and_exact_timestamps(b1_rank0) -> None:
    lanes = dict(b1_rank0.slices.group_by("lane").len().iter_rows())
    assert lanes == {"host": 2460 + 707, "compute": 535, "comm": 300, "overlap": 382}
    step = b1_rank0.steps.row(0, named=True)
    # "ts": "1736408883686740.710", "dur": 155985.8 -> exact ns
    assert step == {
        "step": 50,
        "start_ns": 1736408883686740710,
        "end_ns": 1736408883686740710 + 155985800,
    }
    allreduce = b1_rank0.slices.filter(pl.col("name") == "hcom_allReduce__586_0_1").row(
        0, named=True
    )
    assert allreduce["start_ns"] == 1736408883732241564
    assert allreduce["dur_ns"] == 79089520  # 79089.52021875 us
    assert allreduce["thread"] == "Group 0 Communication"
    assert allreduce["step"] == 50
    assert json.loads(allreduce["args"])["alg_type"] == "MESH-RING"
    assert b1_rank0.device_id == 0  # pid 3170820512 = 3096504 << 10 | 13 << 5 | 0


def test_rank1_device_from_pid_and_level0_unnamed_pid(real_dir: Path) -> None:
    rank1 = read_trace_view(
        real_dir / B1 / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"
    )
    assert rank1.device_id == 1
    level0 = read_trace_view(
        real_dir / B0 / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"
    )
    # the CANN pid has no process_name in Level0; its events are flows only, so no "other" X rows
    assert "CANN" not in level0.process_lanes
    assert level0.lane("comm").height == 4


def test_old_encoding_single_device(real_dir: Path) -> None:
    trace = read_trace_view(real_dir / G_TRACE)
    assert trace.device_id is None  # pid 800: not (os pid << 10 | ...), no "NPU <id>" label
    assert set(trace.slices["lane"].unique()) == {"host", "compute", "overlap"}
    assert trace.steps["step"].to_list() == [1]


def _write(path: Path, events) -> Path:
    path.write_text(json.dumps(events))
    return path


def test_object_form_numeric_ts_and_unnamed_pid(tmp_path: Path) -> None:
    events = {
        "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "Python"}},
            {"ph": "M", "name": "process_labels", "pid": 9, "tid": 0, "args": {"labels": "NPU 3"}},
            {
                "ph": "M",
                "name": "process_name",
                "pid": 9,
                "tid": 0,
                "args": {"name": "Ascend Hardware"},
            },
            {"ph": "X", "name": "ProfilerStep#4", "pid": 7, "tid": 7, "ts": 100.5, "dur": 50},
            {"ph": "X", "name": "k", "pid": 9, "tid": 2, "ts": "120.250", "dur": 1.0004},
            {"ph": "X", "name": "late", "pid": 9, "tid": 2, "ts": "151.000", "dur": 1},
            {"ph": "X", "name": "orphan", "pid": 11, "tid": 1, "ts": "130", "dur": 2},
            {"ph": "C", "name": "HBM", "pid": 9, "tid": 0, "ts": "130", "args": {"r": 1}},
        ]
    }
    trace = read_trace_view(_write(tmp_path / "trace_view.json", events))
    rows = {r["name"]: r for r in trace.slices.iter_rows(named=True)}
    assert rows["k"]["start_ns"] == 120250 and rows["k"]["dur_ns"] == 1000
    assert rows["k"]["step"] == 4 and rows["late"]["step"] is None
    assert rows["orphan"]["lane"] == "other"
    assert trace.device_id == 3
    assert "HBM" not in rows  # counters are not slices


def test_lane_names() -> None:
    assert lane_of_process("MindSpore") == "host"
    assert lane_of_process("Communication") == "comm"
    assert lane_of_process("HCCL") == "comm"
    assert lane_of_process("QoS") == "other"
    assert lane_of_process(None) == "other"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty_file"),
        (b"[]", "empty_trace"),
        (b'[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "1.0", "dur": 1}]', "no_lanes"),
        (b'[{"ph": "X", "name": "a", "pid": 1', "truncated_json"),
        (b"\x00\x01\x02binary", "not_json"),
        (b"hello", "not_json"),
    ],
)
def test_unusable_traces(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "trace_view.json"
    path.write_bytes(content)
    with pytest.raises(QuarantineError) as err:
        read_trace_view(path)
    assert err.value.reason == reason


def test_event_larger_than_the_first_object_limit_is_read_again(
    tmp_path: Path, monkeypatch
) -> None:
    from pipelines.ingest.readers import trace_view

    monkeypatch.setattr(trace_view, "_OBJECT_LIMITS", (256, 1 << 20))
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}},
        {
            "ph": "X",
            "name": "big",
            "pid": 1,
            "tid": 1,
            "ts": "1.000",
            "dur": 1,
            "args": {"blob": "x" * 2000},
        },
    ]
    trace = read_trace_view(_write(tmp_path / "trace_view.json", events))
    assert trace.slices["name"].to_list() == ["big"]
