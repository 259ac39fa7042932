"""What `tracereplay runs` and `tracereplay show` report about stored runs: plain data (Polars
frames and dicts), no formatting. The step breakdown comes from
sql/intermediate/int_step_breakdown_preferred.sql (one trustworthy row per run, rank and step;
docs/step_breakdown.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import polars as pl

from pipelines.analysis.tau.tau_points import load_tau_points
from pipelines.store import queries
from pipelines.store.queries import run_list  # noqa: F401  (re-exported for the CLI)

TOP = 10
# derived and profiler figures closer than this are "the same" (docs/step_breakdown.md: complete
# ranks of the real sets agree within 0.12 µs)
SAME_NS = 1_000


@dataclass
class RunView:
    """Everything `tracereplay show` prints about one run."""

    run: dict[str, Any]
    breakdown: pl.DataFrame  # per rank, summed over steps
    kernels: pl.DataFrame  # top kernels by total time
    comm: pl.DataFrame  # top comm ops by total time (normalised names)
    chunks: pl.DataFrame  # per rank and virtual stage
    fits: pl.DataFrame  # tau fit per curve of this run (may be empty)
    notes: list[str] = field(default_factory=list)
    has_markers: bool = False
    has_profiler_steps: bool = False

    def as_json(self) -> dict[str, Any]:
        def rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
            return frame.to_dicts() if frame.height else []

        return {
            "run": self.run,
            "breakdown": rows(self.breakdown),
            "top_kernels": rows(self.kernels),
            "top_comm_ops": rows(self.comm),
            "chunks": rows(self.chunks),
            "tau_fits": rows(self.fits),
            "notes": self.notes,
        }


def _run_fits(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    from pipelines.analysis.tau.curves import fit_curves

    points, _ = load_tau_points(con, segment=False)
    if points.is_empty() or "run_id" not in points.columns:
        return pl.DataFrame()
    mine = points.filter(pl.col("run_id") == run_id)
    if mine.is_empty():
        return pl.DataFrame()
    return fit_curves(mine, n_boot=200)


def _notes(view: RunView) -> list[str]:
    notes = []
    frame = view.breakdown
    for row in frame.iter_rows(named=True) if frame.height else []:
        reason = row["derived_incomplete_reason"]
        if reason:
            notes.append(
                f"rank {row['rank']}: our derived breakdown is incomplete ({reason}); the"
                f" {row['origin']} figures are shown instead"
            )
        if row["steps"] == 0:
            notes.append(
                f"rank {row['rank']}: no step number (no ProfilerStep in the capture): its"
                " breakdown is one window over the whole capture"
            )
        recv_wait, p2p = row["recv_wait_ns"], row["p2p_bubble_ns"]
        if p2p is not None and recv_wait is not None and abs(p2p - recv_wait) > SAME_NS:
            notes.append(
                f"rank {row['rank']}: receive wait {recv_wait / 1e6:.1f} ms by the profiler's"
                f" definition (time in hcom_receive only) but {p2p / 1e6:.1f} ms of p2p wait by"
                " ours (inside every send / receive / batchSendRecv with no compute running)"
            )
    if view.chunks.is_empty():
        if view.has_markers:
            notes.append(
                "chunk markers found but no chunks stored: run `tracereplay chunks --run"
                f" {view.run['run_id']}`"
            )
        elif view.has_profiler_steps:
            notes.append(
                "no chunks: this run has no chunk markers. Wrap each prefill forward in"
                " record_function('chunk[req=<id>,k=<k>,vs=<stage>,tokens=<c>,prefix=<p>]')"
                " (docs/tau_k.md), or treat each ProfilerStep as one chunk with `tracereplay"
                f" chunks --profiler-steps --run {view.run['run_id']}`; set model / schedule /"
                " chunk_size with `tracereplay ingest PATH --tag key=value`"
            )
        else:
            notes.append(
                "no chunks: this run has neither chunk markers nor ProfilerStep ranges on a host"
                " lane, so nothing cuts it into chunks (`tracereplay chunks --profiler-steps`"
                " finds nothing here). Profile the host side too and wrap each prefill forward in"
                " record_function('chunk[req=<id>,k=<k>,vs=<stage>,tokens=<c>,prefix=<p>]')"
                " (docs/tau_k.md)"
            )
    return notes


def show_run(con: duckdb.DuckDBPyConnection, run_id: str, fit: bool = True) -> RunView | None:
    """The view of one run, or None when no such run is stored."""
    run = queries.run_record(con, run_id)
    if run is None:
        return None
    chunks = queries.chunk_summary(con, run_id)
    view = RunView(
        run=run,
        breakdown=queries.breakdown_by_rank(con, run_id),
        kernels=queries.top_kernels(con, run_id, TOP),
        comm=queries.top_comm_ops(con, run_id, TOP),
        chunks=chunks,
        fits=_run_fits(con, run_id) if fit and chunks.height else pl.DataFrame(),
        has_markers=queries.has_chunk_markers(con, run_id),
        has_profiler_steps=queries.has_profiler_steps(con, run_id),
    )
    view.notes = _notes(view)
    return view


def match_run_id(con: duckdb.DuckDBPyConnection, text: str) -> list[str]:
    """Run ids equal to `text`, else those starting with it (a unique prefix is enough)."""
    return queries.match_run_id(con, text)
