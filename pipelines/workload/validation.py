"""validate(paths, con): measured workload runs against their own replays (no torch import).

Ingests the traces (pipelines.ingest.load.ingest_paths), segments them (chunk_store), fits
tau_k (analysis.fit_store), and replays each run's measured tau under CPP and VPP
(replay.store.simulate_reruns, what `tracereplay replay` runs: tabulated cost, free transfers,
the run's measured host time per stage call charged on every call: pipelines.replay.host_time;
nothing written); a DCPP run also on its own chunk sequence (pipelines.workload.sequence_replay)
beside the simulator rule's step count. Each run's window work ratio of the two ranks
(pipelines.workload.fold_back: under VPP the fold-back identity) comes with a t interval over
the passes, on the wall clock and on the CPU clock. Measured TTFT is
replay's own measure (last chunk end minus first chunk start per request, mean over requests,
with a t interval over the requests: the passes of `--repeats`); the bubble of a run, measured
or replayed, is 1 - (busy + host) / (ranks x makespan), the share of the ranks' window no chunk
keeps busy (the simulator's bubble_ratio with free transfers; host time counts as work on both
sides). Besides the wall-clock fit, the chunks' on-CPU times (pipelines.workload.on_cpu) are
fitted the same way, and the ranks' CPU share (on-CPU / wall) says how much of the wall clock
other jobs took.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines.analysis.chunks.chunk_store import extract_chunks
from pipelines.analysis.comparison.mean_interval import mean_interval
from pipelines.analysis.tau.curves import fit_curves
from pipelines.analysis.tau.fit_store import fit_and_store
from pipelines.ingest.load import ingest_paths
from pipelines.replay.host_time import host_time
from pipelines.replay.store import load_measured, simulate_reruns
from pipelines.sim.metrics import summarize
from pipelines.store import queries
from pipelines.workload.config import config_from_trace, profile_fit_from_trace
from pipelines.workload.fold_back import window_interval
from pipelines.workload.on_cpu import chunk_cpu, cpu_share, with_on_cpu_tau
from pipelines.workload.sequence_replay import replay_sequence, rule_chunks

VALIDATED_SCHEDULES = ("cpp", "vpp")
"""Schedules every run is replayed under by `tracereplay replay`'s code (pipelines.replay); a
DCPP run is replayed on its own chunk sequence too (pipelines.workload.sequence_replay)."""


def steps_per_request(chunks: pl.DataFrame) -> float:
    """Mean number of stage-0 chunks (scheduler steps) per request."""
    first = chunks.filter(pl.col("vstage") == 0)
    return first.height / max(first["request_id"].n_unique(), 1)


def measured_bubble(chunks: pl.DataFrame, host_call_ns: float = 0.0) -> float:
    """1 - occupied time / (ranks x first-start-to-last-end window), occupied = the chunks'
    busy time plus `host_call_ns` per chunk (the replay charges the same per call, so both
    bubbles count host time as work)."""
    window = int(chunks["end_ns"].max()) - int(chunks["start_ns"].min())
    ranks = chunks["rank"].n_unique()
    occupied = float(chunks["busy_ns"].sum()) + host_call_ns * chunks.height
    return 1.0 - occupied / (ranks * window)


def _curves(fits: pl.DataFrame, run: dict[str, Any]) -> pl.DataFrame:
    if fits.is_empty():
        return fits
    same = (pl.col("model") == run.get("model")) & (pl.col("schedule") == run.get("schedule"))
    return fits.filter(same).sort("vstage")


def ttft_interval(chunks: pl.DataFrame, level: float = 0.95) -> tuple[int, float, float]:
    """(n requests, low, high) of the t interval of the mean TTFT over the run's requests
    (NaN bounds with one request)."""
    per_request = chunks.group_by("request_id").agg(
        (pl.col("end_ns").max() - pl.col("start_ns").min()).alias("ttft")
    )["ttft"]
    _, low, high = mean_interval([float(v) for v in per_request.to_list()], level)
    return per_request.len(), low, high


def on_cpu_fits(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> pl.DataFrame:
    """tau_k fits (pipelines.analysis.tau.curves.fit_curves, as for the stored fits) of the runs'
    on-CPU chunk times; empty when no run's traces carry them."""

    points = queries.measured_chunk_tau(con)
    parts = []
    for run_id, paths in _input_paths(con, run_ids).items():
        cpu = chunk_cpu(paths)
        if cpu.height:
            parts.append(with_on_cpu_tau(points.filter(pl.col("run_id") == run_id), cpu))
    return fit_curves(pl.concat(parts)) if parts else pl.DataFrame()


def _input_paths(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> dict[str, list[str]]:

    out: dict[str, list[str]] = {}
    for run_id, path, _ in queries.run_input_files(con):
        if run_id in run_ids and Path(path).is_file():
            out.setdefault(run_id, []).append(path)
    return out


def validate(paths: Sequence[str | Path], con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """One row per ingested run: its fit verdicts (wall clock and on-CPU) and, for each schedule
    it was not measured under as well as its own, the replayed TTFT (with the measured host time
    per call, `ttft_ns`, and without, `ttft_busy_only_ns`) and bubble with the relative errors
    against the measured ones (errors only for the measured schedule)."""

    report = ingest_paths(paths, con, progress=False)
    run_ids = sorted({r.run_id for r in report.runs if r.run_id})
    if run_ids:
        extract_chunks(con, run_ids)

    fits = fit_and_store(con).fits
    cpu_fits = on_cpu_fits(con, run_ids)
    paths = _input_paths(con, run_ids)
    rows = []
    for run_id in run_ids:
        measured = load_measured(con, run_id, extract=False)
        host = host_time(measured.chunks)
        replayed, busy_only = (_replays(measured, charged) for charged in (host.call_ns, 0.0))
        curves = _curves(fits, measured.run)
        cpu_curves = _curves(cpu_fits, measured.run)
        ttft = measured.ttft_mean_ns()
        n_req, ttft_lo, ttft_hi = ttft_interval(measured.chunks)
        bubble = measured_bubble(measured.chunks, host.call_ns)
        row: dict[str, Any] = {
            "run_id": run_id,
            "model": measured.run.get("model"),
            "schedule": measured.run.get("schedule"),
            "attention": measured.run.get("attention"),
            "chunks": measured.chunks.height,
            "verdicts": curves["verdict"].to_list(),
            "r2_min": float(curves["r2"].min()) if curves.height else None,
            "cpu_verdicts": cpu_curves["verdict"].to_list() if cpu_curves.height else [],
            "cpu_r2_min": float(cpu_curves["r2"].min()) if cpu_curves.height else None,
            "cpu_share": cpu_share(chunk_cpu(paths.get(run_id, []))),
            "host_call_ns": host.call_ns,
            "host_in_marker_ns": host.in_marker_ns,
            "host_gap_ns": host.gap_ns,
            "requests": n_req,
            "measured_ttft_ns": ttft,
            "measured_ttft_ci_ns": [ttft_lo, ttft_hi],
            "measured_bubble": bubble,
            "replays": {},
        }
        row["steps"] = steps_per_request(measured.chunks)
        row["window_ratio"] = window_interval(measured.chunks)
        cpu = chunk_cpu(paths.get(run_id, []))
        row["window_ratio_on_cpu"] = window_interval(cpu, "cpu_ns") if cpu.height else None
        if row["schedule"] == "dcpp":
            _dcpp_rows(row, measured.chunks, host.call_ns, paths.get(run_id, []))
        for rerun, plain in zip(replayed, busy_only, strict=True):
            sched = rerun["schedule"]
            entry = {
                "ttft_ns": rerun["ttft_mean_ns"],
                "ttft_busy_only_ns": plain["ttft_mean_ns"],
                "bubble": rerun["bubble_ratio"],
            }
            if sched == row["schedule"]:
                entry["ttft_rel_err"] = (rerun["ttft_mean_ns"] - ttft) / ttft
                entry["ttft_busy_only_rel_err"] = (plain["ttft_mean_ns"] - ttft) / ttft
                entry["bubble_rel_err"] = (rerun["bubble_ratio"] - bubble) / bubble
            row["replays"][sched] = entry
        rows.append(row)
    return rows


def _replays(measured: Any, host_call_ns: float) -> list[dict[str, Any]]:
    """The run under each VALIDATED_SCHEDULES, as `tracereplay replay` simulates it
    (pipelines.replay.store.simulate_reruns: tabulated cost, free transfers), with
    `host_call_ns` charged per stage call; nothing written. Only the schedules asked for are
    simulated (replay_run would also re-chunk a DCPP run under the simulator's default rule
    for its speed-up baseline)."""

    results = simulate_reruns(measured, VALIDATED_SCHEDULES, "tabulated", "none", 2, host_call_ns)
    out = []
    for schedule, result in results.items():
        summary = summarize(result)
        out.append(
            {
                "schedule": schedule,
                "ttft_mean_ns": summary["ttft_mean_ns"],
                "bubble_ratio": summary["bubble_ratio"],
            }
        )
    return out


def _dcpp_rows(row: dict[str, Any], chunks: pl.DataFrame, host_ns: float, paths: list) -> None:
    """A DCPP run: its own chunk sequence replayed (with and without the host time per call)
    beside the measurement, and the simulator's DCPP rule run on its measured stage-0 cost
    (`rule_steps`: chunks the simulator would cut one request into)."""

    ttft, bubble = row["measured_ttft_ns"], row["measured_bubble"]
    with_host, plain = replay_sequence(chunks, host_ns), replay_sequence(chunks)
    row["replays"]["dcpp"] = {
        "ttft_ns": with_host["ttft_mean_ns"],
        "ttft_busy_only_ns": plain["ttft_mean_ns"],
        "bubble": with_host["bubble_ratio"],
        "ttft_rel_err": (with_host["ttft_mean_ns"] - ttft) / ttft,
        "ttft_busy_only_rel_err": (plain["ttft_mean_ns"] - ttft) / ttft,
        "bubble_rel_err": (with_host["bubble_ratio"] - bubble) / bubble,
        "replayed": "own chunk sequence",
    }
    cfg = next((c for c in map(config_from_trace, paths) if c is not None), None)
    fit = next((f for f in map(profile_fit_from_trace, paths) if f is not None), None)
    keys = ["request_id", "chunk_idx", "vstage"]
    stage0 = chunks.filter(pl.col("vstage") == 0).join(chunk_cpu(paths), on=keys, how="inner")
    if cfg is not None and fit is not None and stage0.height >= 3:
        sizes = rule_chunks(stage0, cfg.seq_len, cfg.chunk, cfg.dcpp_rule(), fit)
        row["rule_steps"] = len(sizes)
