"""Chunk extraction into the warehouse: segment each ingested run's slices, store its chunks.

One function, `extract_chunks`, used by `tracereplay chunks`, the demo and the Dagster assets:
for every ingested run (real, or simulated and then ingested through its profiler files) it reads
the run's host and device slices, segments them with `segment_chunks` (host-side chunk markers,
docs/tau_k.md) and replaces that run's rows of the `chunks` table in one transaction, so running
it twice leaves the table as it was. Runs written straight by the simulator (source 'sim', e.g.
`tracereplay replay` output) carry their exact chunks and are left alone.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb
import polars as pl

from pipelines import warehouse
from pipelines.analysis.segment import DEFAULT_MARKER_REGEX, Link, run_totals, segment_chunks

SIMULATED_SOURCE = "sim"
SEGMENT_LANES = ("host", "compute", "comm")
"""Lanes segmentation reads: markers (host), kernels (compute) and HCCL ops (comm, whose
connection ids tell a collective's transfers on the compute lane apart from kernels)."""


@dataclass(frozen=True)
class RunChunks:
    """What extraction found in one run."""

    run_id: str
    chunks: int
    markers: int
    empty_markers: int
    device_busy_ns: int
    unassigned_ns: int
    unassigned_fraction: float | None


@dataclass
class ChunkReport:
    """Outcome of one `extract_chunks` call: per run, and the run ids it could not use."""

    runs: list[RunChunks] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # asked for, not in the warehouse
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (run_id, why)

    @property
    def total_chunks(self) -> int:
        return sum(r.chunks for r in self.runs)

    def frame(self) -> pl.DataFrame:
        """One row per extracted run."""
        schema = {
            "run_id": pl.String,
            "chunks": pl.Int64,
            "markers": pl.Int64,
            "empty_markers": pl.Int64,
            "device_busy_ns": pl.Int64,
            "unassigned_ns": pl.Int64,
            "unassigned_fraction": pl.Float64,
        }
        return pl.DataFrame([asdict(r) for r in self.runs], schema=schema)

    def as_json(self) -> dict[str, Any]:
        return {
            "runs": [asdict(r) for r in self.runs],
            "unknown": self.unknown,
            "skipped": [{"run_id": r, "reason": why} for r, why in self.skipped],
            "total_chunks": self.total_chunks,
        }


def _select_runs(
    con: duckdb.DuckDBPyConnection, run_ids: list[str] | None, report: ChunkReport
) -> list[str]:
    rows = con.execute("select run_id, source from runs order by run_id").fetchall()
    source = dict(rows)
    if run_ids is None:
        return [r for r, s in rows if s != SIMULATED_SOURCE]
    chosen = []
    for run_id in dict.fromkeys(run_ids):
        if run_id not in source:
            report.unknown.append(run_id)
        elif source[run_id] == SIMULATED_SOURCE:
            report.skipped.append((run_id, "written by the simulator: its chunks are exact"))
        else:
            chosen.append(run_id)
    return chosen


def extract_chunks(
    con: duckdb.DuckDBPyConnection,
    run_ids: list[str] | None = None,
    marker_regex: str | re.Pattern[str] | None = None,
    *,
    include_comm: bool = False,
    link: Link = "auto",
    renumber: bool = False,
) -> ChunkReport:
    """Segment the chunks of `run_ids` (default: every ingested run not written by the simulator)
    from their slices and replace their rows in the `chunks` table.

    marker_regex: the chunk-marker rule (default: the DESIGN.md `chunk[req=..,k=..,vs=..]` form);
    include_comm, link, renumber: as in `segment_chunks`. A run without matching markers gets
    no chunk rows (and any stale ones are removed); its device time is all unassigned.
    """
    report = ChunkReport()
    for run_id in _select_runs(con, run_ids, report):
        chunks, unassigned = segment_run(
            con, run_id, marker_regex, include_comm=include_comm, link=link, renumber=renumber
        )
        _replace_chunks(con, run_id, chunks)
        report.runs.append(_run_summary(run_id, chunks, unassigned))
    return report


def segment_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    marker_regex: str | re.Pattern[str] | None = None,
    *,
    include_comm: bool = False,
    link: Link = "auto",
    renumber: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(chunks, unassigned) of one stored run, segmented from the lanes segmentation reads;
    nothing is written."""
    lanes = ", ".join(f"'{lane}'" for lane in SEGMENT_LANES)
    slices = con.execute(
        f"select * from slices where run_id = ? and lane in ({lanes})", [run_id]
    ).pl()
    return segment_chunks(
        slices,
        run_id,
        marker_regex or DEFAULT_MARKER_REGEX,
        include_comm=include_comm,
        link=link,
        renumber=renumber,
    )


def _replace_chunks(con: duckdb.DuckDBPyConnection, run_id: str, chunks: pl.DataFrame) -> None:
    con.execute("begin transaction")
    try:
        con.execute("delete from chunks where run_id = ?", [run_id])
        warehouse.insert_frame(con, "chunks", chunks)
        con.execute("commit")
    except Exception:
        con.execute("rollback")
        raise


def _run_summary(run_id: str, chunks: pl.DataFrame, unassigned: pl.DataFrame) -> RunChunks:
    if unassigned.is_empty():
        return RunChunks(run_id, chunks.height, 0, 0, 0, 0, None)
    total = run_totals(unassigned).row(0, named=True)
    busy = int(total["device_busy_ns"])
    return RunChunks(
        run_id=run_id,
        chunks=chunks.height,
        markers=int(total["n_markers"]),
        empty_markers=int(total["n_empty_markers"]),
        device_busy_ns=busy,
        unassigned_ns=int(total["unassigned_ns"]),
        unassigned_fraction=float(total["unassigned_fraction"]) if busy else None,
    )
