"""The on-CPU time of each measured chunk, read back from the workload's traces (no torch import).

The engine (rank_process.py) times every forward twice: the Kineto marker (wall clock, what ingest
turns into tau) and the rank thread's CPU clock (`time.thread_time_ns`, with one intra-op thread
the whole forward runs on that thread), and writes the second as trace metadata `chunk_cpu_ns`
({marker name: [CPU ns, wall ns]}). On a machine shared with other jobs the wall clock of a
chunk is its CPU time divided by the share of a core the scheduler gave the rank meanwhile;
the CPU time is not (docs/workload.md, "Measuring on a shared machine").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import msgspec
import polars as pl

MARKER_FIELDS = re.compile(r"req=(?P<req>[^,\]]+),k=(?P<k>\d+),vs=(?P<vs>\d+)")
SCHEMA = {
    "request_id": pl.String,
    "chunk_idx": pl.Int32,
    "vstage": pl.Int32,
    "cpu_ns": pl.Int64,
    "wall_ns": pl.Int64,
}


class _Metadata(msgspec.Struct):
    chunk_cpu_ns: str | dict | None = None


def read_chunk_cpu(path: str | Path) -> pl.DataFrame:
    """One row per chunk marker of one trace: request_id, chunk_idx, vstage, cpu_ns, wall_ns
    (empty when the trace carries no `chunk_cpu_ns`, e.g. a trace of another program)."""
    meta = msgspec.json.decode(Path(path).read_bytes(), type=_Metadata)
    raw = meta.chunk_cpu_ns
    entries = json.loads(raw) if isinstance(raw, str) else raw or {}
    rows = []
    for name, (cpu_ns, wall_ns) in entries.items():
        m = MARKER_FIELDS.search(name)
        if m:
            rows.append((m["req"], int(m["k"]), int(m["vs"]), int(cpu_ns), int(wall_ns)))
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def chunk_cpu(paths: Iterable[str | Path]) -> pl.DataFrame:
    """`read_chunk_cpu` of every trace of one run, concatenated."""
    parts = [read_chunk_cpu(p) for p in paths]
    return pl.concat(parts) if parts else pl.DataFrame(schema=SCHEMA)


def cpu_share(cpu: pl.DataFrame) -> float | None:
    """Sum of on-CPU time over sum of wall time of the chunks: the share of a core the ranks
    got while computing (1.0 on an idle machine; None without on-CPU times)."""
    wall = int(cpu["wall_ns"].sum()) if cpu.height else 0
    return float(cpu["cpu_ns"].sum()) / wall if wall else None


def with_on_cpu_tau(points: pl.DataFrame, cpu: pl.DataFrame) -> pl.DataFrame:
    """`points` (int_chunk_tau rows of one run) with tau_ns replaced by the chunk's on-CPU time;
    chunks without one are left out."""
    keys = ["request_id", "chunk_idx", "vstage"]
    joined = points.drop("tau_ns").join(cpu.select(*keys, "cpu_ns"), on=keys, how="inner")
    return joined.rename({"cpu_ns": "tau_ns"})
