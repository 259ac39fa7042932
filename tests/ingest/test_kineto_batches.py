"""The Kineto reader decodes the events in batches (kineto.EVENT_BATCH) to bound its memory: a
real trace, with bad values placed in several batches, reads the same in batches of 997 events
as in one batch, and each set-aside event is named by its position in the whole file."""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import pytest
from polars.testing import assert_frame_equal

from pipelines.ingest.readers import kineto

SAMPLED = "kineto/HolisticTraceAnalysis/tests/data/trace_filter/sampled_rank-0.json.gz"


def _hostile_copy(real_dir: Path, out: Path) -> Path:
    """The real trace with four bad entries in four batches of 997 (a null entry, a null name,
    a float pid, a key given twice) and a bare NaN (not JSON: the file is then read with the
    constants quoted, and that event dropped)."""
    with gzip.open(real_dir / SAMPLED) as stream:
        trace = msgspec.json.decode(stream.read())
    events = trace["traceEvents"]
    assert len(events) > 4000
    events[1000]["name"] = None
    events[2500]["pid"] = 1.5
    entries = [msgspec.json.encode(event) for event in events]
    entries[5] = b"null"
    entries[3001] = entries[3001].replace(b"{", b'{"cat":"kernel",', 1)  # cat given twice
    kernel = next(i for i in range(3500, len(entries)) if b'"cat":"kernel"' in entries[i])
    entries[kernel] = entries[kernel].replace(b'"dur":', b'"dur":NaN,"z":', 1)
    trace["traceEvents"] = []
    head = msgspec.json.encode(trace)[: -len(b"[]}")]
    out.write_bytes(head + b"[" + b",".join(entries) + b"]}")
    return out


def test_batches_read_as_one(
    real_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _hostile_copy(real_dir, tmp_path / "rank-0.json")
    whole = kineto.read_trace(path)
    monkeypatch.setattr(kineto, "EVENT_BATCH", 997)
    batched = kineto.read_trace(path)
    assert sorted(batched.tables) == sorted(whole.tables)
    for name, table in whole.tables.items():
        assert table.height > 0 or name == "comm_ops"
        assert_frame_equal(batched.tables[name], table)
    assert (batched.info, batched.rank, batched.device_id) == (
        whole.info,
        whole.rank,
        whole.device_id,
    )
    assert batched.dropped == whole.dropped
    assert batched.dropped == {"duplicate_key": 1, "invalid_event": 3, "non_finite_duration": 1}
    assert batched.quarantined == whole.quarantined
    detail = batched.quarantined[0].detail
    assert detail.startswith("5 entries set aside")  # with the NaN duration's event
    for position in (5, 1000, 2500):
        assert f"traceEvents[{position}]:" in detail


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda e: e.replace(b'"name":"', b'"name":"a\tb', 1), id="raw-tab"),
        pytest.param(lambda e: e.replace(b'"name":"', b'"name":"\\ud800', 1), id="lone-surrogate"),
        pytest.param(lambda e: e.replace(b'"name":"', b'"name":"\x00', 1), id="raw-nul"),
    ],
)
def test_one_event_that_is_no_json_costs_itself(real_dir: Path, tmp_path: Path, spoil) -> None:
    """A Kineto trace is one JSON object, so msgspec refused the whole file for one event holding
    a raw control character or a lone surrogate escape (RFC 8259 section 7) and every event was
    lost as invalid_json. The file's traceEvents is now split by its structure: that event is
    set aside at its position, named 'not JSON', and the rest reads as the same trace without
    it (computed here with json from the raw file)."""
    with gzip.open(real_dir / SAMPLED) as stream:
        trace = msgspec.json.decode(stream.read())
    entries = [msgspec.json.encode(event) for event in trace["traceEvents"]]
    kernel = next(i for i in range(2000, len(entries)) if b'"cat":"kernel"' in entries[i])
    trace["traceEvents"] = []
    head = msgspec.json.encode(trace)[: -len(b"[]}")]
    spoiled = tmp_path / "spoiled" / "rank-0.json"
    spoiled.parent.mkdir()
    spoiled.write_bytes(
        head
        + b"["
        + b",".join([*entries[:kernel], spoil(entries[kernel]), *entries[kernel + 1 :]])
        + b"]}"
    )
    without = tmp_path / "without" / "rank-0.json"
    without.parent.mkdir()
    without.write_bytes(head + b"[" + b",".join(entries[:kernel] + entries[kernel + 1 :]) + b"]}")
    read = kineto.read_trace(spoiled)
    clean = kineto.read_trace(without)
    assert read.dropped == {"invalid_event": 1}
    assert f"traceEvents[{kernel}]: not JSON" in read.quarantined[0].detail
    assert read.tables["kernels"].height == clean.tables["kernels"].height > 0
    for name, table in clean.tables.items():
        assert_frame_equal(read.tables[name], table)
