"""Where an advice's cost model comes from: a simulator preset, a stored run, a fitted tau_k line
or a latency table. Every source ends as the `model` argument of pipelines.sim.run.simulate (a
preset name or a StageCost) with the transfers and collectives that go with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.sim import presets
from pipelines.sim.costs import StageCost
from pipelines.sim.measured import FittedCost


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
    `fitted` cost (pipelines.sim.measured.FittedCost), with the model preset's overheads, layer
    split, links and collectives when the run's model is a preset (as `tracereplay replay`).
    ValueError (ReplayError) for an unknown run or one without chunks (`tracereplay chunks`)."""
    from pipelines.replay.store import _preset_figures, load_measured

    measured = load_measured(session, run_id, extract=False)
    figures = _preset_figures(measured, "auto")
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


TABLE_TIME_COLUMNS = {"time_ns": 1.0, "time_us": 1e3, "time_ms": 1e6}


def read_latency_table(path: Path, operator: str | None = None) -> tuple[pl.DataFrame, int]:
    """A generic latency table (CSV or Parquet, the layout of docs/latency_tables.md): `tokens`
    (chunk tokens), `prefix` or `prefix_tokens` (tokens already in the KV cache), one of time_ns /
    time_us / time_ms, and optionally `operator` (one is chosen: `operator`, else the only one).
    Returns (tokens, prefix_tokens, busy_ns; the number of rows left out: a cell that is not a
    number, tokens < 1, prefix < 0 or a time <= 0, as ingest quarantines them)."""
    try:
        frame = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable CSV or Parquet table ({exc})") from None
    if "operator" in frame.columns:
        names = sorted(str(v) for v in frame["operator"].unique().to_list())
        if operator is None and len(names) > 1:
            raise ValueError(f"{path}: several operators ({', '.join(names)}); choose one")
        if operator is not None:
            if operator not in names:
                raise ValueError(f"{path}: no operator {operator!r} (has {', '.join(names)})")
            frame = frame.filter(pl.col("operator") == operator)
    elif operator is not None:
        raise ValueError(f"{path}: no operator column")
    if "prefix" in frame.columns and "prefix_tokens" not in frame.columns:
        frame = frame.rename({"prefix": "prefix_tokens"})
    unit = next((c for c in TABLE_TIME_COLUMNS if c in frame.columns), None)
    missing = [c for c in ("tokens", "prefix_tokens") if c not in frame.columns]
    if missing or unit is None:
        need = ", ".join(missing + ([] if unit else ["time_ns|time_us|time_ms"]))
        raise ValueError(f"{path}: latency table lacks {need}")
    rows = frame.height
    frame = (
        frame.select(
            pl.col("tokens").cast(pl.Float64, strict=False),
            pl.col("prefix_tokens").cast(pl.Float64, strict=False),
            (pl.col(unit).cast(pl.Float64, strict=False) * TABLE_TIME_COLUMNS[unit]).alias(
                "busy_ns"
            ),
        )
        .filter(
            (pl.col("tokens") >= 1)
            & (pl.col("tokens") == pl.col("tokens").floor())
            & (pl.col("prefix_tokens") >= 0)
            & (pl.col("prefix_tokens") == pl.col("prefix_tokens").floor())
            & (pl.col("busy_ns") > 0)
            & pl.col("busy_ns").is_finite()
        )
        .with_columns(pl.col("tokens", "prefix_tokens").cast(pl.Int64))
    )
    if frame.height < 4:
        raise ValueError(f"{path}: need >= 4 usable rows (tokens, prefix, a positive time)")
    return frame, rows - frame.height


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
        notes.append(f"{left_out} row(s) left out: not a number, or out of range")
    if cost.fit_info["overhead"] != "fitted":
        notes.append("one chunk size (or too few points): no fixed per-call cost identified")
    notes.append("transfers free")
    label = f"latency table {path.name}" + (f" ({operator})" if operator else "")
    return CostSource("table", label, cost, None, None, tuple(notes))
