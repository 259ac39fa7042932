"""Fit every tau_k curve of a chunk table: group by configuration, fit, classify. Polars in/out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.analysis.tau.bubble_pred import predict_bubbles
from pipelines.analysis.tau.curve_keys import CURVE_KEYS
from pipelines.analysis.tau.fits import CurveFit, band_of, fit_stage_lines, with_prediction
from pipelines.analysis.tau.verdicts import DEFAULT_THRESHOLDS, Thresholds, classify

BAND_VALUES = ("fit_ns", "lo_ns", "hi_ns")
"""The band's columns per chunk index: the fitted line and its pointwise interval, ns."""

FIT_COLUMNS: dict[str, pl.DataType] = {
    name: (
        pl.Int64
        if field.type in ("int", int)
        else pl.String
        if field.type in ("str", str)
        else pl.Float64
    )
    for name, field in CurveFit.__dataclass_fields__.items()
}


def _points(chunks: pl.DataFrame, drop_partial: bool) -> pl.DataFrame:
    """The points to fit: one row per observed chunk, tau in `tau_ns`."""
    frame = chunks
    if "tau_ns" not in frame.columns:
        frame = frame.rename({"busy_ns": "tau_ns"})
    if drop_partial:
        if "is_partial" not in frame.columns:
            from pipelines.analysis.tau.tau_points import flag_partial_chunks

            frame = flag_partial_chunks(frame)  # the rule of sql/intermediate/int_chunk_flags.sql
        frame = frame.filter(~pl.col("is_partial"))
    return frame.filter(pl.col("tau_ns").is_not_null())


def _stages_of_one_pipeline(key: dict, count: int) -> bool:
    """Whether a configuration's `count` stage curves are the stages of one P = 2 pipeline:
    2 CPP ranks (vp 1) or 4 VPP virtual stages (vp 2); without pp/vp keys, judged by the count."""
    pp, vp = key.get("pp"), key.get("vp")
    if pp is None and vp is None:
        return count in (2, 4)
    return pp == 2 and ((vp in (None, 1) and count == 2) or (vp == 2 and count == 4))


@dataclass(frozen=True)
class CurveFits:
    """fit_curves' table and, per curve, the fitted line with its pointwise interval at each
    observed chunk index (fits.band_of: keys, chunk_idx, fit_ns, lo_ns, hi_ns)."""

    fits: pl.DataFrame
    bands: pl.DataFrame


def fit_curves(
    chunks_with_config: pl.DataFrame,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    *,
    keys: tuple[str, ...] = CURVE_KEYS,
    drop_partial: bool = True,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> pl.DataFrame:
    """One row per curve: the configuration keys, every CurveFit statistic, verdict, evidence.

    Input columns: the `keys` present in the frame (missing ones are treated as null), run_id,
    request_id, chunk_idx, tau_ns (or busy_ns), optionally tokens / is_partial
    (sql/intermediate/int_chunk_tau.sql produces exactly this).
    """
    options = dict(keys=keys, drop_partial=drop_partial, level=level, n_boot=n_boot, seed=seed)
    return fit_curves_with_bands(chunks_with_config, thresholds, **options).fits


def fit_curves_with_bands(
    chunks_with_config: pl.DataFrame,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    *,
    keys: tuple[str, ...] = CURVE_KEYS,
    drop_partial: bool = True,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> CurveFits:
    """fit_curves, and each curve's line band from the same line models (the dashboards draw
    it; a few numpy operations per curve next to its fit)."""
    points = _points(chunks_with_config, drop_partial)
    present = [key for key in keys if key in points.columns]
    # a configuration's stage curves are fitted together: its predicted VPP bubble comes from
    # all of them (bubble_pred.predict_bubbles), each stage with its own bootstrap stream
    config = [key for key in present if key != "vstage"]
    staged = "vstage" in present
    groups = points.group_by(config, maintain_order=True) if config else [((), points)]
    rows, band_columns = [], {c: [] for c in (*present, "chunk_idx", *BAND_VALUES)}
    for config_key, config_points in groups:
        by_stage = (
            config_points.sort("vstage").partition_by("vstage", maintain_order=True)
            if staged
            else [config_points]
        )
        fits, stages = [], []
        for index, group in enumerate(by_stage):
            group = group.sort("run_id", "chunk_idx")
            k = group.get_column("chunk_idx").to_numpy()
            fit, stage, lines = fit_stage_lines(
                k,
                group.get_column("tau_ns").to_numpy(),
                group.get_column("run_id").to_numpy(),
                level=level,
                n_boot=n_boot,
                seed=seed + 7919 * index,
            )
            key = dict(zip(config, config_key if config else (), strict=True))
            if staged:
                key["vstage"] = group.get_column("vstage")[0]
            fits.append((key, fit))
            stages.append(stage)
            if lines:
                grid, *values = band_of(np.unique(k.astype(float)), lines, level)
                band_columns["chunk_idx"].extend(grid.astype(np.int64).tolist())
                for name, column in zip(BAND_VALUES, values, strict=True):
                    band_columns[name].extend(column.tolist())
                for name in present:
                    band_columns[name].extend([key[name]] * len(grid))
        together = _stages_of_one_pipeline(fits[0][0], len(stages)) and None not in stages
        prediction = predict_bubbles(stages, level) if together else None
        for (key, fit), stage in zip(fits, stages, strict=True):
            if stage is not None:  # alone: this curve as four equal virtual stages
                fit = with_prediction(fit, prediction or predict_bubbles([stage], level))
            verdict = classify(fit, thresholds)
            rows.append(
                {**key, **fit.as_dict(), "verdict": verdict.label, "evidence": verdict.evidence}
            )
    key_schema = {key: points.schema[key] for key in present}
    schema = {**key_schema, **FIT_COLUMNS, "verdict": pl.String, "evidence": pl.String}
    result = pl.DataFrame(rows, schema=schema)
    result = result.sort(present, nulls_last=True) if present else result
    band_schema = {**key_schema, "chunk_idx": pl.Int64, **dict.fromkeys(BAND_VALUES, pl.Float64)}
    bands = pl.DataFrame(band_columns, schema=band_schema) if rows else pl.DataFrame()
    return CurveFits(result, bands)
