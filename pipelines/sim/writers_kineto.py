"""Write a SimResult as PyTorch Kineto traces: one `<worker>_<pid>.<stamp>.pt.trace.json` per rank.

Shape of torch >= 2.4 traces (docs/ascend_formats.md §15, pytorch/kineto #890/#910/#928):
`{"schemaVersion": 1, "deviceProperties": [...], "distributedInfo": {"backend", "rank",
"world_size"}, "baseTimeNanoseconds": T0, "displayTimeUnit": "ns", "traceEvents": [...]}` where
`ts`/`dur` are µs floats with ns precision relative to `baseTimeNanoseconds`.

Events of one rank (CPU pid = OS pid, GPU pid = device index, GPU tid = stream):
- `ProfilerStep#N` user_annotation per step window;
- per compute task a `chunk[...]` (or `decode[...]`) user_annotation range, a `cudaLaunchKernel`
  cuda_runtime slice at its start, and the GPU `kernel` on stream 7; the three share
  `External id`, launch and kernel share `correlation`, and an `ac2g` flow (id = correlation)
  goes from launch to kernel;
- per send/recv task an NCCL `kernel` (`ncclDevKernel_SendRecv`) on stream 20 with
  `Collective name` send/recv, its peer and process group, launched the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.sim.result import SimResult
from pipelines.sim.trace_layout import (
    P2P_GROUP_KIND,
    comm_ops,
    compute_tasks,
    device_of,
    epoch_of,
    os_pid_of,
    rank_ids,
    step_windows,
)
from pipelines.vocabulary.profiler_names import CONVENTION_KEYS, PROFILER_STEP_PREFIX

COMPUTE_STREAM, NCCL_STREAM = 7, 20
LAUNCH_NS = 4_000  # duration of the cudaLaunchKernel slice (capped by the range it sits in)
KERNEL_NAMES = {
    True: "sim_prefill_chunk_kernel",
    False: "sim_decode_batch_kernel",
}
NCCL_KERNEL = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"


_COLLECTIVE_NAMES = {
    "send": ("send", P2P_GROUP_KIND),
    "allreduce": ("allreduce", "tp"),
    "alltoall": ("all_to_all", "ep"),
}


def _us(ns: int) -> float:
    return ns / 1000


class _Events:
    """Accumulates one rank's events with running External id / correlation counters."""

    def __init__(self, rank: int, base_offset: int) -> None:
        self.rank = rank
        self.cpu = os_pid_of(rank)
        self.gpu = device_of(rank)
        self.offset = base_offset  # simulated t=0 relative to baseTimeNanoseconds
        self.events: list[dict[str, Any]] = []
        self.next_id = 1

    def ts(self, ns: int) -> float:
        return _us(self.offset + ns)

    def x(self, cat: str, name: str, pid: int, tid: int, start: int, end: int, args: dict) -> None:
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": pid,
                "tid": tid,
                "ts": self.ts(start),
                "dur": _us(end - start),
                "args": args,
            }
        )

    def launched(
        self, marker: str | None, kernel: str, stream: int, start: int, end: int, extra: dict
    ) -> None:
        """Host range (optional), launch, kernel and their ac2g flow."""
        ext = self.next_id
        self.next_id += 1
        if marker is not None:
            self.x("user_annotation", marker, self.cpu, self.cpu, start, end, {"External id": ext})
        launch_end = start + min(LAUNCH_NS, max(end - start, 0))
        self.x(
            "cuda_runtime",
            "cudaLaunchKernel",
            self.cpu,
            self.cpu,
            start,
            launch_end,
            {"External id": ext, "cbid": 211, "correlation": ext},
        )
        args = {
            "External id": ext,
            "device": self.gpu,
            "stream": stream,
            "correlation": ext,
            "grid": [132, 1, 1],
            "block": [256, 1, 1],
        } | extra
        self.x("kernel", kernel, self.gpu, stream, start, end, args)
        flow = {"id": ext, "cat": "ac2g", "name": "ac2g"}
        self.events.append(
            {"ph": "s", **flow, "pid": self.cpu, "tid": self.cpu, "ts": self.ts(start)}
        )
        self.events.append(
            {"ph": "f", **flow, "bp": "e", "pid": self.gpu, "tid": stream, "ts": self.ts(start)}
        )


def kineto_trace(result: SimResult, rank: int, base_time_ns: int, epoch_ns: int) -> dict:
    """The Kineto JSON object of one rank."""
    ranks = rank_ids(result)
    ev = _Events(rank, epoch_ns - base_time_ns)
    meta = [
        ("process_name", ev.cpu, 0, {"name": "python"}),
        ("process_labels", ev.cpu, 0, {"labels": "CPU"}),
        ("thread_name", ev.cpu, ev.cpu, {"name": f"thread {ev.cpu} (python)"}),
        ("process_name", ev.gpu, 0, {"name": "python"}),
        ("process_labels", ev.gpu, 0, {"labels": f"GPU {ev.gpu}"}),
        ("process_sort_index", ev.gpu, 0, {"sort_index": 5000000 + ev.gpu}),
        ("thread_name", ev.gpu, COMPUTE_STREAM, {"name": f"stream {COMPUTE_STREAM}"}),
    ]
    comm = comm_ops(result).filter(pl.col("rank") == rank)
    if comm.height:
        meta.append(("thread_name", ev.gpu, NCCL_STREAM, {"name": f"stream {NCCL_STREAM}"}))
    for name, pid, tid, args in meta:
        ev.events.append({"name": name, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args})
    for step, start, end in step_windows(result).iter_rows():
        ev.x("user_annotation", f"{PROFILER_STEP_PREFIX}{step}", ev.cpu, ev.cpu, start, end, {})
    for row in compute_tasks(result, rank).iter_rows(named=True):
        kernel = KERNEL_NAMES[bool(row["is_chunk"])]
        ev.launched(row["marker"], kernel, COMPUTE_STREAM, row["start_ns"], row["end_ns"], {})
    for row in comm.iter_rows(named=True):
        collective, group = _COLLECTIVE_NAMES.get(row["kind"], ("recv", P2P_GROUP_KIND))
        extra = {
            "Collective name": collective,
            "peer": row["peer"],
            "Process Group Name": group,
            "Process Group Ranks": list(ranks),
            "In msg nelems": int(row["tokens"]),
            "dtype": "BFloat16",
        }
        ev.launched(None, NCCL_KERNEL, NCCL_STREAM, row["start_ns"], row["end_ns"], extra)
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": ev.gpu, "name": str(result.meta.get("hardware", "sim"))}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": len(ranks)},
        "baseTimeNanoseconds": base_time_ns,
        "displayTimeUnit": "ns",
        "traceEvents": ev.events,
        "traceName": f"rank{rank}",
        # what torch.profiler's prof.add_metadata(key, value) writes: top-level string keys
        **{k: str(result.meta[k]) for k in CONVENTION_KEYS if result.meta.get(k) is not None},
    }


def write_kineto_trace(
    result: SimResult, out_dir: Path | str, *, epoch_ns: int | None = None, worker: str = "sim"
) -> list[Path]:
    """Write one Kineto trace file per rank of `result` under `out_dir`; return the files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    epoch = epoch_of(result, epoch_ns)
    base_time = epoch  # simulated t=0 is the base: ts start at 0 µs
    paths = []
    for rank in rank_ids(result):
        path = out / f"{worker}-rank{rank}_{os_pid_of(rank)}.{epoch // 1_000_000}.pt.trace.json"
        trace = kineto_trace(result, rank, base_time, epoch)
        trace["traceName"] = path.name
        with path.open("w", encoding="utf-8") as f:
            json.dump(trace, f)
        paths.append(path)
    return paths
