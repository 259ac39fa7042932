"""Write a SimResult as torch_npu text exports: one `<worker>_<stamp>_ascend_pt/` folder per rank.

Layout (docs/ascend_formats.md §1-§5, §11; V2025a text export):

    <worker>_<YYYYmmddHHMMSSfff>_ascend_pt/
      profiler_info_<rank>.json       rank_id, torch_npu_version / cann_version "sim"
      profiler_metadata.json          model, schedule, chunk_size, seq_len, tp, pp, vp (strings),
                                      distributed_args, parallel_group_info (one "pp" group)
      ASCEND_PROFILER_OUTPUT/
        trace_view.json               bare JSON list, `ts` strings in µs with 3 decimals
        kernel_details.csv            V2025a Level1 header subset, TAB after the start time
        step_trace_time.csv           V2025a 10-column header, µs

trace_view lanes, identified by process_name (pid = (os_pid << 10) | (sort_index << 5) | device):
- Python (plain OS pid): `ProfilerStep#N` (cpu_op) per step window, one `chunk[...]` range per
  prefill chunk task (user_annotation; decode batches get `decode[step=..,tokens=..]`), and a
  `torch_to_npu` flow from each range to its kernel (flow id = the kernel's `connection_id`);
- Ascend Hardware: one kernel per compute task on Stream 2, one comm-stream task per
  communication op on Stream 4 (SDMA for a send, Notify Wait for a receive);
- HCCL: `hcom_send__<G3>_<idx>_1` / `hcom_receive__<G3>_<idx>_1` on `Group <hash> Communication`
  (the two ends of a transfer share `<G3>_<idx>`), with a Plane 0 sub-task naming src/dst rank;
- Overlap Analysis: Computing / Communication / Communication(Not Overlapped) / Free, per step
  (trace_layout.overlap_lanes), so that step_trace_time.csv is their per-step sum.
"""

from __future__ import annotations

import csv
import itertools
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import polars as pl

from pipelines.sim.kernel_mix import task_kernels
from pipelines.sim.result import SimResult
from pipelines.sim.trace_layout import (
    P2P_GROUP_KIND,
    collective_group_id,
    comm_ops,
    compute_tasks,
    device_of,
    epoch_of,
    os_pid_of,
    overlap_lanes,
    p2p_group,
    rank_ids,
    step_windows,
    tp_ranks_of,
)
from pipelines.sim.trace_shape import LAUNCH_LATENCY_NS
from pipelines.vocabulary.intervals import assign_steps
from pipelines.vocabulary.profiler_names import (
    ASCEND_PT_SUFFIX,
    CONVENTION_KEYS,
    HARDWARE_PROCESS,
    HCCL_PROCESS,
    KERNEL_DETAILS,
    METADATA,
    OUTPUT_DIR,
    OVERLAP_LANES,
    OVERLAP_PROCESS,
    PROFILER_STEP_PREFIX,
    PYTHON_PROCESS,
    STEP_TRACE_TIME,
    TRACE_VIEW,
    profiler_info_name,
)

# process_sort_index values torch_npu uses for these lanes (observed, set B1)
SORT_PYTHON, SORT_CANN, SORT_HARDWARE, SORT_HCCL, SORT_OVERLAP = 0, 1, 13, 15, 23
CANN_PROCESS = "CANN"  # the CANN API lane: launches carry the connection_id of their task
COMPUTE_STREAM, COMM_STREAM = 2, 4
UINT32_NA = 4294967295
EXTRA_META_KEYS = ("seed", "noise", "policy")
KERNEL_HEADER = [
    "Step Id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Name",
    "Type",
    "OP State",
    "Accelerator Core",
    "Start Time(us)",
    "Duration(us)",
    "Wait Time(us)",
    "Block Dim",
    "Mix Block Dim",
    "HF32 Eligible",
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
    "Context ID",
]
STEP_TRACE_HEADER = [
    "Step",
    "Computing",
    "Communication(Not Overlapped)",
    "Overlapped",
    "Communication",
    "Free",
    "Stage",
    "Bubble",
    "Communication(Not Overlapped and Exclude Receive)",
    "Preparing",
]
OP_TYPE = {"chunk": "PrefillChunk", "background": "DecodeBatch"}
TraceDetail = Literal["tasks", "layers"]
TRACE_DETAILS: tuple[str, ...] = ("tasks", "layers")
HOST_OP_NS = 10_000
"""Host time of one launching `cpu_op` in "layers" detail (docs/sim_traces.md §2)."""


def ts_text(ns: int) -> str:
    """Absolute ns -> the profiler's µs string with exactly 3 decimals."""
    return f"{ns // 1000}.{ns % 1000:03d}"


def us(ns: int) -> float:
    """ns -> µs as a float (exact to the ns in its shortest repr)."""
    return ns / 1000


def folder_stamp(epoch_ns: int) -> str:
    """17-digit YYYYmmddHHMMSSfff of an epoch time (UTC)."""
    when = datetime.fromtimestamp(epoch_ns // 1_000_000_000, tz=UTC)
    return when.strftime("%Y%m%d%H%M%S") + f"{(epoch_ns // 1_000_000) % 1000:03d}"


def _hccl_host_name(op: str) -> str:
    """The torch_npu host op of an HCCL op: hcom_allReduce__.. -> HcclAllreduce (real set B1),
    hcom_send -> HcclSend, hcom_receive -> HcclRecv, hcom_alltoAll -> HcclAlltoAll."""
    kind = op.removeprefix("hcom_").split("_")[0].lower()
    names = {"allreduce": "Allreduce", "send": "Send", "receive": "Recv", "alltoall": "AlltoAll"}
    return "Hccl" + names.get(kind, kind.capitalize())


def format_pid(os_pid: int, sort_index: int, device_id: int) -> int:
    """torch_npu / msprof device-lane pid encoding."""
    return (os_pid << 10) | (sort_index << 5) | device_id


def kernel_name(op_type: str) -> str:
    """aclnn-style kernel name `aclnn<Api>_<Impl>_<OpType>`."""
    return f"aclnn{op_type}_{op_type}AiCore_{op_type}"


def write_ascend_pt(
    result: SimResult,
    out_dir: Path | str,
    *,
    epoch_ns: int | None = None,
    worker: str = "sim",
    detail: TraceDetail = "tasks",
) -> list[Path]:
    """Write one `*_ascend_pt` folder per rank of `result` under `out_dir`; return the folders.

    detail "tasks": one kernel and one host chunk range per stage call, at the device's times;
    "layers": the call's per-layer kernels (kernel_mix), launched by host `cpu_op`s that run ahead
    of the device by the launch latency, linked by torch_to_npu flows (docs/sim_traces.md)."""
    if detail not in TRACE_DETAILS:
        raise ValueError(f"detail must be one of {TRACE_DETAILS}, not {detail!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    base = epoch_of(result, epoch_ns)
    stamp = folder_stamp(base)
    schedule = str(result.meta.get("schedule", "sim"))
    folders = []
    for rank in rank_ids(result):
        name = f"{worker}-{schedule}-rank{rank}_{os_pid_of(rank)}_{stamp}{ASCEND_PT_SUFFIX}"
        folder = out / name
        output = folder / OUTPUT_DIR
        output.mkdir(parents=True, exist_ok=True)
        rank_trace = _RankTrace(result, rank, base, detail)
        _write_json(folder / profiler_info_name(rank), _profiler_info(result, rank, base))
        _write_json(folder / METADATA, profiler_metadata(result, rank))
        _write_json(output / TRACE_VIEW, rank_trace.events())
        rank_trace.write_kernel_details(output / KERNEL_DETAILS)
        rank_trace.write_step_trace_time(output / STEP_TRACE_TIME)
        folders.append(folder)
    return folders


def _step_cell(step: int) -> str:
    """Step Id cell: empty for work outside every ProfilerStep window."""
    return str(step) if step else ""


def _write_json(path: Path, data: Any) -> None:
    with path.open("w", encoding="utf-8") as f:
        json.dump(data, f)


def _profiler_info(result: SimResult, rank: int, base: int) -> dict[str, Any]:
    end = int(result.tasks["end_ns"].max())
    return {
        "config": {
            "common_config": {
                "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                "schedule": {
                    "wait": 0,
                    "active": step_windows(result).height,
                    "warmup": 0,
                    "repeat": 1,
                    "skip_first": 0,
                },
                "record_shapes": False,
                "profile_memory": False,
                "with_stack": False,
                "with_flops": False,
                "with_modules": False,
            },
            "experimental_config": {
                "_profiler_level": "Level1",
                "_aic_metrics": "ACL_AICORE_NONE",
                "_l2_cache": False,
                "_msprof_tx": False,
                "_mstx": False,
                "_data_simplification": True,
                "record_op_args": False,
                "_export_type": ["text"],
            },
        },
        "end_info": {"collectionTimeEnd": base + end, "MonotonicTimeEnd": end},
        "torch_npu_version": "sim",
        "cann_version": "sim",
        "rank_id": str(rank),
    }


def profiler_metadata(result: SimResult, rank: int) -> dict[str, Any]:
    """profiler_metadata.json content: run-fact keys (docs/tau_k.md §1) as strings, the layout."""
    meta = result.meta
    data: dict[str, Any] = {
        key: str(meta[key])
        for key in (*CONVENTION_KEYS, *EXTRA_META_KEYS)
        if meta.get(key) is not None
    }
    data["simulator"] = "tracereplay"
    ranks = rank_ids(result)
    group = p2p_group(result, rank)
    tp = tp_ranks_of(result)
    data["distributed_args"] = {
        "tensor_model_parallel_size": int(meta.get("tp", 1) or 1),
        "pipeline_model_parallel_size": len(ranks) // tp,
        "data_parallel_size": 1,
        "rank": rank,
        "world_size": len(ranks),
    }
    data["parallel_group_info"] = {
        group.group_id: {
            "group_name": P2P_GROUP_KIND,
            "group_rank": group.ranks.index(rank),
            "global_ranks": list(group.ranks),
        }
    }
    if tp > 1:
        stage = rank // tp
        for kind in ("tp", "ep"):  # vLLM-Ascend runs expert parallelism over the TP group
            data["parallel_group_info"][collective_group_id(result, kind, rank)] = {
                "group_name": kind,
                "group_rank": rank % tp,
                "global_ranks": list(range(stage * tp, stage * tp + tp)),
            }
    data["ENV_VARIABLES"] = {}
    return data


class _RankTrace:
    """One rank's events, kernel rows and step breakdown, computed once."""

    def __init__(
        self, result: SimResult, rank: int, base: int, detail: TraceDetail = "tasks"
    ) -> None:
        self.result = result
        self.rank = rank
        self.base = base
        self.detail = detail
        self.os_pid = os_pid_of(rank)
        self.device = device_of(rank)
        self.steps = step_windows(result)
        self.compute = compute_tasks(result, rank)
        self.kernels = self._kernels()
        n = self.kernels.height
        self.comm = (
            comm_ops(result)
            .filter(pl.col("rank") == rank)
            .with_columns(pl.int_range(n + 1, n + pl.len() + 1).alias("connection_id"))
        )
        self.overlap = overlap_lanes(self.compute, self.comm, self.steps)
        self.group = p2p_group(result, rank)
        self.bytes_per_token = int(result.meta.get("bytes_per_token", 0) or 0)

    def _kernels(self) -> pl.DataFrame:
        """Device kernels of the rank's compute tasks: task (row of self.compute), name,
        op_type, core, host_name, start_ns, end_ns, connection_id (1..), step."""
        if self.detail == "layers":
            meta = self.result.meta
            kernels = task_kernels(
                self.compute,
                str(meta.get("model", "")),
                meta.get("hardware"),
                meta.get("tp"),
                meta.get("layer_ranges") or [],
            )
        else:
            ops = {True: OP_TYPE["chunk"], False: OP_TYPE["background"]}
            op = pl.col("is_chunk").replace_strict(ops, return_dtype=pl.String)
            names = {key: kernel_name(value) for key, value in ops.items()}
            kernels = self.compute.with_row_index("task").select(
                pl.col("task").cast(pl.Int64),
                pl.lit(-1, pl.Int32).alias("layer"),
                pl.col("is_chunk").replace_strict(names, return_dtype=pl.String).alias("name"),
                op.alias("op_type"),
                pl.lit("AI_CORE").alias("core"),
                pl.lit(None, pl.String).alias("host_name"),
                "start_ns",
                "end_ns",
            )
        kernels = kernels.with_columns(pl.int_range(1, pl.len() + 1).alias("connection_id"))
        return assign_steps(kernels, self.steps).with_columns(pl.col("step").fill_null(0))

    def pid(self, sort_index: int) -> int:
        return format_pid(self.os_pid, sort_index, self.device)

    def t(self, ns: int) -> str:
        return ts_text(self.base + ns)

    def events(self) -> list[dict[str, Any]]:
        return [*self._metadata(), *self._host(), *self._device(), *self._hccl(), *self._lanes()]

    def _metadata(self) -> list[dict[str, Any]]:
        def meta(pid: int, name: str, args: dict[str, Any], tid: int = 0) -> dict[str, Any]:
            return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": args}

        hw, hccl, ov = (self.pid(s) for s in (SORT_HARDWARE, SORT_HCCL, SORT_OVERLAP))
        py = self.os_pid
        label = f"NPU {self.device}"
        out = [
            meta(py, "process_name", {"name": PYTHON_PROCESS}),
            meta(py, "process_labels", {"labels": "CPU"}),
            meta(py, "process_sort_index", {"sort_index": SORT_PYTHON}),
            meta(py, "thread_name", {"name": f"Thread {py}"}, py),
            meta(py, "thread_sort_index", {"sort_index": py}, py),
            meta(hw, "process_name", {"name": HARDWARE_PROCESS}),
            meta(hw, "process_labels", {"labels": label}),
            meta(hw, "process_sort_index", {"sort_index": SORT_HARDWARE}),
            meta(hw, "thread_name", {"name": f"Stream {COMPUTE_STREAM}"}, COMPUTE_STREAM),
            meta(hw, "thread_sort_index", {"sort_index": COMPUTE_STREAM}, COMPUTE_STREAM),
        ]
        if self.comm.height:
            out += [
                meta(hw, "thread_name", {"name": f"Stream {COMM_STREAM}"}, COMM_STREAM),
                meta(hw, "thread_sort_index", {"sort_index": COMM_STREAM}, COMM_STREAM),
                meta(hccl, "process_name", {"name": HCCL_PROCESS}),
                meta(hccl, "process_labels", {"labels": label}),
                meta(hccl, "process_sort_index", {"sort_index": SORT_HCCL}),
                meta(hccl, "thread_name", {"name": f"Group {self.group.hash} Communication"}, 0),
                meta(hccl, "thread_sort_index", {"sort_index": 0}, 0),
                meta(hccl, "thread_name", {"name": "Plane 0"}, 1),
                meta(hccl, "thread_sort_index", {"sort_index": 1}, 1),
                meta(self.pid(SORT_CANN), "process_name", {"name": CANN_PROCESS}),
                meta(self.pid(SORT_CANN), "process_sort_index", {"sort_index": SORT_CANN}),
                meta(self.pid(SORT_CANN), "thread_name", {"name": f"Thread {py}"}, py),
            ]
        out += [
            meta(ov, "process_name", {"name": OVERLAP_PROCESS}),
            meta(ov, "process_labels", {"labels": label}),
            meta(ov, "process_sort_index", {"sort_index": SORT_OVERLAP}),
        ]
        for tid, lane in enumerate(OVERLAP_LANES):
            out.append(meta(ov, "thread_name", {"name": lane}, tid))
        return out

    def _host(self) -> list[dict[str, Any]]:
        py = self.os_pid
        out: list[dict[str, Any]] = []
        for step, start, end in self.steps.iter_rows():
            out.append(
                {
                    "ph": "X",
                    "name": f"{PROFILER_STEP_PREFIX}{step}",
                    "pid": py,
                    "tid": py,
                    "ts": self.t(start),
                    "dur": us(end - start),
                    "cat": "cpu_op",
                    "args": {"Sequence number": -1, "Fwd thread id": 0},
                }
            )
        if self.detail == "layers":
            return out + self._host_launches()
        hw = self.pid(SORT_HARDWARE)
        first = self.kernels.group_by("task").agg(pl.col("connection_id").min())
        cid_of = dict(first.iter_rows())
        for task, row in enumerate(self.compute.iter_rows(named=True)):
            ts = self.t(row["start_ns"])
            cid = cid_of[task]
            out.append(
                {
                    "ph": "X",
                    "name": row["marker"],
                    "pid": py,
                    "tid": py,
                    "ts": ts,
                    "dur": us(row["end_ns"] - row["start_ns"]),
                    "cat": "user_annotation",
                    "args": {"Sequence number": -1, "Fwd thread id": 0},
                }
            )
            flow = {"name": "torch_to_npu", "id": cid, "cat": "async_npu", "bp": "e"}
            out.append({"ph": "s", **flow, "pid": py, "tid": py, "ts": ts})
            out.append({"ph": "f", **flow, "pid": hw, "tid": COMPUTE_STREAM, "ts": ts})
        return out

    def _host_launches(self) -> list[dict[str, Any]]:
        """Per compute task a `chunk[...]` range on the host holding one `cpu_op` per kernel,
        each launched `launch` ns before its kernel starts (or earlier, when the previous launch
        plus HOST_OP_NS comes first), with a torch_to_npu flow to its kernel (docs/sim_traces.md
        §2). The flow is the only link between the two, as in real traces: the trace reader
        binds it to both slices and the chunk segmentation follows it."""
        py, hw = self.os_pid, self.pid(SORT_HARDWARE)
        launch = int(self.result.meta.get("launch_latency_ns", LAUNCH_LATENCY_NS))
        markers = self.compute["marker"].to_list()
        out: list[dict[str, Any]] = []
        for (task,), group in self.kernels.group_by(["task"], maintain_order=True):
            starts = group["start_ns"].to_list()
            ends = group["end_ns"].to_list()
            launches = [starts[0] - launch]
            for start in starts[1:]:
                launches.append(min(launches[-1] + HOST_OP_NS, start - launch))
            durs = [min(HOST_OP_NS, b - a) for a, b in itertools.pairwise(launches)]
            durs.append(min(HOST_OP_NS, ends[-1] - starts[-1]))
            out.append(
                {
                    "ph": "X",
                    "name": markers[task],
                    "pid": py,
                    "tid": py,
                    "ts": self.t(launches[0]),
                    "dur": us(launches[-1] + durs[-1] - launches[0]),
                    "cat": "user_annotation",
                    "args": {"Sequence number": -1, "Fwd thread id": 0},
                }
            )
            rows = zip(
                launches, durs, starts, group["host_name"], group["connection_id"], strict=True
            )
            for at, dur, start, name, cid in rows:
                ts = self.t(at)
                out.append(
                    {
                        "ph": "X",
                        "name": name,
                        "pid": py,
                        "tid": py,
                        "ts": ts,
                        "dur": us(dur),
                        "cat": "cpu_op",
                        "args": {"Sequence number": -1, "Fwd thread id": 0},
                    }
                )
                flow = {"name": "torch_to_npu", "id": cid, "cat": "async_npu", "bp": "e"}
                out.append({"ph": "s", **flow, "pid": py, "tid": py, "ts": ts})
                out.append(
                    {"ph": "f", **flow, "pid": hw, "tid": COMPUTE_STREAM, "ts": self.t(start)}
                )
        return out

    def _device(self) -> list[dict[str, Any]]:
        hw = self.pid(SORT_HARDWARE)
        out: list[dict[str, Any]] = []
        for task_id, row in enumerate(self.kernels.iter_rows(named=True), start=1):
            out.append(
                {
                    "name": row["name"],
                    "pid": hw,
                    "tid": COMPUTE_STREAM,
                    "ts": self.t(row["start_ns"]),
                    "dur": us(row["end_ns"] - row["start_ns"]),
                    "args": {
                        "Model Id": UINT32_NA,
                        "Task Type": row["core"],
                        "Physic Stream Id": COMPUTE_STREAM,
                        "Task Id": task_id,
                        "Batch Id": 0,
                        "Subtask Id": 0,
                        "connection_id": row["connection_id"],
                    },
                    "ph": "X",
                }
            )
        for task_id, row in enumerate(self.comm.iter_rows(named=True), start=1):
            task = "SDMA" if row["kind"] == "send" else "Notify Wait"
            out.append(
                {
                    "name": task,
                    "pid": hw,
                    "tid": COMM_STREAM,
                    "ts": self.t(row["start_ns"]),
                    "dur": us(row["end_ns"] - row["start_ns"]),
                    "args": {
                        "Model Id": UINT32_NA,
                        "Task Type": task,
                        "Physic Stream Id": COMM_STREAM,
                        "Task Id": task_id,
                        "Batch Id": 0,
                        "Subtask Id": 0,
                        "connection_id": row["connection_id"],
                    },
                    "ph": "X",
                }
            )
        return out

    def _hccl(self) -> list[dict[str, Any]]:
        hccl, py = self.pid(SORT_HCCL), self.os_pid
        out: list[dict[str, Any]] = []
        for task_id, row in enumerate(self.comm.iter_rows(named=True), start=1):
            ts, dur = self.t(row["start_ns"]), us(row["end_ns"] - row["start_ns"])
            # the host op that launched it (torch_npu: `HcclAllreduce` cpu_op on the Python
            # thread, a torch_to_npu flow to the HCCL op), at the op's start
            host_ns = min(HOST_OP_NS, row["end_ns"] - row["start_ns"])
            out.append(
                {
                    "ph": "X",
                    "name": _hccl_host_name(row["op"]),
                    "pid": py,
                    "tid": py,
                    "ts": ts,
                    "dur": us(host_ns),
                    "cat": "cpu_op",
                    "args": {"Sequence number": -1, "Fwd thread id": 0},
                }
            )
            flow = {"name": "torch_to_npu", "id": row["connection_id"], "cat": "async_npu"}
            out.append({"ph": "s", **flow, "bp": "e", "pid": py, "tid": py, "ts": ts})
            out.append({"ph": "f", **flow, "bp": "e", "pid": hccl, "tid": 0, "ts": ts})
            # and its CANN launch with the op's connection_id (real exports: `connection_id` in
            # the args of both; it links the op even where two ops of the lane start together
            # and a flow's binding point cannot tell them apart)
            out.append(
                {
                    "ph": "X",
                    "name": "HCCL@" + _hccl_host_name(row["op"]),
                    "pid": self.pid(SORT_CANN),
                    "tid": py,
                    "ts": ts,
                    "dur": us(host_ns),
                    "args": {"Thread Id": py, "connection_id": row["connection_id"]},
                }
            )
            size = self.bytes_per_token * int(row["tokens"])
            send = row["kind"] == "send"
            src, dst = (self.rank, row["peer"]) if send else (row["peer"], self.rank)
            out.append(
                {
                    "name": row["op"],
                    "pid": hccl,
                    "tid": 0,
                    "ts": ts,
                    "dur": dur,
                    "args": {
                        "connection_id": row["connection_id"],
                        "model id": UINT32_NA,
                        "data_type": "BF16",
                        "alg_type": "NA",
                        "count": size // 2,
                    },
                    "ph": "X",
                }
            )
            sub = "Memcpy" if send else "Notify_Wait"
            out.append(
                {
                    "name": sub,
                    "pid": hccl,
                    "tid": 1,
                    "ts": ts,
                    "dur": dur,
                    "args": {
                        "notify_id": str(task_id),
                        "stream id": COMM_STREAM,
                        "task id": task_id,
                        "context id": 0,
                        "task type": sub,
                        "src rank": src,
                        "dst rank": dst,
                        "transport type": "HCCS",
                        "size(Byte)": size if send else 0,
                        "data type": "BF16",
                        "link type": "HCCS",
                        "bandwidth(GB/s)": round(size / (dur * 1e3), 4) if send and dur else 0.0,
                        "model id": UINT32_NA,
                    },
                    "ph": "X",
                }
            )
        return out

    def _lanes(self) -> list[dict[str, Any]]:
        ov = self.pid(SORT_OVERLAP)
        tid = {name: i for i, name in enumerate(OVERLAP_LANES)}
        return [
            {
                "name": name,
                "pid": ov,
                "tid": tid[name],
                "ts": self.t(start),
                "dur": us(end - start),
                "ph": "X",
            }
            for _, name, start, end in self.overlap.slices.iter_rows()
        ]

    def write_kernel_details(self, path: Path) -> None:
        """kernel_details.csv: compute kernels and top-level HCCL ops, in start order."""
        rows: list[tuple[int, list[str]]] = []
        prev_end = None
        for task_id, row in enumerate(self.kernels.iter_rows(named=True), start=1):
            wait = 0 if prev_end is None else max(row["start_ns"] - prev_end, 0)
            prev_end = row["end_ns"]
            rows.append(
                (
                    row["start_ns"],
                    [
                        _step_cell(row["step"]),
                        str(UINT32_NA),
                        str(task_id),
                        str(COMPUTE_STREAM),
                        row["name"],
                        row["op_type"],
                        "dynamic",
                        row["core"],
                        self.t(row["start_ns"]) + "\t",
                        f"{us(row['end_ns'] - row['start_ns']):.3f}",
                        f"{us(wait):.3f}",
                        "24",
                        "0",
                        "NO",
                        *(["N/A"] * 7),
                    ],
                )
            )
        prev_end = None
        for row in self.comm.iter_rows(named=True):
            wait = 0 if prev_end is None else max(row["start_ns"] - prev_end, 0)
            prev_end = row["end_ns"] if prev_end is None else max(prev_end, row["end_ns"])
            op_type = row["op"].split("__")[0] + "_"
            rows.append(
                (
                    row["start_ns"],
                    [
                        _step_cell(row["step"]),
                        str(UINT32_NA),
                        "N/A",
                        "N/A",
                        row["op"],
                        op_type,
                        "N/A",
                        "HCCL",
                        self.t(row["start_ns"]) + "\t",
                        f"{us(row['end_ns'] - row['start_ns']):.3f}",
                        f"{us(wait):.3f}",
                        "0",
                        *(["N/A"] * 9),
                    ],
                )
            )
        rows.sort(key=lambda r: r[0])
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(KERNEL_HEADER)
            writer.writerows(r for _, r in rows)

    def write_step_trace_time(self, path: Path) -> None:
        """step_trace_time.csv: per-step sums of the overlap lanes, µs."""
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(STEP_TRACE_HEADER)
            for s in self.overlap.steps.iter_rows(named=True):
                writer.writerow(
                    [
                        s["step"],
                        us(s["computing_ns"]),
                        us(s["comm_not_overlapped_ns"]),
                        us(s["overlapped_ns"]),
                        us(s["communication_ns"]),
                        us(s["free_ns"]),
                        us(s["stage_ns"]),
                        us(s["bubble_ns"]) if s["bubble_ns"] else 0,
                        us(s["comm_not_overlapped_excl_receive_ns"]),
                        us(s["preparing_ns"]),
                    ]
                )
