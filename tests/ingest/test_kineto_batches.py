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
