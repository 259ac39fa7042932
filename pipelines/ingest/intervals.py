"""Overlap lanes from raw device intervals (used by pipelines/ingest/overlap.py).

NOTE: this file was rewritten by the text-reader helper after it accidentally overwrote the
original (same name, created at the same time). The API is the one overlap.py calls:
`overlap_lanes(events)` with columns kind ('compute' | 'comm'), start_ns, end_ns, group.

Per group: Computing = union of compute intervals; Communication = union of comm intervals;
Communication(Not Overlapped) = Communication minus Computing; Free = gaps inside the group's
device window [min start, max end] covered by neither. Touching intervals merge.
"""

from __future__ import annotations

import numpy as np
import polars as pl

LANE_NAMES = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if starts.size == 0:
        return starts.astype(np.int64), ends.astype(np.int64)
    order = np.argsort(starts, kind="stable")
    s = starts[order].astype(np.int64)
    e = np.maximum.accumulate(ends[order].astype(np.int64))
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    return s[first], e[last]


def _subtract(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted intervals a minus disjoint sorted intervals b."""
    out_s: list[int] = []
    out_e: list[int] = []
    j = 0
    b_s, b_e = b
    for start, end in zip(a[0].tolist(), a[1].tolist(), strict=True):
        cur = start
        while j < b_s.size and b_e[j] <= cur:
            j += 1
        k = j
        while k < b_s.size and b_s[k] < end:
            if b_s[k] > cur:
                out_s.append(cur)
                out_e.append(int(b_s[k]))
            cur = max(cur, int(b_e[k]))
            if cur >= end:
                break
            k += 1
        if cur < end:
            out_s.append(cur)
            out_e.append(end)
    return np.asarray(out_s, dtype=np.int64), np.asarray(out_e, dtype=np.int64)


def _gaps(u: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    s, e = u
    if s.size < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return e[:-1], s[1:]


def overlap_lanes(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(lanes: group, name, start_ns, dur_ns; totals: group, computing_ns, communication_ns,
    comm_not_overlapped_ns, overlapped_ns, free_ns, window_start_ns, window_end_ns)."""
    group_dtype = events.schema.get("group", pl.Int64)
    lane_rows: dict[str, list] = {"group": [], "name": [], "start_ns": [], "dur_ns": []}
    totals: list[dict] = []
    for (group,), part in events.group_by(["group"], maintain_order=True):
        starts = part["start_ns"].to_numpy().astype(np.int64)
        ends = part["end_ns"].to_numpy().astype(np.int64)
        is_comm = (part["kind"] == "comm").to_numpy()
        compute = _union(starts[~is_comm], ends[~is_comm])
        comm = _union(starts[is_comm], ends[is_comm])
        exposed = _subtract(comm, compute)
        free = _gaps(_union(starts, ends))
        for name, (s, e) in zip(LANE_NAMES, (compute, comm, exposed, free), strict=True):
            lane_rows["group"].extend([group] * s.size)
            lane_rows["name"].extend([name] * s.size)
            lane_rows["start_ns"].extend(s.tolist())
            lane_rows["dur_ns"].extend((e - s).tolist())
        comm_len = int((comm[1] - comm[0]).sum())
        exposed_len = int((exposed[1] - exposed[0]).sum())
        totals.append(
            {
                "group": group,
                "computing_ns": int((compute[1] - compute[0]).sum()),
                "communication_ns": comm_len,
                "comm_not_overlapped_ns": exposed_len,
                "overlapped_ns": comm_len - exposed_len,
                "free_ns": int((free[1] - free[0]).sum()),
                "window_start_ns": int(starts.min()) if starts.size else None,
                "window_end_ns": int(ends.max()) if ends.size else None,
            }
        )
    lanes = pl.DataFrame(
        lane_rows,
        schema={"group": group_dtype, "name": pl.String, "start_ns": pl.Int64, "dur_ns": pl.Int64},
    )
    total_schema = {"group": group_dtype} | {
        k: pl.Int64
        for k in (
            "computing_ns",
            "communication_ns",
            "comm_not_overlapped_ns",
            "overlapped_ns",
            "free_ns",
            "window_start_ns",
            "window_end_ns",
        )
    }
    return lanes, pl.DataFrame(totals, schema=total_schema)
