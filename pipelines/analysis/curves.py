"""Fit every tau_k curve of a chunk table: group by configuration, fit, classify. Polars in/out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.analysis.bubble_pred import predict_bubbles
from pipelines.analysis.curve_keys import CURVE_KEYS
from pipelines.analysis.fits import CurveFit, band_of, fit_stage_lines, with_prediction
from pipelines.analysis.verdicts import DEFAULT_THRESHOLDS, Thresholds, classify

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
            from pipelines.analysis.tau_points import flag_partial_chunks

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
    return _fit_all(chunks_with_config, thresholds, bands=False, **options).fits


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
    """fit_curves, and each curve's line band from the same fit (the dashboards draw it)."""
    options = dict(keys=keys, drop_partial=drop_partial, level=level, n_boot=n_boot, seed=seed)
    return _fit_all(chunks_with_config, thresholds, bands=True, **options)


def _fit_all(
    chunks_with_config: pl.DataFrame,
    thresholds: Thresholds,
    *,
    keys: tuple[str, ...],
    drop_partial: bool,
    level: float,
    n_boot: int,
    seed: int,
    bands: bool,
) -> CurveFits:
    points = _points(chunks_with_config, drop_partial)
    present = [key for key in keys if key in points.columns]
    # a configuration's stage curves are fitted together: its predicted VPP bubble comes from
    # all of them (bubble_pred.predict_bubbles), each stage with its own bootstrap stream
    config = [key for key in present if key != "vstage"]
    staged = "vstage" in present
    groups = points.group_by(config, maintain_order=True) if config else [((), points)]
    rows, band_frames = [], []
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
            if bands and lines:
                grid, centre, lo, hi = band_of(np.unique(k.astype(float)), lines, level)
                band = {"chunk_idx": grid.astype(np.int64), "fit_ns": centre}
                band_frames.append(
                    pl.DataFrame({**band, "lo_ns": lo, "hi_ns": hi}).with_columns(
                        pl.lit(v, dtype=points.schema[c]).alias(c) for c, v in key.items()
                    )
                )
        together = _stages_of_one_pipeline(fits[0][0], len(stages)) and None not in stages
        prediction = predict_bubbles(stages, level) if together else None
        for (key, fit), stage in zip(fits, stages, strict=True):
            if stage is not None:  # alone: this curve as four equal virtual stages
                fit = with_prediction(fit, prediction or predict_bubbles([stage], level))
            verdict = classify(fit, thresholds)
            rows.append(
                {**key, **fit.as_dict(), "verdict": verdict.label, "evidence": verdict.evidence}
            )
    schema = {
        **{key: points.schema[key] for key in present},
        **FIT_COLUMNS,
        "verdict": pl.String,
        "evidence": pl.String,
    }
    result = pl.DataFrame(rows, schema=schema)
    result = result.sort(present, nulls_last=True) if present else result
    band = (
        pl.concat(band_frames, how="diagonal_relaxed").select(
            *present, "chunk_idx", "fit_ns", "lo_ns", "hi_ns"
        )
        if band_frames
        else pl.DataFrame()
    )
    return CurveFits(result, band)
