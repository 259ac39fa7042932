"""A large torch_npu rank folder made of real events, for ingest benchmarks.

`generate_rank` replicates the events of one real `trace_view.json` until the output reaches a
size: metadata events (ph M) are written once, every other event once per copy with its `ts`
shifted by copy x shift (exact integer nanoseconds, written back as the same 3-decimal string),
ProfilerStep#N renumbered so every copy has its own steps, and flow ids / connection ids shifted
so links stay within a copy. The output is written as it is produced (one event per line), so
memory stays at the size of the source trace whatever the target size.

`to_kineto` converts such a file into a Kineto-style `{"traceEvents": [...]}` .json.gz with
numeric, relative `ts` and the categories/args Holistic Trace Analysis needs (device lanes become
`kernel` with `stream`/`device`/`correlation`), optionally only its first N bytes of events.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from pipelines.paths import REAL_TRACES_DIR

SOURCE_RANK_DIR = REAL_TRACES_DIR / "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
TRACE_RELPATH = Path("ASCEND_PROFILER_OUTPUT") / "trace_view.json"
STEP_PREFIX = "ProfilerStep#"
SHIFTED_ARGS = ("connection_id", "correlation_id")
MB = 1_000_000
_SLOT = re.compile(r'"@@slot(\d+)@@"')
_GAP_NS = 1_000_000  # 1 ms of idle time between two copies


@dataclass(frozen=True)
class GeneratedTrace:
    """The generated rank folder and what is in its trace_view.json."""

    rank_dir: Path
    trace_path: Path
    bytes: int
    events: int
    complete_events: int  # ph X events (what becomes slices)
    copies: int
    source_events: int
    origin_ns: int  # earliest ts of the output
    shift_ns: int  # time shift between two consecutive copies

    @property
    def mb(self) -> float:
        return self.bytes / MB


@dataclass(frozen=True)
class KinetoTrace:
    """A Kineto-form conversion (possibly of a leading slice) of a generated trace."""

    path: Path
    json_bytes: int  # uncompressed size
    events: int
    complete: bool  # False when only a leading slice was converted

    @property
    def mb(self) -> float:
        return self.json_bytes / MB


def ts_to_ns(text: str) -> int:
    """Exact integer nanoseconds of a microsecond string such as '1736408883688177.930'."""
    return int((Decimal(text) * 1000).to_integral_value())


def ns_to_ts(ns: int) -> str:
    """The 3-decimal microsecond string of a non-negative nanosecond count."""
    return f"{ns // 1000}.{ns % 1000:03d}"


class _Template:
    """One event as literal JSON text with slots for the values that change per copy."""

    __slots__ = ("parts", "slots")

    def __init__(self, event: dict[str, Any]) -> None:
        slots: list[tuple[str, int]] = []
        patched = dict(event)

        def slot(kind: str, base: int) -> str:
            slots.append((kind, base))
            return f"@@slot{len(slots) - 1}@@"

        if isinstance(event.get("ts"), str):
            patched["ts"] = slot("ts", ts_to_ns(event["ts"]))
        if isinstance(event.get("id"), int):
            patched["id"] = slot("id", event["id"])
        name = event.get("name")
        if isinstance(name, str) and name.startswith(STEP_PREFIX):
            number = name.removeprefix(STEP_PREFIX)
            if number.isdigit():
                patched["name"] = slot("step", int(number))
        args = event.get("args")
        if isinstance(args, dict) and any(isinstance(args.get(k), int) for k in SHIFTED_ARGS):
            patched["args"] = {
                k: slot("id", v) if k in SHIFTED_ARGS and isinstance(v, int) else v
                for k, v in args.items()
            }
        text = json.dumps(patched, ensure_ascii=False)
        pieces = _SLOT.split(text)
        self.parts = pieces[0::2]
        order = [int(i) for i in pieces[1::2]]
        self.slots = [slots[i] for i in order]

    def render(self, shift_ns: int, step_offset: int, id_shift: int | None = None) -> str:
        """The event of one copy: times shifted by shift_ns, steps by step_offset, flow and
        connection ids by id_shift (default shift_ns; 0 repeats the source's ids in every copy)."""
        id_shift = shift_ns if id_shift is None else id_shift
        if not self.slots:
            return self.parts[0]
        out = [self.parts[0]]
        for (kind, base), literal in zip(self.slots, self.parts[1:], strict=True):
            if kind == "ts":
                out.append(f'"{ns_to_ts(base + shift_ns)}"')
            elif kind == "id":
                out.append(str(base + id_shift))
            else:
                out.append(f'"{STEP_PREFIX}{base + step_offset}"')
            out.append(literal)
        return "".join(out)


def _span(events: list[dict[str, Any]]) -> tuple[int, int]:
    """(earliest start, latest end) in ns over the timed events."""
    first, last = None, None
    for event in events:
        ts = event.get("ts")
        if not isinstance(ts, str):
            continue
        start = ts_to_ns(ts)
        dur = event.get("dur")
        end = start + (round(float(dur) * 1000) if isinstance(dur, int | float) else 0)
        first = start if first is None else min(first, start)
        last = end if last is None else max(last, end)
    if first is None or last is None:
        raise ValueError("the source trace has no timed events")
    return first, last


def _step_span(events: list[dict[str, Any]]) -> int:
    numbers = [
        int(e["name"].removeprefix(STEP_PREFIX))
        for e in events
        if isinstance(e.get("name"), str)
        and e["name"].startswith(STEP_PREFIX)
        and e["name"].removeprefix(STEP_PREFIX).isdigit()
    ]
    return max(numbers) - min(numbers) + 1 if numbers else 0


def generate_rank(
    workdir: Path,
    size_mb: float,
    source_rank_dir: Path = SOURCE_RANK_DIR,
    rank_name: str = "rank0_ascend_pt",
    repeat_ids: bool = False,
    markers: bool = False,
) -> GeneratedTrace:
    """Write `workdir/run/<rank_name>/` (profiler_info copied, trace_view.json of >= size_mb MB).
    repeat_ids: every copy keeps the source's flow and connection ids (one id then binds an
    event of every copy: the hostile shape of issue 36), instead of ids shifted per copy.
    markers: every copy also gets one chunk marker `chunk[req=r0,k=<copy>,vs=0,...]` on the
    host thread and over the window of its ProfilerStep (docs/tau_k.md's marker form), so the
    run is segmented into one chunk per copy at ingest."""
    source_trace = source_rank_dir / TRACE_RELPATH
    infos = sorted(source_rank_dir.glob("profiler_info*.json"))
    if not source_trace.is_file() or not infos:
        hint = (
            ": the real traces are looked for at $TRACEREPLAY_REAL_TRACES, else beside the"
            " repository (../shared/traces/real); set it to the folder that holds msinsight/"
            if source_rank_dir == SOURCE_RANK_DIR
            else ""
        )
        raise FileNotFoundError(
            f"{source_rank_dir} lacks {TRACE_RELPATH} or profiler_info*.json{hint}"
        )
    events = json.loads(source_trace.read_bytes())
    if not isinstance(events, list):
        raise ValueError(f"{source_trace} is not a bare event array")
    first, last = _span(events)
    shift_ns = math.ceil((last - first + _GAP_NS) / 1_000_000) * 1_000_000
    step_span = _step_span(events)
    metadata = [json.dumps(e, ensure_ascii=False) for e in events if e.get("ph") == "M"]
    templates = [_Template(e) for e in events if e.get("ph") != "M"]
    complete_per_copy = sum(1 for e in events if e.get("ph") == "X")
    step = _step_event(events) if markers else None

    rank_dir = workdir / "run" / rank_name
    out_path = rank_dir / TRACE_RELPATH
    out_path.parent.mkdir(parents=True, exist_ok=True)
    for info in infos:
        shutil.copyfile(info, rank_dir / info.name)
    target = int(size_mb * MB)
    written, count, copies = 0, 0, 0
    with out_path.open("wb") as handle:
        head = ("[\n" + ",\n".join(metadata)).encode()
        handle.write(head)
        written += len(head)
        count += len(metadata)
        separator = ",\n" if metadata else "\n"
        while written < target or copies == 0:
            shift = copies * shift_ns
            offset = copies * step_span
            ids = 0 if repeat_ids else shift
            text = separator + ",\n".join(t.render(shift, offset, ids) for t in templates)
            if step is not None:
                text += ",\n" + _marker(step, copies, shift)
            separator = ",\n"
            data = text.encode()
            handle.write(data)
            written += len(data)
            count += len(templates) + (step is not None)
            copies += 1
        handle.write(b"\n]\n")
        written += 3
    return GeneratedTrace(
        rank_dir=rank_dir,
        trace_path=out_path,
        bytes=out_path.stat().st_size,
        events=count,
        complete_events=(complete_per_copy + (step is not None)) * copies,
        copies=copies,
        source_events=len(events),
        origin_ns=first,
        shift_ns=shift_ns,
    )


def _step_event(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The source's first timed ProfilerStep event (the window a copy's chunk marker covers)."""
    for event in events:
        name = event.get("name")
        if event.get("ph") == "X" and isinstance(name, str) and name.startswith(STEP_PREFIX):
            return event
    raise ValueError("the source trace has no ProfilerStep event to place chunk markers in")


def _marker(step: dict[str, Any], copy: int, shift_ns: int) -> str:
    """Copy `copy`'s chunk marker: the ProfilerStep's thread and window, shifted with the copy."""
    marker = {
        "ph": "X",
        "name": f"chunk[req=r0,k={copy},vs=0,tokens=512,prefix={copy * 512}]",
        "pid": step["pid"],
        "tid": step["tid"],
        "ts": ns_to_ts(ts_to_ns(step["ts"]) + shift_ns),
        "dur": step["dur"],
        "cat": step.get("cat", "python_function"),
        "args": {},
    }
    return json.dumps(marker, ensure_ascii=False)


def _event_lines(path: Path) -> Iterator[bytes]:
    """The events of a generated trace (one per line), without the array brackets and commas."""
    with path.open("rb") as handle:
        for line in handle:
            line = line.rstrip(b"\r\n")
            if line.endswith(b","):
                line = line[:-1]
            if line and line not in (b"[", b"]"):
                yield line


_DEVICE_PROCESSES = {"ascend hardware": 0, "hccl": 1000}  # stream offset per device process
_HOST_PROCESSES = {"python", "python3", "cann", "mindspore"}


def _kineto_event(event: dict[str, Any], process: str, origin_ns: int, rank: int) -> dict[str, Any]:
    ts = event.get("ts")
    if isinstance(ts, str):
        event["ts"] = (ts_to_ns(ts) - origin_ns) / 1000
    if event.get("ph") != "X":
        return event
    args = event.get("args")
    if not isinstance(args, dict):
        args = {}
        event["args"] = args
    lane = process.strip().lower()
    if lane in _DEVICE_PROCESSES:
        event["cat"] = "kernel"
        tid = event.get("tid")
        stream = tid if isinstance(tid, int) else 0
        args["stream"] = stream + _DEVICE_PROCESSES[lane]
        args["device"] = rank
        args["correlation"] = args.get("connection_id", -1)
    elif lane == "cann":
        event["cat"] = "cuda_runtime"
        args["correlation"] = args.get("connection_id", -1)
    elif not event.get("cat"):
        event["cat"] = "cpu_op" if lane in _HOST_PROCESSES else "user_annotation"
    return event


def to_kineto(
    trace: GeneratedTrace, out_path: Path, rank: int = 0, max_mb: float | None = None
) -> KinetoTrace:
    """Convert a generated trace_view.json to Kineto form (.json.gz), streaming line by line.
    With `max_mb`, stop after that many MB of (uncompressed) events; metadata is always kept."""
    decoder = msgspec.json.Decoder()
    encoder = msgspec.json.Encoder()
    limit = None if max_mb is None else int(max_mb * MB)
    processes: dict[Any, str] = {}
    header = (
        json.dumps(
            {
                "schemaVersion": 1,
                "distributedInfo": {"rank": rank, "world_size": 1, "backend": "hccl"},
            }
        )[:-1]
        + ', "traceEvents": [\n'
    )
    footer = b"\n]}\n"
    written, events, complete = len(header), 0, True
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out_path, "wb", compresslevel=1) as out:
        out.write(header.encode())
        for line in _event_lines(trace.trace_path):
            event = decoder.decode(line)
            if event.get("ph") == "M" and event.get("name") == "process_name":
                processes[event.get("pid")] = str((event.get("args") or {}).get("name", ""))
            elif limit is not None and written >= limit:
                complete = False
                break
            process = processes.get(event.get("pid"), "")
            data = encoder.encode(_kineto_event(event, process, trace.origin_ns, rank))
            if events:
                data = b",\n" + data
            out.write(data)
            written += len(data)
            events += 1
        out.write(footer)
        written += len(footer)
    return KinetoTrace(path=out_path, json_bytes=written, events=events, complete=complete)
