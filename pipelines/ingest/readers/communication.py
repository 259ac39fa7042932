"""communication.json and communication_matrix.json (per rank, Level1+, multi-card) -> op rows.

communication.json: `{"step<N>" | "step": {"p2p" | "collective": {"<op>@<group hash>": OpInfo}}}`
with `Total Op Info` summaries (skipped). Durations are milliseconds, `Start Timestamp(us)` is a
float of microseconds (sub-microsecond digits lost: join with trace/kernel rows by op name, never
by time). Bytes = transit size over the links the op used: RDMA plus SDMA, where SDMA is the
profiler's own sum of the intra-node links (HCCS, PCIE, SIO); 1 MB here is 10^6 bytes
(8.388608 MB = 8 MiB is observed for an 8 MiB P2P tensor).

communication_matrix.json: same outer keys, inner `"src-dst"` links. V2023 keys are op names;
V2025 keys are aggregates (`batchsendrecv-top1@hash`) whose links name their op in `Op Name`.
Link ranks are ranks inside the op's group. Used here only to find the peer of P2P ops.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.ingest.dropped import MAX_END_NS
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers.profiler_info import load_json_file, twice_in
from pipelines.ingest.units import ms_to_ns, us_to_ns

_STEP_KEY = re.compile(r"^step(\d*)$", re.IGNORECASE)
# Bandwidth types summed for an op's bytes: SDMA already is HCCS + PCIE + SIO.
_BYTE_LINKS = ("RDMA", "SDMA")
_INTRA_LINKS = ("HCCS", "PCIE", "SIO")
_MB = 1_000_000

OP_SCHEMA = {
    "step": pl.Int32,
    "op": pl.String,
    "group_name": pl.String,
    "kind": pl.String,
    "start_ns": pl.Int64,
    "dur_ns": pl.Int64,
    "wait_ns": pl.Int64,
    "transit_ns": pl.Int64,
    "sync_ns": pl.Int64,
    "bytes": pl.Int64,
}
LINK_SCHEMA = {
    "step": pl.Int32,
    "op": pl.String,
    "group_name": pl.String,
    "src": pl.Int32,
    "dst": pl.Int32,
    "transport": pl.String,
    "bytes": pl.Int64,
}


def _step_of(key: str) -> tuple[bool, int | None]:
    match = _STEP_KEY.match(key)
    if not match:
        return False, None
    return True, int(match.group(1)) if match.group(1) else None


def _split_key(key: str) -> tuple[str, str | None]:
    op, _, group = key.partition("@")
    return op, group or None


def _bytes(bandwidth: dict[str, Any]) -> int | None:
    if not isinstance(bandwidth, dict) or not bandwidth:
        return None

    def size(link: str) -> float:
        info = bandwidth.get(link)
        value = info.get("Transit Size(MB)") if isinstance(info, dict) else None
        return float(value) if isinstance(value, int | float) else 0.0

    intra = size("SDMA") if "SDMA" in bandwidth else sum(size(k) for k in _INTRA_LINKS)
    return round((size("RDMA") + intra) * _MB)


def _sections(data: Any, path: Path) -> list[tuple[int | None, str, dict[str, Any]]]:
    if not isinstance(data, dict):
        raise QuarantineError("invalid_communication", f"{path.name}: top level is not an object")
    for where in (data, *(kinds for kinds in data.values() if isinstance(kinds, dict))):
        if getattr(where, "twice", ()):  # a step or a section given twice: not one op's doing
            raise QuarantineError(
                "invalid_communication",
                f"{path.name}: {where.twice[0]!r} is given twice with two values: which the"
                " writer meant is unknown",
            )
    out = []
    for step_key, kinds in data.items():
        is_step, step = _step_of(str(step_key))
        if not is_step or not isinstance(kinds, dict):
            raise QuarantineError(
                "invalid_communication", f"{path.name}: unexpected top-level key {step_key!r}"
            )
        for kind, ops in kinds.items():
            if isinstance(ops, dict):
                out.append((step, str(kind), ops))
    return out


_TIME_FIELDS = (
    "Start Timestamp(us)",
    "Elapse Time(ms)",
    "Wait Time(ms)",
    "Transit Time(ms)",
    "Synchronization Time(ms)",
)


def _bad_time(times: Any) -> str | None:
    """Why an op's `Communication Time Info` cannot be used, None when it can: not an object,
    or a time that is given but no finite number >= 0 ('abc', -1, NaN)."""
    if not isinstance(times, dict):
        return f"Communication Time Info is {type(times).__name__}, not an object"
    for field in _TIME_FIELDS:
        value = times.get(field)
        if value is None:
            continue
        try:
            number = Decimal(str(value).strip())
        except (InvalidOperation, ValueError):
            return f"{field} is {value!r}"
        if not number.is_finite() or number < 0:
            return f"{field} is {value!r}"
        if number * (1000 if field.endswith("(us)") else 1_000_000) >= MAX_END_NS:
            # past int64 as ns (2^64 ms): it failed the whole file's enrichment before
            return f"{field} is {value!r}, past the int64 nanoseconds a time may take"
    return None


def _bad_bandwidth(bandwidth: Any) -> str | None:
    """Why an op's `Communication Bandwidth Info` cannot give its bytes, None when it can (or is
    absent): not an object, a link that is no object, a Transit Size(MB) given but no finite
    number >= 0. Each was read as 0 bytes without a word (issue 36 round five)."""
    if bandwidth is None:
        return None
    if not isinstance(bandwidth, dict):
        return f"Communication Bandwidth Info is {type(bandwidth).__name__}, not an object"
    for link, info in bandwidth.items():
        if not isinstance(info, dict):
            return f"Communication Bandwidth Info {link!r} is {type(info).__name__}, not an object"
        size = info.get("Transit Size(MB)")
        finite = isinstance(size, int | float) and not isinstance(size, bool)
        if size is not None and not (finite and math.isfinite(size) and size >= 0):
            return f"Communication Bandwidth Info {link!r} Transit Size(MB) is {size!r}"
    return None


def _given_twice(ops: dict[str, Any], key: str, info: Any) -> str | None:
    """Why an op cannot be read for a key given twice with two values: the op's own key in its
    section (two ops under one name), or a key inside it (two Elapse Times): which the writer
    meant is unknown, so the op is set aside, named (issue 36 round seven: Python's json kept
    the last value without a word)."""
    if key in getattr(ops, "twice", ()):
        return "the op is given twice with two values: which the writer meant is unknown"
    inner = twice_in(info)
    if inner is not None:
        return f"{inner} is given twice with two values: which the writer meant is unknown"
    return None


def read_communication(path: Path) -> pl.DataFrame:
    """One row per communication op of communication.json (Total Op Info skipped); an op with a
    bad time is left out (read_communication_rows)."""
    return read_communication_rows(path)[0]


def read_communication_rows(path: Path) -> tuple[pl.DataFrame, list[str]]:
    """read_communication's rows and one `<step> <op>: why` line per op left out for a time
    that is no finite number >= 0: one bad value costs its op (issue 36), where it was read as
    a missing time without a word (or failed the file when the info was no object)."""
    rows = []
    set_aside: list[str] = []
    for step, kind, ops in _sections(load_json_file(path, note_twice=True), path):
        for key, info in ops.items():
            if key == "Total Op Info":
                continue
            if not isinstance(info, dict):  # (a null op was skipped without a word)
                why = f"the op is {type(info).__name__}, not an object"
                set_aside.append(f"step {step} {kind} {key!r}: {why}")
                continue
            why = _given_twice(ops, key, info)
            if why is not None:
                set_aside.append(f"step {step} {kind} {key!r}: {why}")
                continue
            op, group = _split_key(key)
            times = info.get("Communication Time Info") or {}
            why = _bad_time(times) or _bad_bandwidth(info.get("Communication Bandwidth Info"))
            if why is not None:
                set_aside.append(f"step {step} {kind} {key!r}: {why}")
                continue
            rows.append(
                {
                    "step": step,
                    "op": op,
                    "group_name": group,
                    "kind": kind,
                    "start_ns": us_to_ns(times.get("Start Timestamp(us)")),
                    "dur_ns": ms_to_ns(times.get("Elapse Time(ms)")),
                    "wait_ns": ms_to_ns(times.get("Wait Time(ms)")),
                    "transit_ns": ms_to_ns(times.get("Transit Time(ms)")),
                    "sync_ns": ms_to_ns(times.get("Synchronization Time(ms)")),
                    "bytes": _bytes(info.get("Communication Bandwidth Info") or {}),
                }
            )
    return pl.DataFrame(rows, schema=OP_SCHEMA), set_aside


def read_communication_matrix(path: Path) -> pl.DataFrame:
    """One row per (op, src-dst link) of communication_matrix.json; aggregate keys without an
    `Op Name` (the `-total` entries) are skipped."""
    return read_communication_matrix_rows(path)[0]


def _link_problem(link: dict[str, Any]) -> str | None:
    """Why a link cannot be read: a `Transit Size(MB)` given but no finite number >= 0 within
    int64 bytes, or a link that is no object (issue 36 round seven: NaN or 2^64 MB failed the
    whole file, `read_error`, and every op's peer from it was lost; 'abc' was read as unknown
    bytes without a word)."""
    size = link.get("Transit Size(MB)")
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int | float):
        return f"Transit Size(MB) {str(size)[:30]!r} is no number"
    if not math.isfinite(size) or not 0 <= size * _MB < 2**63:
        return f"Transit Size(MB) {size!r} is no size"
    return None


def read_communication_matrix_rows(path: Path) -> tuple[pl.DataFrame, list[str]]:
    """The links of read_communication_matrix and one `step S op link: why` per link left out
    (_link_problem)."""
    rows = []
    set_aside: list[str] = []
    for step, _kind, ops in _sections(load_json_file(path, note_twice=True), path):
        for key, links in ops.items():
            if key == "Total Op Info" or not isinstance(links, dict):
                continue
            why = _given_twice(ops, key, links)
            if why is not None:
                set_aside.append(f"step {step} {key}: {why}")
                continue
            key_op, group = _split_key(key)
            for pair, link in links.items():
                why = _link_problem(link) if isinstance(link, dict) else "is no object"
                if why is not None:
                    set_aside.append(f"step {step} {key} link {pair}: {why}")
                    continue
                op = link.get("Op Name") or (key_op if key_op.lower().startswith("hcom_") else None)
                src, _, dst = str(pair).partition("-")
                if op is None or not (src.isdigit() and dst.isdigit()):
                    continue
                size = link.get("Transit Size(MB)")
                rows.append(
                    {
                        "step": step,
                        "op": op,
                        "group_name": group,
                        "src": int(src),
                        "dst": int(dst),
                        "transport": link.get("Transport Type"),
                        "bytes": round(size * _MB) if size is not None else None,
                    }
                )
    return pl.DataFrame(rows, schema=LINK_SCHEMA), set_aside


def peer_from_links(links: pl.DataFrame, op: str, me: int) -> int | None:
    """The other endpoint of op's non-local links that touch `me` (ranks as the links number
    them), when there is exactly one."""
    mine = links.filter(
        (pl.col("op") == op) & (pl.col("src") != pl.col("dst")) & (pl.col("transport") != "LOCAL")
    )
    others = set()
    for src, dst in zip(mine["src"].to_list(), mine["dst"].to_list(), strict=True):
        if src == me:
            others.add(dst)
        elif dst == me:
            others.add(src)
    return others.pop() if len(others) == 1 else None
