"""A Kineto `ts` written as epoch microseconds with decimals keeps its digits. A float64 holds
~1.7e15 µs to 0.25 µs only, and the reader decoded `ts` as a float: on HTA's
`ns_resolution_trace` (V100, 2024-04, `displayTimeUnit: "ns"`, `1712195495519689.123`-style
ts) 45,220 of its 45,419 stored events started up to 125 ns from where the file puts them
(ProfilerStep#101 at ...502094.500 µs for the file's ...502094.565), and `runs` gave its
makespan as 495,002,442 ns for the file's 495,002,377."""

from __future__ import annotations

import collections
import gzip
import json
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.ingest.readers.kineto import read_trace

NS_RESOLUTION = "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
REAL_KINETO = Path(__file__).resolve().parents[1] / "data" / "real_kineto"


def _ns(value: Decimal | int) -> int:
    return int((Decimal(value) * 1000).to_integral_value())


def test_epoch_microseconds_with_decimals_are_read_exactly(tmp_path: Path) -> None:
    step = '{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,'
    kernel = '{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,'
    text = (
        '{"traceEvents": ['
        f'{step} "ts": 1712195495502094.565, "dur": 35115.869}},'
        f'{kernel} "ts": 1712195495519689.123, "dur": 63.813,'
        ' "args": {"device": 0, "stream": 7, "correlation": 5}},'
        f'{kernel} "ts": 1712195495519700.001, "dur": 2.5,'
        ' "args": {"device": 0, "stream": 7, "correlation": 6}}'
        "]}"
    )
    path = tmp_path / "rank0.json"
    path.write_text(text)
    frames = read_trace(path)
    slices = frames.tables["slices"].filter(frames.tables["slices"]["category"] != "derived")
    starts = dict(zip(slices["name"], slices["start_ns"], strict=True))
    assert starts["ProfilerStep#1"] == 1_712_195_495_502_094_565
    kernels = frames.tables["kernels"].sort("start_ns")["start_ns"].to_list()
    assert kernels == [1_712_195_495_519_689_123, 1_712_195_495_519_700_001]


def test_every_event_of_hta_ns_resolution_trace_where_the_file_puts_it() -> None:
    path = REAL_KINETO / NS_RESOLUTION
    if not path.is_file():
        pytest.skip(f"{path}: fetched copies are not committed (tests/data/real_kineto/SOURCES.md)")
    events = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]
    exact = collections.Counter(
        (e["name"], _ns(e["ts"]), _ns(e["dur"]))
        for e in events
        if e.get("ph") == "X" and e.get("cat") != "Trace"
    )
    slices = read_trace(path).tables["slices"]
    read = slices.filter(slices["category"] != "derived").select("name", "start_ns", "dur_ns")
    ours = collections.Counter(read.iter_rows())
    assert sum(exact.values()) == 45_419
    assert ours == exact, f"{sum((exact - ours).values())} events elsewhere than the file says"
