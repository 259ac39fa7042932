"""The canonical tables of a simulated run: the one converter from a SimResult to the warehouse.

A simulated run reaches the warehouse one of two ways, and both share the trace layout:
- written as traces (pipelines/sim/writers_*) and read back by pipelines/ingest, like any run;
- converted here (replay reruns): the frames are built from the same derivations the trace
  writers use (pipelines/sim/trace_layout: transfer pairing, hcom op names, peers, step windows,
  and the overlap lanes of pipelines/overlap, which the readers use to derive a step breakdown),
  so a rerun stores what ingesting its written trace would say of its comm ops and step breakdown.

Why a rerun is converted rather than written and ingested: its chunks come straight from the
simulator (exact ns, no chunk markers to parse), and a replay stores five reruns per call (the
demo replays its campaign runs), where writing and re-ingesting the trace folders of one rerun
took 2.3 s against 40 ms for the conversion (medians of 5, docs/replay.md).

Tables of a rerun (one step = the run, as trace_layout's step windows give for a pipeline run):
- runs: one row, source 'sim', replay_of the measured run, its model, tp and hardware;
- ranks: one per simulated rank, one "pp" group;
- slices: one per compute task (lane compute, name `prefill_chunk`, args request_id, chunk_idx,
  vstage, tokens, prefix_tokens) and per send / receive (lane comm, name the hcom op);
- comm_ops: one per send / receive, bytes = tokens × the link's bytes per token;
- step_breakdown: one row per rank, origin 'sim', the profiler's overlap accounting
  (trace_layout.rank_overlap: computing = |∪ compute|, communication = |∪ send/receive|,
  comm_not_overlapped = communication − computing, free = gaps inside the rank's own
  first-to-last-task span, bubble = Σ receive durations, stage = span − bubble, preparing = the
  rank's first task start − the run's, p2p_bubble = |∪ p2p − ∪ compute|);
- chunks: the compute tasks of the run's requests (`chunks_frame`).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import polars as pl

from pipelines.ingest.frames import SCHEMAS, conform
from pipelines.replay.measured_run import Measured
from pipelines.sim.result import SimResult
from pipelines.sim.trace_layout import P2P_GROUP_KIND, comm_ops, rank_ids, rank_overlap
from pipelines.vocabulary.overlap import WINDOW_COLUMNS

SOURCE = "sim"
ORIGIN = "sim"
COMPUTE_NAME = "prefill_chunk"
STEP = 1  # a pipeline run has no scheduling steps: one window spans it (trace_layout)


def chunks_frame(result: SimResult, run_id: str) -> pl.DataFrame:
    """Compute tasks of the run's requests in the canonical `chunks` schema (single-device decode
    pieces are not chunks); busy_ns is the task's compute time."""
    compute = result.tasks.filter(
        (pl.col("kind") == "compute")
        & pl.col("request_id").is_in(result.requests["request_id"].implode())
    )
    frame = compute.select(
        pl.lit(run_id).alias("run_id"),
        "rank",
        "vstage",
        "request_id",
        "chunk_idx",
        "tokens",
        "prefix_tokens",
        "start_ns",
        "end_ns",
        (pl.col("end_ns") - pl.col("start_ns")).alias("busy_ns"),
    )
    return conform("chunks", frame)


def _content_hash(measured: Measured, schedule: str, cost: str, meta: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    digest.update(str(measured.run.get("content_hash")).encode())
    ordered = measured.chunks.sort(["rank", "vstage", "request_id", "chunk_idx"])
    digest.update(ordered.write_csv().encode())
    keys = ("schedule", "pp", "vp", "chunk_size", "comm_mode", "reorder", "pack_windows")
    options = {"cost": cost, **{k: meta.get(k) for k in keys}}
    digest.update(json.dumps(options, default=str).encode())
    return digest.hexdigest()


def _runs_row(
    run_id: str, measured: Measured, result: SimResult, cost: str, comm: str, ingested_at: Any
) -> pl.DataFrame:
    meta, src = result.meta, measured.run
    ranks = int(result.tasks["rank"].n_unique())
    row = {
        "run_id": run_id,
        "source": SOURCE,
        "origin": f"replay of {measured.run_id}",
        "content_hash": _content_hash(measured, meta["schedule"], cost, meta),
        "model": src.get("model"),
        "schedule": meta["schedule"],
        "chunk_size": meta.get("chunk_size"),
        "seq_len": src.get("seq_len") or meta.get("seq_len"),
        "tp": src.get("tp"),
        "pp": meta.get("pp"),
        "vp": meta.get("vp"),
        "dp": 1,
        "world_size": ranks * int(src.get("tp") or 1),
        "hardware": src.get("hardware"),
        "software": json.dumps({"simulator": "tracereplay"}),
        "collected_at": None,
        "replay_of": measured.run_id,
        "tags": json.dumps({"replay_cost": cost, "comm": comm, "comm_mode": meta.get("comm_mode")}),
        "ingested_at": ingested_at or datetime.now(UTC).replace(tzinfo=None),
    }
    return conform("runs", pl.DataFrame([row], schema=SCHEMAS["runs"]))


def _ranks(run_id: str, result: SimResult) -> pl.DataFrame:
    ranks = rank_ids(result)
    groups = json.dumps([{"name": P2P_GROUP_KIND, "ranks": ranks}])
    return pl.DataFrame(
        {
            "run_id": run_id,
            "rank": ranks,
            "device_id": ranks,
            "pp_stage": list(range(len(ranks))),
            "groups": groups,
            "source_path": None,
        },
        schema=SCHEMAS["ranks"],
    )


def _slices(run_id: str, result: SimResult, comm: pl.DataFrame) -> pl.DataFrame:
    compute = result.tasks.filter(pl.col("kind") == "compute").select(
        "rank",
        pl.lit("compute").alias("lane"),
        pl.lit("compute").alias("thread"),
        pl.lit(COMPUTE_NAME).alias("name"),
        "start_ns",
        "end_ns",
        pl.struct("request_id", "chunk_idx", "vstage", "tokens", "prefix_tokens")
        .struct.json_encode()
        .alias("args"),
    )
    comm_slices = comm.select(
        "rank",
        pl.lit("comm").alias("lane"),
        pl.lit("p2p").alias("thread"),
        pl.col("op").alias("name"),
        "start_ns",
        "end_ns",
        pl.struct("request_id", "chunk_idx", "vstage", "tokens", "peer")
        .struct.json_encode()
        .alias("args"),
    )
    frame = pl.concat([compute, comm_slices]).sort("rank", "start_ns", "lane")
    return conform(
        "slices",
        frame.with_columns(
            pl.lit(run_id).alias("run_id"),
            pl.lit("sim").alias("category"),
            (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
            pl.lit(STEP).alias("step"),
        ).drop("end_ns"),
    )


def _comm_ops(run_id: str, comm: pl.DataFrame, bytes_per_token: float) -> pl.DataFrame:
    if comm.is_empty():
        return pl.DataFrame(schema=SCHEMAS["comm_ops"])
    frame = comm.select(
        pl.lit(run_id).alias("run_id"),
        "rank",
        pl.lit(STEP).alias("step"),
        "op",
        pl.when(pl.col("kind") == "send")
        .then(pl.lit("send"))
        .otherwise(pl.lit("receive"))
        .alias("op_type"),
        pl.lit(P2P_GROUP_KIND).alias("group_name"),
        pl.lit(P2P_GROUP_KIND).alias("group_kind"),
        pl.lit(True).alias("is_p2p"),
        "peer",
        (pl.col("tokens") * bytes_per_token).round().cast(pl.Int64).alias("bytes"),
        "start_ns",
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
    )
    return conform("comm_ops", frame)


def _step_breakdown(run_id: str, result: SimResult) -> pl.DataFrame:
    """One row per rank: the overlap accounting of its only step (trace_layout.rank_overlap)."""
    rows = [
        rank_overlap(result, rank).steps.with_columns(pl.lit(rank).alias("rank"))
        for rank in rank_ids(result)
    ]
    frame = (
        pl.concat(rows)
        .drop(WINDOW_COLUMNS)
        .with_columns(pl.lit(run_id).alias("run_id"), pl.lit(ORIGIN).alias("origin"))
    )
    return conform("step_breakdown", frame)


def rerun_tables(
    run_id: str,
    measured: Measured,
    result: SimResult,
    cost: str,
    comm: str,
    bytes_per_token: float = 0.0,
    ingested_at: Any = None,
) -> dict[str, pl.DataFrame]:
    """The canonical tables of one simulated rerun."""
    comm_frame = comm_ops(result)
    return {
        "runs": _runs_row(run_id, measured, result, cost, comm, ingested_at),
        "ranks": _ranks(run_id, result),
        "slices": _slices(run_id, result, comm_frame),
        "comm_ops": _comm_ops(run_id, comm_frame, bytes_per_token),
        "step_breakdown": _step_breakdown(run_id, result),
        "chunks": chunks_frame(result, run_id),
    }
