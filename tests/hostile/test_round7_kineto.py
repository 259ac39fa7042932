"""Round seven of the hostile-input campaign (issue 36), Kineto: the trace's own members, on a
copy of HTA's real simple_add trace (98 kernels; read in place under ../shared/traces/real).
On 373e096 a `deviceProperties` that is no list of objects or a `distributedInfo` that is no
object lost the whole trace (`invalid_json`, 0 kernels), a `distributedInfo.rank` of 2^40 failed
the whole run (`read_error`, a Polars overflow), a second top-level `traceEvents` array was
dropped without a word (half the events stored, exit 0), a negative `baseTimeNanoseconds` placed
every event before 1970 without a word, and one written as digits in a string or as a whole
float lost the trace."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from tests.hostile.simple_add import simple_add_trace

BASE = 1_767_225_600_000_000_000


def _ingest(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    run = tmp_path / "run"
    run.mkdir()
    (run / "trace_rank0.pt.trace.json").write_text(text)
    code = main(["ingest", str(run), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    return code, capsys.readouterr().err


def _kernels(tmp_path: Path) -> tuple[int, int | None]:
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        return con.execute("select count(*), min(start_ns) from kernels").fetchone()


@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("deviceProperties", "abc"),
        ("deviceProperties", [1, 2]),
        ("deviceProperties", {}),
        ("distributedInfo", "junk"),
        ("distributedInfo", [0]),
    ],
)
def test_a_member_of_the_wrong_type_costs_itself(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], member: str, value: object
) -> None:
    trace = simple_add_trace(real_dir)
    trace[member] = value
    code, err = _ingest(tmp_path, json.dumps(trace), capsys)
    assert code == 2
    assert f'"{member}" left out' in err and "every event read" in err
    assert _kernels(tmp_path)[0] == 98


def test_a_rank_past_integer_takes_the_file_name(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = simple_add_trace(real_dir)
    trace["distributedInfo"] = {"rank": 2**40}
    code, err = _ingest(tmp_path, json.dumps(trace), capsys)
    assert code == 0 and "read_error" not in err
    assert _kernels(tmp_path)[0] == 98
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        assert con.execute("select rank from ranks").fetchall() == [(0,)]


def test_traceevents_given_twice_refuses_the_file(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = simple_add_trace(real_dir)
    events = trace.pop("traceEvents")
    half = len(events) // 2
    text = (
        '{"traceEvents": '
        + json.dumps(events[:half])
        + ", "
        + json.dumps(trace)[1:-1]
        + ', "traceEvents": '
        + json.dumps(events[half:])
        + "}"
    )
    code, err = _ingest(tmp_path, text, capsys)
    assert code == 2
    assert "traceEvents given 2 times at the top level" in err
    assert _kernels(tmp_path)[0] == 0


@pytest.mark.parametrize("base", [str(BASE), float(BASE)])
def test_a_base_time_in_digits_or_a_whole_float_is_read(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], base: object
) -> None:
    trace = simple_add_trace(real_dir)
    device = ("kernel", "gpu_memcpy", "gpu_memset")
    first = min(e["ts"] for e in trace["traceEvents"] if e.get("cat") in device)
    trace["baseTimeNanoseconds"] = base
    code, _ = _ingest(tmp_path, json.dumps(trace), capsys)
    assert code == 0
    assert _kernels(tmp_path) == (98, BASE + first * 1000)


@pytest.mark.parametrize("base", [-BASE, 2**64, "abc", True, 1.5])
def test_a_base_time_that_is_no_time_refuses_the_file(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], base: object
) -> None:
    trace = simple_add_trace(real_dir)
    trace["baseTimeNanoseconds"] = base
    code, err = _ingest(tmp_path, json.dumps(trace), capsys)
    assert code == 2 and "is no time base" in err
    assert _kernels(tmp_path)[0] == 0


def _with_steps(trace: dict, *windows: tuple[int, float, float]) -> dict:
    host = next(e for e in trace["traceEvents"] if e.get("cat") == "cpu_op")
    first = min(e["ts"] for e in trace["traceEvents"] if isinstance(e.get("ts"), int | float))
    for step, start, dur in windows:
        trace["traceEvents"].append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": host["pid"],
                "tid": host["tid"],
                "ts": first + start,
                "dur": dur,
                "args": {},
            }
        )
    return trace


@pytest.mark.parametrize(
    ("windows", "named"),
    [
        (((1, 0, 4e7), (2, 2e7, 4e7)), "ProfilerStep#1 and ProfilerStep#2 overlap by"),
        (((1, 0, 2e7), (1, 3e7, 1e3)), "ProfilerStep#1 is given 2 times (the first kept)"),
    ],
)
def test_steps_that_overlap_or_repeat_are_named(
    real_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    windows: tuple,
    named: str,
) -> None:
    """On 373e096 both were read without a word (exit 0): a step ended where the next began."""
    trace = _with_steps(simple_add_trace(real_dir), *windows)
    code, err = _ingest(tmp_path, json.dumps(trace), capsys)
    assert code == 2 and f"repaired_rows: 1 entry repaired, the rest loaded as is: {named}" in err
    assert _kernels(tmp_path)[0] == 98
