"""Replay an ingested run under other schedules and store each rerun in the warehouse.

`replay_run(session, run_id, schedules)` reads the chunks (tau) measured in run `run_id`,
re-simulates its requests under every schedule (pipelines.replay.rerun.replay), converts each
simulated rerun to the canonical tables (pipelines.replay.tables.rerun_tables: runs, ranks,
chunks, slices, comm_ops, step_breakdown) and writes it as a run of its own,
`<run_id>~replay-<schedule>-<cost>` (source 'sim', replay_of = run_id, the measured run's model,
tp and hardware). The run id is deterministic and a store session's write_run replaces a run's
rows, so replaying twice adds nothing. Returns the comparison of the reruns with the measured run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import polars as pl

from pipelines import schedule_kinds
from pipelines.analysis.chunks.chunk_store import extract_chunks
from pipelines.replay.measured_run import Measured
from pipelines.replay.options import COMM_CHOICES, COSTS, REPLAY_SCHEDULES, SCHEDULE_CHOICES
from pipelines.replay.rerun import replay
from pipelines.replay.tables import SOURCE, rerun_tables
from pipelines.sim import presets
from pipelines.sim.layout import fold_back_layout
from pipelines.sim.metrics import summarize
from pipelines.sim.result import SimResult
from pipelines.store import Session, queries


class ReplayError(ValueError):
    """The run cannot be replayed (unknown, no chunks, bad option); the message says why."""


def replay_run_id(run_id: str, schedule: str, cost: str) -> str:
    """Deterministic id of the rerun of `run_id` under `schedule` with cost model `cost`."""
    return f"{run_id}~replay-{schedule}-{cost}"


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

    def notes(self) -> list[str]:
        """What the replay had to assume, once each (e.g. "DCPP extrapolates chunk size:
        overhead from preset")."""
        notes = (r.meta.get("replay_note") for r in self.results.values())
        return sorted({n for n in notes if n})

    def as_json(self) -> dict[str, Any]:
        return {
            "replay_of": self.measured.run_id,
            "model": self.measured.run.get("model"),
            "measured_schedule": self.measured.run.get("schedule"),
            "cost": self.cost,
            "comm": self.comm,
            "speedup_baseline": self.baseline,
            "notes": self.notes(),
            "rows": self.rows(),
        }


def load_measured(session: Session, run_id: str, extract: bool = True) -> Measured:
    """The runs row and chunks of `run_id`; with `extract`, a run without stored chunks is
    segmented first (chunk_store.extract_chunks). Raises ReplayError when there are none."""
    run = session.run_row(run_id)
    if run.is_empty():
        raise ReplayError(f"no run {run_id!r} in the warehouse (see `tracereplay chunks`)")
    chunks = queries.run_chunks(session.con, run_id)
    if chunks.is_empty() and extract and run["source"][0] != SOURCE:
        extract_chunks(session, [run_id])
        chunks = queries.run_chunks(session.con, run_id)
    if chunks.is_empty():
        raise ReplayError(
            f"run {run_id!r} has no chunks: its slices carry no chunk markers "
            "(chunk[req=..,k=..,vs=..] ranges, docs/tau_k.md), so there is no tau to replay"
        )
    return Measured(run.row(0, named=True), chunks)


def _comm_model(measured: Measured, comm: str, schedule: str):
    """The link model of the replay: the model preset's figures ('preset'; 'auto' when the
    measured model is a simulator preset) or free transfers ('none')."""

    model = measured.run.get("model")
    if comm == "none" or (comm == "auto" and model not in presets.PRESET_NAMES):
        return None
    if model not in presets.PRESET_NAMES:
        raise ReplayError(f"--comm preset: model {model!r} is not a simulator preset")
    hardware = measured.run.get("hardware")
    hardware = hardware if hardware in presets.HARDWARE else None
    link = presets.comm_model(model, hardware, measured.run.get("tp"))
    return link.with_mode("async" if schedule_kinds.is_async(schedule) else "blocking")


def comm_label(measured: Measured, comm: str) -> str:
    model = measured.run.get("model")
    if comm == "none" or (comm == "auto" and model not in presets.PRESET_NAMES):
        return "free transfers"
    return f"{model} preset link"


def preset_figures(measured: Measured, comm: str) -> dict[str, Any]:
    """For a run of a simulator preset: the overheads one chunk size cannot identify, the
    preset's layer count and the measured run's layer split, and (unless comm is 'none') its
    TP / EP collectives. Empty for other models."""
    model = measured.run.get("model")
    if model not in presets.MODELS:
        return {}
    hardware = measured.run.get("hardware")
    hardware = hardware if hardware in presets.HARDWARE else None
    tp = measured.run.get("tp")
    tp = int(tp) if tp else None
    layers = presets.MODELS[model].layers
    pp = measured.chunks["rank"].n_unique()
    vp = max(int(measured.chunks["vstage"].max()) + 1, pp) // pp
    ranges = fold_back_layout(layers, pp, vp).layer_ranges
    out: dict[str, Any] = {
        "overheads": presets.replay_overheads(model, hardware, tp),
        "num_layers": layers,
        "stage_fractions": {g: (hi - lo) / layers for g, (lo, hi) in enumerate(ranges)},
    }
    if comm != "none":
        out["collectives"] = presets.collective_model(model, hardware, tp)
    return out


def simulate_reruns(
    measured: Measured,
    schedules: Sequence[str],
    cost: str = "tabulated",
    comm: str = "auto",
    vp: int = 2,
    host_call_ns: float = 0.0,
) -> dict[str, SimResult]:
    """The measured run's requests under each schedule (pipelines.sim.run.replay);
    `host_call_ns`: host time per stage call outside busy_ns (pipelines.replay.host_time)."""

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
    preset = preset_figures(measured, comm)
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
                    host_call_ns=host_call_ns,
                    **preset,
                )
            )
        except ValueError as exc:
            raise ReplayError(f"{schedule}: {exc}") from exc
    return out


def _ingested_at(con: duckdb.DuckDBPyConnection, run_id: str, content_hash: str) -> Any:
    """Keep the first write time of an unchanged rerun (same content hash)."""
    return queries.ingested_at(con, run_id, content_hash)


def replay_run(
    session: Session,
    run_id: str,
    schedules: Sequence[str] = REPLAY_SCHEDULES,
    *,
    cost: str = "tabulated",
    comm: str = "auto",
    vp: int = 2,
    write: bool = True,
    host_call_ns: float = 0.0,
) -> ReplayReport:
    """Replay run `run_id` under `schedules`, write each rerun (unless `write` is False) and
    return the comparison. Speed-up is relative to the rerun under the measured run's own
    schedule (simulated for the purpose if not asked for) when that is a pipeline schedule,
    else to the measured makespan. `host_call_ns` is charged on every stage call besides its
    measured busy time (pipelines.replay.host_time)."""
    measured = load_measured(session, run_id, extract=write)
    results = simulate_reruns(measured, schedules, cost, comm, vp, host_call_ns)
    label = comm_label(measured, comm)
    own = measured.run.get("schedule")
    if own in SCHEDULE_CHOICES:
        base = (
            results.get(own) or simulate_reruns(measured, [own], cost, comm, vp, host_call_ns)[own]
        )
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
            first = _ingested_at(session.con, rerun_id, content_hash)
            if first is not None:
                tables["runs"] = tables["runs"].with_columns(
                    pl.lit(first).cast(pl.Datetime("us")).alias("ingested_at")
                )
            rows = session.write_run(rerun_id, tables)
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
    notes = [f"note: {n}" for n in report.notes()]
    return "\n".join([title, *(line.rstrip() for line in lines), *notes])
