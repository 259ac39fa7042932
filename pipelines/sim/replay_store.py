"""Replay an ingested run under other schedules and store each rerun in the warehouse.

`replay_run(con, run_id, schedules)` reads the chunks (tau) measured in run `run_id`, re-simulates
its requests under every schedule with `pipelines.sim.run.replay`, and writes each simulated
rerun as a run of its own, `<run_id>~replay-<schedule>-<cost>` (source 'sim', replay_of =
run_id, the measured run's model, tp and hardware): runs, ranks, chunks (exact, from the
simulator), slices (one per compute / send / receive task), comm_ops and one step_breakdown row
per rank (origin 'sim'). The run id is deterministic and warehouse.write_run replaces a run's
rows, so replaying twice adds nothing. Returns the comparison of the reruns with the measured run.

Step breakdown of a rerun (one step = the run; metrics.ranks_frame's accounting, profiler names):
computing = |∪ compute|, communication = |∪ send/receive|, comm_not_overlapped = exposed comm,
overlapped, free = idle with nothing outstanding inside the rank's own first-to-last-task span,
bubble = Σ receive durations (the profiler's definition), stage = span − bubble, preparing = the
rank's first task start − the run's, p2p_bubble = exposed comm (|∪ p2p − ∪ compute|, ours).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb
import polars as pl

from pipelines import warehouse
from pipelines.ingest.frames import SCHEMAS, conform
from pipelines.sim.metrics import chunks_frame, ranks_frame, summarize
from pipelines.sim.replay_options import COMM_CHOICES, COSTS, REPLAY_SCHEDULES, SCHEDULE_CHOICES
from pipelines.sim.result import SimResult

SOURCE = "sim"
ORIGIN = "sim"
COMPUTE_NAME = "prefill_chunk"


class ReplayError(ValueError):
    """The run cannot be replayed (unknown, no chunks, bad option); the message says why."""


def replay_run_id(run_id: str, schedule: str, cost: str) -> str:
    """Deterministic id of the rerun of `run_id` under `schedule` with cost model `cost`."""
    return f"{run_id}~replay-{schedule}-{cost}"


@dataclass
class Measured:
    """The measured run: its runs row and its chunks."""

    run: dict[str, Any]
    chunks: pl.DataFrame

    @property
    def run_id(self) -> str:
        return str(self.run["run_id"])

    def makespan_ns(self) -> int:
        """First chunk start to last chunk end, over every rank."""
        return int(self.chunks["end_ns"].max()) - int(self.chunks["start_ns"].min())

    def ttft_mean_ns(self) -> float:
        """Mean over requests of last chunk end − first chunk start (the arrival time replay
        assumes: the request's first chunk start)."""
        per_request = self.chunks.group_by("request_id").agg(
            (pl.col("end_ns").max() - pl.col("start_ns").min()).alias("ttft")
        )
        return float(per_request["ttft"].mean())


@dataclass
class ReplayReport:
    """The measured run, one summary per replayed schedule, and what was written."""

    measured: Measured
    cost: str
    comm: str
    baseline: str  # what speed-up is relative to
    baseline_ns: float
    reruns: list[dict[str, Any]] = field(default_factory=list)
    results: dict[str, SimResult] = field(default_factory=dict)  # schedule -> rerun

    def rows(self) -> list[dict[str, Any]]:
        """Comparison rows: the measured run first, then one per schedule (times in ns)."""
        m = self.measured
        first = {
            "kind": "measured",
            "schedule": m.run.get("schedule"),
            "run_id": m.run_id,
            "makespan_ns": m.makespan_ns(),
            "ttft_mean_ns": m.ttft_mean_ns(),
            "bubble_ratio": None,
            "exposed_comm_ratio": None,
            "speedup": self.baseline_ns / m.makespan_ns(),
        }
        return [first, *self.reruns]

    def as_json(self) -> dict[str, Any]:
        return {
            "replay_of": self.measured.run_id,
            "model": self.measured.run.get("model"),
            "measured_schedule": self.measured.run.get("schedule"),
            "cost": self.cost,
            "comm": self.comm,
            "speedup_baseline": self.baseline,
            "rows": self.rows(),
        }


def load_measured(con: duckdb.DuckDBPyConnection, run_id: str, extract: bool = True) -> Measured:
    """The runs row and chunks of `run_id`; with `extract`, a run without stored chunks is
    segmented first (chunk_store.extract_chunks). Raises ReplayError when there are none."""
    run = con.execute("select * from runs where run_id = ?", [run_id]).pl()
    if run.is_empty():
        raise ReplayError(f"no run {run_id!r} in the warehouse (see `tracereplay chunks`)")
    query = "select * from chunks where run_id = ? order by rank, vstage, request_id, chunk_idx"
    chunks = con.execute(query, [run_id]).pl()
    if chunks.is_empty() and extract and run["source"][0] != SOURCE:
        from pipelines.analysis.chunk_store import extract_chunks

        extract_chunks(con, [run_id])
        chunks = con.execute(query, [run_id]).pl()
    if chunks.is_empty():
        raise ReplayError(
            f"run {run_id!r} has no chunks: its slices carry no chunk markers "
            "(chunk[req=..,k=..,vs=..] ranges, docs/tau_k.md), so there is no tau to replay"
        )
    return Measured(run.row(0, named=True), chunks)


def _comm_model(measured: Measured, comm: str, schedule: str):
    """The link model of the replay: the model preset's figures ('preset'; 'auto' when the
    measured model is a simulator preset) or free transfers ('none')."""
    from pipelines.sim import presets

    model = measured.run.get("model")
    if comm == "none" or (comm == "auto" and model not in presets.PRESET_NAMES):
        return None
    if model not in presets.PRESET_NAMES:
        raise ReplayError(f"--comm preset: model {model!r} is not a simulator preset")
    hardware = measured.run.get("hardware")
    hardware = hardware if hardware in presets.HARDWARE else None
    link = presets.comm_model(model, hardware, measured.run.get("tp"))
    return link.with_mode("async" if schedule in ("vpp_async", "vpp_pack") else "blocking")


def comm_label(measured: Measured, comm: str) -> str:
    from pipelines.sim import presets

    model = measured.run.get("model")
    if comm == "none" or (comm == "auto" and model not in presets.PRESET_NAMES):
        return "free transfers"
    return f"{model} preset link"


def simulate_reruns(
    measured: Measured,
    schedules: Sequence[str],
    cost: str = "tabulated",
    comm: str = "auto",
    vp: int = 2,
) -> dict[str, SimResult]:
    """The measured run's requests under each schedule (pipelines.sim.run.replay)."""
    from pipelines.sim.run import replay

    if cost not in COSTS:
        raise ReplayError(f"cost must be one of {', '.join(COSTS)}, not {cost!r}")
    if comm not in COMM_CHOICES:
        raise ReplayError(f"comm must be one of {', '.join(COMM_CHOICES)}, not {comm!r}")
    unknown = [s for s in schedules if s not in SCHEDULE_CHOICES]
    if unknown or not schedules:
        raise ReplayError(
            f"unknown schedule(s) {unknown or schedules}; choose from {', '.join(SCHEDULE_CHOICES)}"
        )
    chunk_size = measured.run.get("chunk_size")
    out = {}
    for schedule in schedules:
        try:
            out.update(
                replay(
                    measured.chunks,
                    [schedule],
                    cost=cost,
                    vp=vp,
                    chunk_size=int(chunk_size) if chunk_size else None,
                    comm=_comm_model(measured, comm, schedule),
                    model_name=measured.run.get("model") or "replay",
                )
            )
        except ValueError as exc:
            raise ReplayError(f"{schedule}: {exc}") from exc
    return out


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
    ranks = sorted(int(r) for r in result.tasks["rank"].unique().to_list())
    groups = json.dumps([{"name": "pp", "ranks": ranks}])
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


def _comm(result: SimResult) -> pl.DataFrame:
    from pipelines.sim.trace_layout import comm_ops

    return comm_ops(result)


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
            pl.lit(1).alias("step"),
        ).drop("end_ns"),
    )


def _comm_ops(run_id: str, comm: pl.DataFrame, bytes_per_token: float) -> pl.DataFrame:
    if comm.is_empty():
        return pl.DataFrame(schema=SCHEMAS["comm_ops"])
    frame = comm.select(
        pl.lit(run_id).alias("run_id"),
        "rank",
        pl.lit(1).alias("step"),
        "op",
        pl.when(pl.col("kind") == "send")
        .then(pl.lit("send"))
        .otherwise(pl.lit("receive"))
        .alias("op_type"),
        pl.lit("pp").alias("group_name"),
        pl.lit("pp").alias("group_kind"),
        pl.lit(True).alias("is_p2p"),
        "peer",
        (pl.col("tokens") * bytes_per_token).round().cast(pl.Int64).alias("bytes"),
        "start_ns",
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
    )
    return conform("comm_ops", frame)


def _step_breakdown(run_id: str, result: SimResult) -> pl.DataFrame:
    ranks = ranks_frame(result)
    tasks = result.tasks
    run_start = int(tasks["start_ns"].min())
    per_rank = tasks.group_by("rank").agg(
        pl.col("start_ns").min().alias("first_ns"),
        (pl.col("end_ns").max() - pl.col("start_ns").min()).alias("span_ns"),
        (pl.col("end_ns") - pl.col("start_ns"))
        .filter(pl.col("kind") == "recv")
        .sum()
        .alias("receive_ns"),
    )
    frame = ranks.join(per_rank, on="rank").select(
        pl.lit(run_id).alias("run_id"),
        "rank",
        pl.lit(1).alias("step"),
        pl.lit(ORIGIN).alias("origin"),
        pl.col("compute_ns").alias("computing_ns"),
        pl.col("comm_ns").alias("communication_ns"),
        pl.col("exposed_comm_ns").alias("comm_not_overlapped_ns"),
        "overlapped_ns",
        (pl.col("bubble_ns") - pl.col("edge_idle_ns")).alias("free_ns"),
        (pl.col("span_ns") - pl.col("receive_ns")).alias("stage_ns"),
        pl.col("receive_ns").alias("bubble_ns"),
        (pl.col("exposed_comm_ns") - pl.col("receive_ns"))
        .clip(lower_bound=0)
        .alias("comm_not_overlapped_excl_receive_ns"),
        (pl.col("first_ns") - run_start).alias("preparing_ns"),
        pl.col("exposed_comm_ns").alias("p2p_bubble_ns"),
        pl.lit(True).alias("complete"),  # exact: computed from every simulated task
        pl.lit(None, pl.String).alias("incomplete_reason"),
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
    comm_frame = _comm(result)
    return {
        "runs": _runs_row(run_id, measured, result, cost, comm, ingested_at),
        "ranks": _ranks(run_id, result),
        "slices": _slices(run_id, result, comm_frame),
        "comm_ops": _comm_ops(run_id, comm_frame, bytes_per_token),
        "step_breakdown": _step_breakdown(run_id, result),
        "chunks": chunks_frame(result, run_id),
    }


def _ingested_at(con: duckdb.DuckDBPyConnection, run_id: str, content_hash: str) -> Any:
    """Keep the first write time of an unchanged rerun (same content hash)."""
    row = con.execute(
        "select ingested_at from runs where run_id = ? and content_hash = ?", [run_id, content_hash]
    ).fetchone()
    return row[0] if row else None


def replay_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    schedules: Sequence[str] = REPLAY_SCHEDULES,
    *,
    cost: str = "tabulated",
    comm: str = "auto",
    vp: int = 2,
    write: bool = True,
) -> ReplayReport:
    """Replay run `run_id` under `schedules`, write each rerun (unless `write` is False) and
    return the comparison. Speed-up is relative to the rerun under the measured run's own
    schedule (simulated for the purpose if not asked for) when that is a pipeline schedule,
    else to the measured makespan."""
    measured = load_measured(con, run_id, extract=write)
    results = simulate_reruns(measured, schedules, cost, comm, vp)
    label = comm_label(measured, comm)
    own = measured.run.get("schedule")
    if own in SCHEDULE_CHOICES:
        base = results.get(own) or simulate_reruns(measured, [own], cost, comm, vp)[own]
        baseline, baseline_ns = f"replayed {own}", float(summarize(base)["makespan_ns"])
    else:
        baseline, baseline_ns = "measured makespan", float(measured.makespan_ns())
    report = ReplayReport(measured, cost, label, baseline, baseline_ns, results=results)
    for schedule, result in results.items():
        rerun_id = replay_run_id(run_id, schedule, cost)
        summary = summarize(result)
        rows: dict[str, int] = {}
        if write:
            link = _comm_model(measured, comm, schedule)
            tables = rerun_tables(
                rerun_id, measured, result, cost, label, link.bytes_per_token if link else 0.0
            )
            content_hash = tables["runs"]["content_hash"][0]
            first = _ingested_at(con, rerun_id, content_hash)
            if first is not None:
                tables["runs"] = tables["runs"].with_columns(
                    pl.lit(first).cast(pl.Datetime("us")).alias("ingested_at")
                )
            rows = warehouse.write_run(con, rerun_id, tables)
        report.reruns.append(
            {
                "kind": "replay",
                "schedule": schedule,
                "run_id": rerun_id,
                "makespan_ns": summary["makespan_ns"],
                "ttft_mean_ns": summary["ttft_mean_ns"],
                "bubble_ratio": summary["bubble_ratio"],
                "exposed_comm_ratio": summary["exposed_comm_ratio"],
                "speedup": baseline_ns / summary["makespan_ns"],
                "pp": summary["pp"],
                "vp": summary["vp"],
                "rows": rows,
            }
        )
    return report


def format_comparison(report: ReplayReport) -> str:
    """Fixed-width comparison table (seconds, percent)."""

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}"

    header = ("schedule", "makespan s", "TTFT s", "bubble %", "exposed comm %", "speed-up")
    rows = [
        (
            f"{r['schedule'] or '?'} (measured)" if r["kind"] == "measured" else r["schedule"],
            f"{r['makespan_ns'] / 1e9:.3f}",
            f"{r['ttft_mean_ns'] / 1e9:.3f}",
            pct(r["bubble_ratio"]),
            pct(r["exposed_comm_ratio"]),
            f"{r['speedup']:.3f}x",
        )
        for r in report.rows()
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    m = report.measured
    title = (
        f"replay of {m.run_id} (model {m.run.get('model')}, {m.chunks['rank'].n_unique()} ranks, "
        f"{m.chunks['request_id'].n_unique()} request(s), {m.chunks.height} measured chunks); "
        f"cost {report.cost}, {report.comm}; speed-up vs {report.baseline}"
    )
    return "\n".join([title, *(line.rstrip() for line in lines)])
