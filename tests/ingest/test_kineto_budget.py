"""A Kineto trace past the ingest memory budget is refused by name, and a .gz is never inflated
past that size (a small .gz can inflate to gigabytes)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from pipelines import memory_budget
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers.kineto import largest_trace_bytes, read_trace

EVENT = b'{"ph":"X","name":"k","cat":"kernel","pid":0,"tid":7,"ts":1,"dur":2}'


def _trace(events: int) -> bytes:
    return b'{"traceEvents": [' + b",".join([EVENT] * events) + b"]}"


def test_a_gz_that_inflates_past_the_budget_is_refused_after_reading_only_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(memory_budget.ENV_MAX_MEMORY, "220MiB")  # a cap of ~3.6 MB of JSON
    cap = largest_trace_bytes()
    assert 1 << 20 < cap < 8 << 20
    body = _trace(events=2 * cap // len(EVENT))
    bomb = tmp_path / "rank0.pt.trace.json.gz"
    bomb.write_bytes(gzip.compress(body, compresslevel=9))
    assert bomb.stat().st_size < cap // 10
    with pytest.raises(QuarantineError) as err:
        read_trace(bomb)
    assert err.value.reason == "too_large" and "--max-memory" in err.value.detail
    plain = tmp_path / "rank1.pt.trace.json"
    plain.write_bytes(body)
    with pytest.raises(QuarantineError) as err:
        read_trace(plain)
    assert err.value.reason == "too_large"


def test_a_trace_inside_the_budget_is_read(tmp_path: Path) -> None:
    # 1,000 kernels one after another on one stream (an exact copy would be counted once)
    events = [EVENT.replace(b'"ts":1,', f'"ts":{1 + 3 * i},'.encode()) for i in range(1000)]
    path = tmp_path / "rank0.pt.trace.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": [' + b",".join(events) + b"]}"))
    frames = read_trace(path)
    assert frames.tables["kernels"].height == 1000
    slices = frames.tables["slices"]
    assert slices.filter(slices["lane"] == "compute").height == 1000
