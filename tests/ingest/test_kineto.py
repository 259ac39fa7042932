"""The Kineto reader on both traces of set K, on small synthetic traces for the rules the real
files do not exercise, and on malformed inputs."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.frames import conform
from pipelines.ingest.readers.kineto import read_trace

KINETO = "kineto/HolisticTraceAnalysis/tests/data"
SAMPLED = f"{KINETO}/trace_filter/sampled_rank-0.json.gz"
SIMPLE_ADD = f"{KINETO}/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz"


@pytest.fixture(scope="module")
def sampled(real_dir: Path):
    return read_trace(real_dir / SAMPLED)


@pytest.fixture(scope="module")
def sampled_events(real_dir: Path) -> list[dict]:
    with gzip.open(real_dir / SAMPLED) as stream:
        return json.load(stream)["traceEvents"]


def _union_length(intervals: list[tuple[int, int]]) -> int:
    """Plain reference implementation for the test."""
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


@pytest.mark.real
def test_sampled_rank_identity_steps_and_kernels(sampled, sampled_events) -> None:
    assert sampled.rank == 0 and sampled.device_id == 0
    assert sampled.info["distributed_args"] == {"world_size": 128}
    kernels = sampled.tables["kernels"]
    device = [e for e in sampled_events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert kernels.height == len(device) == 1204
    nccl = [e for e in device if e["name"].startswith("ncclKernel_")]
    assert kernels.filter(pl.col("is_comm")).height == len(nccl) == 10
    assert set(kernels.get_column("step").drop_nulls()) == {551, 552}
    # integer µs timestamps convert exactly
    first = min(device, key=lambda e: e["ts"])
    assert kernels.get_column("start_ns").min() == first["ts"] * 1000
    conform("kernels", kernels)


@pytest.mark.real
def test_sampled_rank_comm_ops_take_the_collective_from_the_host_annotation(sampled) -> None:
    ops = sampled.tables["comm_ops"]
    assert ops.height == 10
    # every NCCL kernel here is a SendRecv kernel, but the launching host ranges say which
    # collective it implements: none of them is point-to-point
    assert Counter(ops.get_column("op_type")) == {
        "all_to_all": 4,
        "all_reduce": 4,
        "all_gather_base": 2,
    }
    assert not ops.get_column("is_p2p").any()
    assert ops.get_column("op").str.starts_with("ncclKernel_SendRecv_").all()
    conform("comm_ops", ops)


@pytest.mark.real
def test_sampled_rank_derived_breakdown(sampled, sampled_events) -> None:
    steps = {
        int(e["name"].split("#")[1]): (e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000)
        for e in sampled_events
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    }
    breakdown = sampled.tables["step_breakdown"]
    assert breakdown.get_column("step").to_list() == sorted(steps) == [551, 552]
    assert set(breakdown.get_column("origin")) == {"derived"}
    # device work belongs to the step whose host window holds its launch: the earliest host
    # event sharing its correlation or External id (the runtime call, the ATen op)
    launches: dict[tuple[str, int], int] = {}
    for e in sampled_events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver", "cpu_op"):
            for key in ("correlation", "External id"):
                if key in e.get("args", {}):
                    at = (key, e["args"][key])
                    launches[at] = min(launches.get(at, e["ts"] * 1000), e["ts"] * 1000)
    for row in breakdown.iter_rows(named=True):
        start, end = steps[row["step"]]
        compute, comm = [], []
        for e in sampled_events:
            if e.get("cat") != "kernel":  # memcpy and memset are their own columns
                continue
            s = e["ts"] * 1000
            links = [launches.get((k, e["args"].get(k))) for k in ("correlation", "External id")]
            anchor = min((t for t in links if t is not None), default=s)
            if start <= anchor < end:
                interval = (s, s + round(e["dur"] * 1000))
                (comm if e["name"].startswith("nccl") else compute).append(interval)
        assert row["computing_ns"] == _union_length(compute)
        assert row["communication_ns"] == _union_length(comm)
        both = _union_length(compute + comm)
        assert row["overlapped_ns"] == row["computing_ns"] + row["communication_ns"] - both
        assert (
            row["computing_ns"] + row["comm_not_overlapped_ns"] + row["free_ns"] == row["stage_ns"]
        )
        assert row["preparing_ns"] == min(s for s, _ in compute + comm) - start
        assert row["bubble_ns"] is None  # the Ascend hcom_receive bubble has no Kineto twin


@pytest.mark.real
def test_sampled_rank_slices(sampled) -> None:
    slices = conform("slices", sampled.tables["slices"])
    assert set(slices.get_column("lane")) == {"compute", "comm", "host", "overlap"}
    assert slices.filter(pl.col("name") == "ProfilerStep#551").height == 1
    kernel_args = slices.filter(pl.col("lane") == "compute").get_column("args")
    assert kernel_args.str.contains('"correlation"').all()  # flow / correlation ids kept
    overlap = slices.filter(pl.col("lane") == "overlap")
    assert set(overlap.get_column("thread")) == {
        "Computing",
        "Communication",
        "Communication(Not Overlapped)",
        "Free",
    }


@pytest.mark.real
def test_single_rank_trace_without_steps(real_dir: Path) -> None:
    frames = read_trace(real_dir / SIMPLE_ADD)
    assert frames.rank == 0
    assert frames.info["hardware"] == "NVIDIA A100-PG509-200"
    assert frames.tables["kernels"].height == 98
    assert frames.tables["comm_ops"].height == 0
    breakdown = frames.tables["step_breakdown"]
    assert breakdown.height == 1 and breakdown.get_column("step").item() is None
    assert breakdown.get_column("communication_ns").item() == 0
    assert "other" in set(frames.tables["slices"].get_column("lane"))  # cuda_sync


# --- synthetic traces: rules the real files do not exercise ------------------------------------


def _write(path: Path, payload: object) -> Path:
    path.write_text(json.dumps(payload))
    return path


def _kernel(name: str, ts: float, dur: float, **args: object) -> dict:
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "pid": 0,
        "tid": 7,
        "ts": ts,
        "dur": dur,
        "args": {"device": 3, "stream": 7, "correlation": 1, **args},
    }


def test_base_time_nccl_args_and_p2p_fallback(tmp_path: Path) -> None:
    base = 1_700_000_000_123_456_789
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#4",
            "pid": 9,
            "tid": 9,
            "ts": 0.0,
            "dur": 100.0,
        },
        _kernel("gemm", 10.5, 20.25),
        _kernel(
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
            25.001,
            10.0,
            **{
                "Collective name": "allreduce",
                "In msg nelems": 1024,
                "dtype": "BFloat16",
                "Process Group Name": "3",
                "Process Group Description": "tp",
            },
        ),
        _kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)", 50.0, 5.0),
    ]
    path = _write(
        tmp_path / "rank5.json",
        {"baseTimeNanoseconds": base, "distributedInfo": {"rank": "5"}, "traceEvents": events},
    )
    frames = read_trace(path)
    assert frames.rank == 5 and frames.device_id == 3
    kernels = frames.tables["kernels"].sort("start_ns")
    assert kernels.get_column("start_ns").to_list() == [base + 10_500, base + 25_001, base + 50_000]
    assert kernels.get_column("dur_ns").to_list() == [20_250, 10_000, 5_000]
    assert kernels.get_column("wait_ns").to_list() == [0, 0, 14_999]  # gap on stream 7
    ops = frames.tables["comm_ops"].sort("start_ns")
    first, second = ops.rows(named=True)
    assert first["op_type"] == "allreduce" and not first["is_p2p"]
    assert first["bytes"] == 2048 and first["group_name"] == "3" and first["group_kind"] == "tp"
    assert first["op"] == "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
    # no args, no host annotation: the kernel name decides
    assert second["op_type"] == "SendRecv" and second["is_p2p"]
    row = frames.tables["step_breakdown"].row(0, named=True)
    assert row["step"] == 4
    assert row["computing_ns"] == 20_250 and row["communication_ns"] == 15_000
    assert row["overlapped_ns"] == 30_750 - 25_001
    assert row["p2p_bubble_ns"] == 5_000
    assert row["preparing_ns"] == 10_500


def test_bare_event_array_is_accepted(tmp_path: Path) -> None:
    path = _write(tmp_path / "trace_rank2.json", [_kernel("gemm", 1, 2)])
    frames = read_trace(path)
    assert frames.rank == 2  # from the file name
    assert frames.tables["kernels"].height == 1


# --- malformed inputs --------------------------------------------------------------------------


def _reason(path: Path) -> str:
    with pytest.raises(QuarantineError) as err:
        read_trace(path)
    return err.value.reason


def test_gz_that_is_not_gzip(tmp_path: Path) -> None:
    path = _write(tmp_path / "trace.json.gz", {"traceEvents": [_kernel("gemm", 1, 2)]})
    assert _reason(path) == "not_gzip"


@pytest.mark.real
def test_truncated_gzip_and_truncated_json(tmp_path: Path, real_dir: Path) -> None:
    raw = (real_dir / SAMPLED).read_bytes()
    cut_gz = tmp_path / "cut.json.gz"
    cut_gz.write_bytes(raw[: len(raw) // 2])
    assert _reason(cut_gz) == "not_gzip"
    text = gzip.decompress(raw)
    cut_json = tmp_path / "cut.json"
    cut_json.write_bytes(text[: len(text) // 2])
    assert _reason(cut_json) == "truncated_json"


def test_json_without_trace_events(tmp_path: Path) -> None:
    assert _reason(_write(tmp_path / "a.json", {"schemaVersion": 1})) == "no_trace_events"
    assert _reason(_write(tmp_path / "b.json", {"traceEvents": []})) == "no_trace_events"


def test_empty_and_invalid_json(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    assert _reason(empty) == "empty_file"
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [1, 2 3]}')
    assert _reason(bad) == "invalid_json"
    # a ts that is text is one unparsable event (issue 36), not an invalid file: with nothing
    # else in the trace no device event is left
    wrong = _write(tmp_path / "wrong.json", {"traceEvents": [{"ph": "X", "ts": "soon"}]})
    assert _reason(wrong) == "no_device_events"
