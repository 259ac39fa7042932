"""Where an advice's cost model comes from: a simulator preset, a stored run, a fitted tau_k line
or a latency table. Every source ends as the `model` argument of pipelines.sim.run.simulate (a
preset name or a StageCost) with the transfers and collectives that go with it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.sim import presets
from pipelines.sim.cost_models import StageCost
from pipelines.sim.fitted_cost import FittedCost


@dataclass(frozen=True)
class CostSource:
    """A cost model and how it was obtained. `model`: a preset name or a StageCost; `comm` and
    `collectives`: simulate's arguments ("preset" for a preset's figures, None for free)."""

    kind: str  # preset | run | curve | table
    label: str
    model: str | StageCost
    comm: Any = "preset"
    collectives: Any = "preset"
    notes: tuple[str, ...] = field(default_factory=tuple)

    def simulate_options(self) -> dict[str, Any]:
        return {"model": self.model, "comm": self.comm, "collectives": self.collectives}


def preset_source(model: str) -> CostSource:
    """A simulator preset (pipelines.sim.presets: its calibrated cost, links and collectives)."""
    if model not in presets.PRESET_NAMES:
        raise ValueError(f"unknown preset {model!r}; known: {', '.join(presets.PRESET_NAMES)}")
    hardware = presets.default_hardware(model)
    tp = presets.default_tp(model)
    return CostSource("preset", f"{model} preset ({hardware}, tp {tp})", model)


def run_source(session: Any, run_id: str) -> CostSource:
    """The cost a stored run's chunks imply: tau(c, p) fitted to every chunk as the replay's
    `fitted` cost (pipelines.sim.fitted_cost.FittedCost), with the model preset's overheads, layer
    split, links and collectives when the run's model is a preset (as `tracereplay replay`).
    ValueError (ReplayError) for an unknown run or one without chunks (`tracereplay chunks`)."""
    from pipelines.replay.store import load_measured, preset_figures

    measured = load_measured(session, run_id, extract=False)
    figures = preset_figures(measured, "auto")
    fit_args = {
        k: figures[k] for k in ("overheads", "num_layers", "stage_fractions") if k in figures
    }
    cost = FittedCost.from_chunks(measured.chunks, **fit_args)
    model = measured.run.get("model")
    is_preset = model in presets.PRESET_NAMES
    comm = presets.comm_model(model) if is_preset else None
    notes = [
        f"tau(c, p) fitted to {cost.fit_info['rows']} chunk timings (R² {cost.fit_info['r2']:.3f})"
    ]
    if cost.fit_info["overhead"] != "fitted":
        notes.append(
            f"one chunk size measured: per-call and fixed overheads {cost.fit_info['overhead']}"
        )
    if not is_preset:
        notes.append("transfers free (the run's model is not a simulator preset)")
    return CostSource(
        "run",
        f"run {run_id} ({model or 'model unknown'})",
        cost,
        comm,
        figures.get("collectives"),
        tuple(notes),
    )


def curve_source(a_ns: float, b_ns: float, chunk_tokens: int) -> CostSource:
    """A fitted full-model line tau_k = a + b k at one chunk size (FittedCost.from_tau_line):
    other chunk sizes follow tau(c, p) = alpha c + beta c (p + c/2), with no fixed per-call cost
    (one chunk size cannot identify it) and free transfers."""
    if not (a_ns > 0 and b_ns >= 0 and chunk_tokens > 0):
        raise ValueError("a curve needs a > 0 ns, b >= 0 ns and a chunk size > 0")
    if a_ns - b_ns / 2 <= 0:
        raise ValueError(
            f"a = {a_ns:g} ns is below b/2 = {b_ns / 2:g} ns: no tau(c, p) with a positive "
            "per-token term has this line"
        )
    cost = FittedCost.from_tau_line(a_ns, b_ns, chunk_tokens)
    label = f"curve tau_k = {a_ns / 1e6:.4g} ms + {b_ns / 1e6:.4g} ms k at {chunk_tokens} tokens"
    notes = (
        "no fixed per-call cost (one chunk size cannot identify it): small chunks look cheaper "
        "than they are",
        "transfers free",
    )
    return CostSource("curve", label, cost, None, None, notes)


SUM_OPERATORS = "sum"
"""--operator sum: the operators of a table added up per point (e.g. a Vidur attention file's
attn_prefill + reshapes + KV-cache save)."""


def read_latency_table(path: Path, operator: str | None = None) -> tuple[pl.DataFrame, int]:
    """The prefill points of an operator-latency table, read by the ingest's reader
    (pipelines.ingest.readers.latency_tables.read_table: Vidur's attention / MLP CSVs or the generic
    tokens / prefix / time layout of docs/latency_tables.md; bad rows set aside there). One
    operator is kept (`operator`, else the only one; `sum` adds them up per point), batch size 1
    (or none given) and rows with a prefix. Returns (tokens, prefix_tokens, busy_ns: the mean
    over repeats; the number of rows the reader set aside)."""
    from pipelines.ingest.readers.latency_tables import read_table

    try:
        table = read_table(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not readable ({exc})") from None
    points = table.points.filter(pl.col("batch_size").fill_null(1) == 1)
    names = sorted(str(v) for v in points["operator"].unique().to_list())
    if operator is None and len(names) > 1:
        raise ValueError(
            f"{path.name}: several operators ({', '.join(names)}); choose one or {SUM_OPERATORS}"
        )
    if operator not in (None, SUM_OPERATORS):
        if operator not in names:
            raise ValueError(f"{path.name}: no operator {operator!r} (has {', '.join(names)})")
        points = points.filter(pl.col("operator") == operator)
    points = points.filter(pl.col("prefix_tokens").is_not_null())
    frame = (
        points.group_by("operator", "tokens", "prefix_tokens")
        .agg(pl.col("time_ns").cast(pl.Float64).mean())
        .group_by("tokens", "prefix_tokens")
        .agg(pl.col("time_ns").sum().alias("busy_ns"), pl.len().alias("operators"))
        .filter(pl.col("operators") == pl.col("operators").max())  # every operator measured
        .select("tokens", "prefix_tokens", "busy_ns")
        .sort("tokens", "prefix_tokens")
    )
    if frame.height < 4:
        raise ValueError(
            f"{path.name}: need >= 4 prefill points with a prefix (batch size 1); a table "
            "without prefixes cannot say how a chunk's time grows with the prefix"
        )
    counts = (re.match(r"(\d+) entr", q.detail) for q in table.quarantined)
    return frame, sum(int(m.group(1)) for m in counts if m)


def table_source(path: Path, operator: str | None = None) -> CostSource:
    """A latency table's cost: tau(c, p) fitted to its rows (FittedCost.from_chunks, one stage
    holding the whole model); all four terms when it has two or more chunk sizes, else no fixed
    per-call cost. Transfers free, so a per-layer table ranks configurations as the whole model
    would (only the printed times scale)."""
    frame, left_out = read_latency_table(path, operator)
    chunks = frame.with_row_index("chunk_idx").with_columns(
        pl.lit(0).alias("rank"), pl.lit(0).alias("vstage"), pl.lit("table").alias("request_id")
    )
    cost = FittedCost.from_chunks(chunks)
    notes = [f"tau(c, p) fitted to {frame.height} rows (R² {cost.fit_info['r2']:.3f})"]
    if left_out:
        notes.append(f"{left_out} row(s) set aside by the table reader (docs/latency_tables.md)")
    if cost.fit_info["overhead"] != "fitted":
        notes.append("one chunk size (or too few points): no fixed per-call cost identified")
    notes.append("transfers free")
    label = f"latency table {path.name}" + (f" ({operator})" if operator else "")
    return CostSource("table", label, cost, None, None, tuple(notes))
