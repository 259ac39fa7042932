"""Round five of the hostile-input campaign (issue 36): the JSON trace cases it still found wrong,
each made from a copy of real events (the msinsight Level1 rank 0 trace_view.json, HTA's
simple_add Kineto trace: read in place under ../shared/traces/real, copied before changing).

* a trace_view complete event whose `pid` is text (`"npu"`) was kept on the `other` lane, one whose
  `args` is a number was kept as it came, and an entry without `ph` vanished without a line: each
  is now set aside as invalid_event and named, on the array, object and streamed paths alike;
* a key given twice inside one event (`"ts": "1", "ts": "2"`) was resolved silently to the last
  value wherever msgspec decodes (object-form trace_view.json, every Kineto trace): such an entry
  is set aside as duplicate_key on every path, and named `traceEvents[i]: duplicate key 'ts'`;
* a Kineto event whose `args` is a string was kept as it came: set aside as invalid_event.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.ingest.load import ingest_paths
from pipelines.ingest.readers.json_keys import duplicate_keys
from pipelines.ingest.readers.kineto import read_trace
from pipelines.ingest.readers.trace_view import read_trace_view, streams
from pipelines.store import FileStore

LEVEL1 = Path("msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")
KINETO = Path(
    "kineto/HolisticTraceAnalysis/tests/data/critical_path/simple_add/"
    "benchmark_result_493459_1694039959_trace.json.gz"
)
MARK = '"__round5__": 1'
TINY = 1  # one byte of budget: an array-form trace_view.json streams


def _hardware_task(events: list) -> int:
    """A complete event of the Ascend Hardware process (a device task), from the middle."""
    hardware = {
        e["pid"]
        for e in events
        if e.get("ph") == "M" and (e.get("args") or {}).get("name") == "Ascend Hardware"
    }
    found = [i for i, e in enumerate(events) if e.get("ph") == "X" and e.get("pid") in hardware]
    return found[len(found) // 2]


def _kernel(events: list) -> int:
    found = [i for i, e in enumerate(events) if isinstance(e, dict) and e.get("cat") == "kernel"]
    return found[len(found) // 2]


def _write(events: list, path: Path, form: str, raw: str | None = None) -> Path:
    text = json.dumps(events if form == "array" else {"traceEvents": events})
    if raw is not None:  # a text JSON allows but Python's dict cannot hold (a key twice)
        text = text.replace(MARK, raw, 1)
    path.write_text(text)
    return path


def _set(key: str, value) -> Callable[[dict], None]:
    return lambda event: event.__setitem__(key, value)


TRACE_VIEW: dict[str, tuple[Callable[[dict], None], str | None, str, str]] = {
    # case: (change, raw text for the mark, dropped code, what the line says)
    "pid a string": (_set("pid", "npu"), None, "invalid_event", "pid npu is not an integer"),
    "args a number": (_set("args", 7), None, "invalid_event", "args 7 is not an object"),
    "tid a string": (_set("tid", "x"), None, "invalid_event", "tid x is not an integer"),
    "ph missing": (lambda e: e.pop("ph"), None, "invalid_event", "no ph"),
    "ts given twice": (
        _set("__round5__", 1),
        '"ts": "1", "ts": "2"',
        "duplicate_key",
        "duplicate key 'ts'",
    ),
}


@pytest.fixture(scope="module")
def level1(real_dir: Path) -> tuple[list, int]:
    path = real_dir / LEVEL1 / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    events = json.loads(path.read_text())
    return events, read_trace_view(path).slices.height


@pytest.mark.parametrize("form", ["array", "object", "streamed"])
@pytest.mark.parametrize("case", sorted(TRACE_VIEW))
def test_trace_view_bad_event_costs_itself_and_is_named(level1, tmp_path, case, form) -> None:
    events, clean = level1
    change, raw, code, why = TRACE_VIEW[case]
    events = json.loads(json.dumps(events))
    index = _hardware_task(events)
    change(events[index])
    written = "object" if form == "object" else "array"
    path = _write(events, tmp_path / "trace_view.json", written, raw)
    assert streams(path, TINY) == (form != "object")  # the object form is never streamed
    budget = TINY if form == "streamed" else None
    view = read_trace_view(path, max_memory=budget)
    height = view.slices.height if form != "streamed" else view.slices.collect().height
    assert height == clean - 1
    assert view.dropped == {code: 1}
    (line,) = view.set_aside
    assert why in line
    if code == "duplicate_key" and form != "streamed":
        assert line.startswith(f"traceEvents[{index}]")
    else:  # the event's own fields name it (a streamed read has no entry index)
        assert f"'{events[index]['name']}'" in line and line.endswith(f": {code}")


def test_trace_view_key_twice_is_quarantined_at_ingest(real_dir: Path, level1, tmp_path) -> None:
    """The object form through `ingest`: the run loads without the entry, dropped_rows counts it
    as duplicate_key and the file's quarantine row names its position."""
    events, _ = level1
    folder = tmp_path / "run" / LEVEL1.name
    shutil.copytree(real_dir / LEVEL1, folder)
    trace = folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    clean_report = ingest_paths([folder.parent], FileStore(tmp_path / "clean.duckdb"))
    events = json.loads(json.dumps(events))
    index = _hardware_task(events)
    events[index]["__round5__"] = 1
    trace.chmod(0o644)
    _write(events, trace, "object", '"ts": "1", "ts": "2"')
    report = ingest_paths([folder.parent], FileStore(tmp_path / "bad.duckdb"), progress=False)
    (run,), (clean,) = report.runs, clean_report.runs
    assert run.rows["slices"] == clean.rows["slices"] - 1
    assert run.rows["kernels"] == clean.rows["kernels"]
    assert run.dropped_rows == {"duplicate_key": 1}
    (item,) = report.quarantined
    assert item.path.endswith("trace_view.json")
    assert f"traceEvents[{index}]: duplicate key 'ts'" in item.detail


@pytest.fixture(scope="module")
def simple_add(real_dir: Path) -> dict:
    path = real_dir / KINETO
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return json.loads(gzip.decompress(path.read_bytes()))


KINETO_CASES: dict[str, tuple[Callable[[dict], None], str | None, str, str]] = {
    "args a string": (_set("args", "x"), None, "invalid_event", "invalid_event"),
    "name given twice": (
        _set("__round5__", 1),
        '"name": "a", "name": "b"',
        "duplicate_key",
        "duplicate key 'name'",
    ),
}


@pytest.mark.parametrize("case", sorted(KINETO_CASES))
def test_kineto_bad_event_costs_itself_and_is_named(simple_add, tmp_path, case) -> None:
    change, raw, code, why = KINETO_CASES[case]
    clean_path = tmp_path / "clean.pt.trace.json"
    clean_path.write_text(json.dumps(simple_add))
    clean = read_trace(clean_path)
    trace = json.loads(json.dumps(simple_add))
    index = _kernel(trace["traceEvents"])
    change(trace["traceEvents"][index])
    path = tmp_path / "bad.pt.trace.json"
    text = json.dumps(trace)
    path.write_text(text.replace(MARK, raw, 1) if raw else text)
    bad = read_trace(path)
    assert bad.tables["kernels"].height == clean.tables["kernels"].height - 1
    assert bad.dropped == {code: 1}
    (item,) = bad.quarantined
    assert f"traceEvents[{index}]: {why}" in item.detail


def test_duplicate_keys_are_found_at_the_top_level_only() -> None:
    entries = [
        b'{"ph": "X", "ts": "1"}',
        b'{"ph": "X", "ts": "1", "ts": "2", "ph": "X"}',
        b'{"ph": "X", "args": {"a": 1, "a": 2}}',  # inside args: not the event's own field
        b'{"ph": "X", "dur": NaN, "dur": 1}',  # Python's json writes NaN; still one object
        b'{"ph":"X","name":"a","name":"a"}',  # the same value twice is still a key twice
    ]
    assert duplicate_keys(entries) == {1: ["ph", "ts"], 3: ["dur"], 4: ["name"]}
    assert duplicate_keys([]) == {}


@pytest.mark.parametrize("form", ["array", "streamed"])
def test_trace_view_entry_that_is_no_object_costs_itself(level1, tmp_path, form) -> None:
    """A string where an event should be: the streamed read lost the whole file to DuckDB's
    error (`invalid_json`); both reads now set the entry aside."""
    events, clean = level1
    events = [*events]
    index = _hardware_task(events)
    events[index] = "kernel"
    path = _write(events, tmp_path / "trace_view.json", "array")
    view = read_trace_view(path, max_memory=TINY if form == "streamed" else None)
    height = view.slices.height if form == "array" else view.slices.collect().height
    assert height == clean - 1
    assert view.dropped == {"invalid_event": 1}
    (line,) = view.set_aside
    assert "not an object" in line


def test_trace_view_key_twice_past_the_first_batch(level1, tmp_path) -> None:
    """The in-memory read streams DuckDB's result in batches of 100,000 rows: a record refused
    after the first batch raised pyarrow's OSError, which no handler took (a traceback where
    the entry should cost itself). 12 copies of the real events: 121,344 entries."""
    events, clean = level1
    copies = [json.loads(json.dumps(events)) for _ in range(12)]
    index = len(events) * 11 + _hardware_task(events)
    flat = [e for copy in copies for e in copy]
    assert index > 100_000
    flat[index]["__round5__"] = 1
    path = _write(flat, tmp_path / "trace_view.json", "array", '"ts": "1", "ts": "2"')
    view = read_trace_view(path)
    assert view.dropped == {"duplicate_key": 1}
    assert view.set_aside == [f"traceEvents[{index}]: duplicate key 'ts'"]
    assert view.slices.height == clean * 12 - 1
