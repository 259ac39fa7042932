"""Round six of the hostile-input campaign (issue 36), Kineto: a kernel whose phase is not `X`
and a value nested a million deep, on a copy of HTA's real simple_add trace (98 kernels; read in
place under ../shared/traces/real). On ce6c018 the kernel vanished without a line (exit 0, 97
kernels), and a deep value in one event's args, or outside traceEvents, lost the whole trace
(`read_error: RecursionError`, 0 kernels): /tmp/h6/for_mem.md, docs/ingest_rules.md "round six"."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from tests.hostile.simple_add import simple_add_trace

DEEP = "[" * 1_000_000 + "]" * 1_000_000


def _ingest(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    run = tmp_path / "run"
    run.mkdir()
    (run / "trace.json").write_text(text)
    code = main(["ingest", str(run), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    return code, capsys.readouterr().err


def _kernels(tmp_path: Path) -> int:
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        return con.execute("select count(*) from kernels").fetchone()[0]


@pytest.mark.parametrize("phase", ["B", "E", "Z", "x"])
def test_a_kernel_of_another_phase_is_set_aside_and_named(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], phase: str
) -> None:
    trace = simple_add_trace(real_dir)
    events = trace["traceEvents"]
    index = next(i for i, e in enumerate(events) if e.get("cat") == "kernel")
    events[index]["ph"] = phase
    code, err = _ingest(tmp_path, json.dumps(trace), capsys)
    assert code == 2
    assert f"traceEvents[{index}]: invalid_event" in err
    assert _kernels(tmp_path) == 97


def test_a_value_nested_a_million_deep_costs_its_event(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = simple_add_trace(real_dir)
    events = trace["traceEvents"]
    index = next(i for i, e in enumerate(events) if e.get("cat") == "cpu_op")
    events[index].setdefault("args", {})["deep"] = "@deep@"
    code, err = _ingest(tmp_path, json.dumps(trace).replace('"@deep@"', DEEP), capsys)
    assert code == 2
    assert f"traceEvents[{index}]: not JSON (nested past" in err
    assert "RecursionError" not in err and "Traceback" not in err
    assert _kernels(tmp_path) == 98


@pytest.mark.parametrize("first", [True, False])
def test_a_member_outside_the_events_nested_a_million_deep_costs_itself(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], first: bool
) -> None:
    trace = simple_add_trace(real_dir)
    trace = {"deep": "@deep@", **trace} if first else {**trace, "deep": "@deep@"}
    code, err = _ingest(tmp_path, json.dumps(trace).replace('"@deep@"', DEEP), capsys)
    assert code == 2
    assert 'trace.json: invalid_json: trace.json: "deep" left out, nested past' in err
    assert "RecursionError" not in err
    assert _kernels(tmp_path) == 98
