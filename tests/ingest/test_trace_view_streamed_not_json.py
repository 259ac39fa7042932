"""A trace_view.json read by the streamed path (past the memory budget) with an entry that is no
JSON (a raw TAB or NUL in a string, a lone surrogate escape): DuckDB refused the whole scan, so
the file was quarantined invalid_json and every event lost. The array is now copied without
such entries (found by json_entries.ArrayStream, a block at a time) and each is named at its
position, as the in-memory read names it; the rest reads as the trace without them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers import json_entries, trace_view
from pipelines.ingest.readers.trace_view import TraceView, read_trace_view, streams

LEVEL1 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
TINY = 1  # one byte: every array-form trace streams
MARK = "__not_json__"


@pytest.fixture(scope="module")
def events(real_dir: Path) -> list:
    path = real_dir / LEVEL1 / "trace_view.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return json.loads(path.read_text())


def _collected(frame: pl.DataFrame | pl.LazyFrame | None) -> pl.DataFrame | None:
    if frame is None:
        return None
    frame = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    return frame.sort(frame.columns, nulls_last=True)


def _assert_same_view(left: TraceView, right: TraceView) -> None:
    for name in ("slices", "derivable", "launch", "steps"):
        one, two = _collected(getattr(left, name)), _collected(getattr(right, name))
        assert (one is None) == (two is None), name
        if one is not None:
            assert one.height > 0 or name == "derivable", name
            assert_frame_equal(one, two)
    assert (left.device_id, left.process_lanes, left.flows) == (
        right.device_id,
        right.process_lanes,
        right.flows,
    )


def _streamed_view(tmp_path: Path, events: list) -> TraceView:
    """The streamed read of `events` written as a clean trace_view.json (the reference)."""
    clean = tmp_path / "clean" / "trace_view.json"
    clean.parent.mkdir()
    clean.write_text(json.dumps(events))
    return read_trace_view(clean, max_memory=TINY)


def _complete_after(events: list, start: int) -> int:
    return next(i for i in range(start, len(events)) if events[i].get("ph") == "X")


@pytest.mark.parametrize(
    "raw", ['"a\tb"', '"a\\ud800b"', '"a\x00b"'], ids=["raw-tab", "lone-surrogate", "raw-nul"]
)
@pytest.mark.parametrize("gzipped", [False, True], ids=["json", "gz"])
def test_one_entry_that_is_no_json_costs_itself_when_streamed(
    events: list, tmp_path: Path, raw: str, gzipped: bool
) -> None:
    events = json.loads(json.dumps(events))
    index = _complete_after(events, 100)
    events[index]["name"] = MARK
    text = json.dumps(events).replace(f'"{MARK}"', raw, 1).encode()
    path = tmp_path / ("trace_view.json.gz" if gzipped else "trace_view.json")
    path.write_bytes(gzip.compress(text) if gzipped else text)
    assert streams(path, TINY)
    view = read_trace_view(path, max_memory=TINY)
    del events[index]
    reference = _streamed_view(tmp_path, events)
    _assert_same_view(view, reference)
    assert view.dropped == {"invalid_event": 1}
    assert view.set_aside_count == 1
    assert view.set_aside[0].startswith(f"traceEvents[{index}]: not JSON (")


def test_several_bad_entries_across_batches_and_a_non_object(
    events: list, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three entries that are no JSON in three check batches of 700 entries and blocks of 64 KiB,
    and one entry that is JSON but no object (DuckDB's checked read, after the copy): the four
    are set aside, named by their positions in the file (the first three by index)."""
    monkeypatch.setattr(trace_view, "_CHECK_BATCH", 700)
    monkeypatch.setattr(json_entries, "BLOCK", 1 << 16)
    events = json.loads(json.dumps(events))
    events.insert(2500, 7)  # no object: invalid_event, named by the checked read
    picked = [_complete_after(events, start) for start in (150, 1600, 3100)]
    for index in picked:
        events[index]["name"] = MARK
    text = json.dumps(events).replace(f'"{MARK}"', '"a\tb"')
    path = tmp_path / "trace_view.json"
    path.write_text(text)
    view = read_trace_view(path, max_memory=TINY)
    for index in reversed(picked):
        del events[index]
    reference = _streamed_view(tmp_path, events)
    _assert_same_view(view, reference)
    assert reference.dropped == {"invalid_event": 1}
    assert view.dropped == {"invalid_event": 4}
    assert "not an object" in view.set_aside[3]
    assert [line.split(":")[0] for line in view.set_aside[:3]] == [
        f"traceEvents[{i}]" for i in picked
    ]


def test_a_broken_structure_stays_one_unreadable_file(events: list, tmp_path: Path) -> None:
    """A raw TAB in one entry and a quote that never closes: no entry can be told apart, the file
    is invalid_json as before."""
    text = json.dumps(events[:500]).replace('"name": "', '"name": "a\tb', 1)
    path = tmp_path / "trace_view.json"
    path.write_text(text[:-200] + '"unclosed]')
    with pytest.raises(QuarantineError) as err:
        read_trace_view(path, max_memory=TINY)
    assert err.value.reason == "invalid_json"
