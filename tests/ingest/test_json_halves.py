"""A large trace_view.json parsed in two halves on two threads (readers/json_halves.py,
trace_view._scan_in_halves): the same TraceView as the whole read on the real exports, and the
whole read whenever the cut is no entry boundary or a half does not parse."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.readers import json_halves
from pipelines.ingest.readers import trace_view as tv

REAL_TRACES = (
    "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
    "msinsight/test/data/pytorch/text/level1/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
    "msinsight/test/data/pytorch/text/level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
    "msprof-analyze/test/ut/advisor/advisor_backend/timeline_advice/trace_view.json",
)


@pytest.fixture
def halves_used(monkeypatch) -> list[object]:
    """Every file size takes the two-halves path; the list collects what each half returned."""
    monkeypatch.setattr(tv, "HALVES_MIN_BYTES", 0)
    monkeypatch.setattr(tv.machine, "usable_cores", lambda: 2)
    seen: list[object] = []
    half = tv._half

    def spy(*args):
        result = half(*args)
        seen.append(result)
        return result

    monkeypatch.setattr(tv, "_half", spy)
    return seen


def _whole(path: Path, monkeypatch) -> tv.TraceView:
    with monkeypatch.context() as m:
        m.setattr(tv, "_scan_in_halves", lambda path, limit: None)
        return tv.read_trace_view(path)


def _same(a: tv.TraceView, b: tv.TraceView) -> None:
    assert a.slices.equals(b.slices)
    assert a.steps.equals(b.steps)
    assert a.dropped == b.dropped
    assert a.set_aside == b.set_aside
    assert (a.launch is None) == (b.launch is None)
    if a.launch is not None:
        assert a.launch.equals(b.launch)


@pytest.mark.parametrize("relative", REAL_TRACES)
def test_real_exports_read_in_halves_as_whole(
    real_dir: Path, relative: str, halves_used, monkeypatch
) -> None:
    path = real_dir / relative
    whole = _whole(path, monkeypatch)
    halves = tv.read_trace_view(path)
    assert len(halves_used) == 2 and all(hasattr(half, "height") for half in halves_used)
    assert min(half.height for half in halves_used) > 0  # type: ignore[attr-defined]
    _same(halves, whole)
    assert halves.slices.height == whole.slices.height > 0


def test_cut_point_is_the_boundary_after_the_middle(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b'[{"a": 1}, {"b": 2},\n  {"c": 3}, {"d": 4}]')
    size = path.stat().st_size
    end, start = json_halves.cut_point(path)
    text = path.read_bytes()
    assert end >= size // 2 - 1 and text[end - 1 : end] == b"}" and text[start : start + 1] == b"{"
    first, second = tmp_path / "1.json", tmp_path / "2.json"
    json_halves.write_part(path, first, 0, end, tail=b"]")
    json_halves.write_part(path, second, start, size, head=b"[")
    assert json.loads(first.read_bytes()) + json.loads(second.read_bytes()) == json.loads(text)


@pytest.mark.parametrize("prefix", [b"\xef\xbb\xbf[", b'{"traceEvents": ['])
def test_no_cut_without_a_leading_bracket(tmp_path: Path, prefix: bytes) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(prefix + b'{"a": 1}, {"b": 2}]' + (b"}" if prefix.startswith(b"{") else b""))
    assert json_halves.cut_point(path) is None


def _event(i: int) -> dict[str, object]:
    return {"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": f"{1000 + i}.000", "dur": 1.0}


def _write(path: Path, events: list[dict[str, object]]) -> Path:
    meta = {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}}
    path.write_text(json.dumps([meta, *events]))
    return path


def _middle_event(n: int, middle: dict[str, object]) -> list[dict[str, object]]:
    return [_event(i) if i != n // 2 else {**_event(i), **middle} for i in range(n)]


# A `}, {` inside a string and inside a list of objects in args, placed across the file's middle
# so that the first candidate boundary past it falls there: the first half then ends inside the
# string / with brackets open, DuckDB refuses it, and the whole read is used.
CUT_INSIDE = {
    "string": {"name": "x" * 3000 + "}, {" + "y" * 3000},
    "nested": {"args": {"list": [{"k": i} for i in range(400)]}},
}


@pytest.mark.parametrize("case", sorted(CUT_INSIDE))
def test_a_cut_inside_an_entry_reads_the_file_whole(
    tmp_path: Path, case: str, halves_used, monkeypatch
) -> None:
    path = _write(tmp_path / "trace_view.json", _middle_event(41, CUT_INSIDE[case]))
    end, _ = json_halves.cut_point(path)
    text = path.read_bytes()
    assert text[:end].count(b"[") - text[:end].count(b"]") > 1 or text[:end].count(b'"') % 2 == 1
    halves = tv.read_trace_view(path)
    assert len(halves_used) == 2
    assert not all(hasattr(half, "height") for half in halves_used)  # a half refused
    whole = _whole(path, monkeypatch)
    _same(halves, whole)
    assert halves.slices.height == 41


def test_a_bad_entry_in_a_half_is_named_by_the_whole_read(
    tmp_path: Path, halves_used, monkeypatch
) -> None:
    events = [_event(i) for i in range(40)]
    path = tmp_path / "trace_view.json"
    text = json.dumps([{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Python"}}])
    body = ", ".join(json.dumps(e) for e in events)
    # the 31st event gives "dur" twice: in the second half
    twice = json.dumps(_event(99))[:-1] + ', "dur": 2.0}'
    cut = body.index(json.dumps(events[30]))
    path.write_text(text[:-1] + ", " + body[:cut] + twice + ", " + body[cut:] + "]")
    halves = tv.read_trace_view(path)
    assert len(halves_used) == 2 and not all(hasattr(h, "height") for h in halves_used)
    whole = _whole(path, monkeypatch)
    _same(halves, whole)
    assert halves.dropped.get("duplicate_key") == 1 and halves.slices.height == 40


def test_a_json_number_ts_goes_to_the_whole_read(tmp_path: Path, halves_used, monkeypatch) -> None:
    events = [_event(i) for i in range(40)]
    events[35]["ts"] = "TS"
    path = _write(tmp_path / "trace_view.json", events)
    # a JSON number written with its digits: msgspec keeps them, DuckDB would not (a double)
    path.write_text(path.read_text().replace('"TS"', "1736408883717128.900"))
    halves = tv.read_trace_view(path)
    _same(halves, _whole(path, monkeypatch))
    op35 = halves.slices.filter(halves.slices["name"] == "op35")
    assert op35["start_ns"].item() == 1736408883717128900


def test_streamed_halves_hold_the_in_memory_rows_in_file_order(
    real_dir: Path, halves_used, monkeypatch
) -> None:
    """The bounded-memory read in halves: two Parquet files of the spill, read in order, hold
    the in-memory read's slices row for row; launch attribution's rows are those of the whole
    streamed read."""
    path = real_dir / REAL_TRACES[0]
    memory = _whole(path, monkeypatch)
    monkeypatch.setattr(tv, "IN_MEMORY_PEAK_FACTOR", 1e12)  # every array file streams
    streamed = tv.read_trace_view(path)
    assert [type(half).__name__ for half in halves_used] == ["PosixPath", "PosixPath"]
    assert streamed.slices.collect().equals(memory.slices)
    assert streamed.steps.equals(memory.steps)
    whole = _whole(path, monkeypatch)
    rows = [v.launch.collect().sort(pl.all()) for v in (streamed, whole)]
    assert rows[0].height > 0 and rows[0].equals(rows[1])
    assert streamed.derivable.sort(pl.all()).equals(whole.derivable.sort(pl.all()))


def test_the_whole_streamed_read_keeps_file_order(real_dir: Path, monkeypatch) -> None:
    """Without halves (a budget whose DuckDB share is under 256 MiB, a cut that failed), the
    streamed read's slices are the in-memory read's row for row: DuckDB's copy to the spill
    kept no insertion order before, so the rows flows.bind numbers came in another order."""
    path = real_dir / REAL_TRACES[0]
    memory = _whole(path, monkeypatch)
    monkeypatch.setattr(tv, "IN_MEMORY_PEAK_FACTOR", 1e12)
    streamed = _whole(path, monkeypatch)
    assert isinstance(streamed.slices, pl.LazyFrame)
    assert streamed.slices.collect().equals(memory.slices)
