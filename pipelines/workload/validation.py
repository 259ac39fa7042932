"""validate(paths, con): measured workload runs against their own replays (no torch import).

Ingests the traces (pipelines.ingest.load.ingest_paths), segments them (chunk_store), fits
tau_k (analysis.fit_store), and replays each run's measured tau under CPP and VPP
(replay.store.replay_run, tabulated cost, free transfers, nothing written). Measured TTFT is
replay's own measure (last chunk end minus first chunk start per request, mean over requests);
the bubble of a run, measured or replayed, is 1 - sum(tau) / (ranks x makespan), the share of
the ranks' window no chunk keeps busy (the simulator's bubble_ratio with free transfers).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

VALIDATED_SCHEDULES = ("cpp", "vpp")


def measured_bubble(chunks: pl.DataFrame) -> float:
    """1 - sum of chunk busy time / (ranks x first-start-to-last-end window)."""
    window = int(chunks["end_ns"].max()) - int(chunks["start_ns"].min())
    ranks = chunks["rank"].n_unique()
    return 1.0 - float(chunks["busy_ns"].sum()) / (ranks * window)


def _curves(fits: pl.DataFrame, run: dict[str, Any]) -> pl.DataFrame:
    same = (pl.col("model") == run.get("model")) & (pl.col("schedule") == run.get("schedule"))
    return fits.filter(same).sort("vstage")


def validate(paths: Sequence[str | Path], con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """One row per ingested run: its fit verdicts and, for each schedule it was not measured
    under as well as its own, the replayed TTFT and bubble with the relative errors against
    the measured ones (errors only for the measured schedule)."""
    from pipelines.analysis.chunk_store import extract_chunks
    from pipelines.analysis.fit_store import fit_and_store
    from pipelines.ingest.load import ingest_paths
    from pipelines.replay.store import replay_run

    report = ingest_paths(paths, con, progress=False)
    run_ids = sorted({r.run_id for r in report.runs if r.run_id})
    if run_ids:
        extract_chunks(con, run_ids)
    fits = fit_and_store(con).fits
    rows = []
    for run_id in run_ids:
        replayed = replay_run(
            con, run_id, VALIDATED_SCHEDULES, cost="tabulated", comm="none", write=False
        )
        measured = replayed.measured
        curves = _curves(fits, measured.run)
        ttft = measured.ttft_mean_ns()
        bubble = measured_bubble(measured.chunks)
        row: dict[str, Any] = {
            "run_id": run_id,
            "model": measured.run.get("model"),
            "schedule": measured.run.get("schedule"),
            "attention": measured.run.get("attention"),
            "chunks": measured.chunks.height,
            "verdicts": curves["verdict"].to_list(),
            "r2_min": float(curves["r2"].min()) if curves.height else None,
            "measured_ttft_ns": ttft,
            "measured_bubble": bubble,
            "replays": {},
        }
        for rerun in replayed.reruns:
            sched = rerun["schedule"]
            entry = {"ttft_ns": rerun["ttft_mean_ns"], "bubble": rerun["bubble_ratio"]}
            if sched == row["schedule"]:
                entry["ttft_rel_err"] = (rerun["ttft_mean_ns"] - ttft) / ttft
                entry["bubble_rel_err"] = (rerun["bubble_ratio"] - bubble) / bubble
            row["replays"][sched] = entry
        rows.append(row)
    return rows
