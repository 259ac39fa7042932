"""Fit every tau_k curve of a chunk table: group by configuration, fit, classify. Polars in/out.

Fixed-chunk curves are fitted against the chunk index k (pipelines.analysis.tau.fits) and get a
verdict of the taxonomy (pipelines.analysis.tau.verdicts); variable-chunk (DCPP) curves are
fitted by the cost law tau(c, p) (pipelines.analysis.tau.cost_law), verdict `cost_model`, never
judged against k. Every row carries a/b with its interval: the line's, or the one the law
implies at the nominal chunk size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits

from pipelines import schedule_kinds
from pipelines.analysis.tau.bubble_pred import EMPTY_PREDICTION, predict_bubbles
from pipelines.analysis.tau.cost_law import CostLawFit, fit_cost_law, law_text
from pipelines.analysis.tau.curve_keys import CURVE_KEYS
from pipelines.analysis.tau.fits import CurveFit, band_of, fit_stage_lines, with_prediction
from pipelines.analysis.tau.flattening import flat_bound
from pipelines.analysis.tau.table_points import is_table_id, request_chunks
from pipelines.analysis.tau.tau_points import flag_partial_chunks
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
LAW_VALUES = (
    *("alpha", "alpha_lo", "alpha_hi", "beta", "beta_lo", "beta_hi"),
    *("gamma", "gamma_lo", "gamma_hi", "r2", "sigma_rel", "c0"),
)
"""The cost law's columns (`law_<name>`: ns, ns/token, ns/pair), NaN on tau(k) rows."""
VERDICT_COLUMNS: dict[str, pl.DataType] = {
    "law": pl.String,
    **{f"law_{name}": pl.Float64 for name in LAW_VALUES},
    "knee_at": pl.String,
    "ab_flat_bound": pl.Float64,
}
"""Beside the CurveFit statistics: the law fitted (`tau(k)` or `tau(c,p)`), the cost law's
coefficients, where a knee is, and the a/b beyond which the curve would be `flattened`."""
VARIABLE_CHUNK_SCHEDULES = schedule_kinds.VARIABLE_CHUNKS
Progress = Callable[[int, int], None]
"""progress(configurations fitted, configurations in all)."""


def _points(chunks: pl.DataFrame, drop_partial: bool) -> pl.DataFrame:
    """The points to fit: one row per observed chunk, tau in `tau_ns`."""
    frame = chunks
    if "tau_ns" not in frame.columns:
        frame = frame.rename({"busy_ns": "tau_ns"})
    if drop_partial:
        if "is_partial" not in frame.columns:
            frame = flag_partial_chunks(frame)  # the rule of sql/intermediate/int_chunk_flags.sql
        # a variable-chunk curve keeps its shorter chunks: the cost law is a law of c as well
        variable = (
            pl.col("schedule").is_in(list(VARIABLE_CHUNK_SCHEDULES))
            if "schedule" in frame.columns
            else pl.lit(False)
        )
        frame = frame.filter(~pl.col("is_partial") | variable.fill_null(False))
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
    progress: Progress | None = None,
) -> pl.DataFrame:
    """One row per curve: the configuration keys, every CurveFit statistic, verdict, evidence.

    Input columns: the `keys` present in the frame (missing ones are treated as null), run_id,
    request_id, chunk_idx, tau_ns (or busy_ns), optionally tokens / is_partial
    (sql/intermediate/int_chunk_tau.sql produces exactly this). `progress(done, total)` is
    called after each configuration.
    """
    options = dict(keys=keys, drop_partial=drop_partial, level=level, n_boot=n_boot, seed=seed)
    return fit_curves_with_bands(chunks_with_config, thresholds, **options, progress=progress).fits


def fit_curves_with_bands(
    chunks_with_config: pl.DataFrame,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    *,
    keys: tuple[str, ...] = CURVE_KEYS,
    drop_partial: bool = True,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    progress: Progress | None = None,
) -> CurveFits:
    """fit_curves, and each curve's line band from the same line models (the dashboards draw
    it; a few numpy operations per curve next to its fit).

    BLAS runs on one thread here: a curve's matrices are at most a few hundred wide, where
    OpenBLAS's threads only wait on each other (a 20 x 20 triangular solve took 12 ms with 2
    threads on the shared 2-core machine, 0.02 ms with one; 50 aiconfigurator curves 19.0 s ->
    5.6 s, the same numbers: docs/tau_k.md §4 "Fitting a whole table")."""
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit_curves_with_bands(
            chunks_with_config, thresholds, keys, drop_partial, level, n_boot, seed, progress
        )


def _fit_curves_with_bands(
    chunks_with_config: pl.DataFrame,
    thresholds: Thresholds,
    keys: tuple[str, ...],
    drop_partial: bool,
    level: float,
    n_boot: int,
    seed: int,
    progress: Progress | None,
) -> CurveFits:
    points = _points(chunks_with_config, drop_partial)
    present = [key for key in keys if key in points.columns]
    # a configuration's stage curves are fitted together: its predicted VPP bubble comes from
    # all of them (bubble_pred.predict_bubbles), each stage with its own bootstrap stream
    config = [key for key in present if key != "vstage"]
    staged = "vstage" in present
    # one pass over the points for every configuration (iterating a group_by gathers each
    # group from the whole frame: ~10 ms a configuration on a table's 100,000 points)
    groups = (
        points.partition_by(config, maintain_order=True, as_dict=True).items()
        if config
        else [((), points)]
    )
    total = points.select(config).n_unique() if config and progress else 1
    rows, band_columns = [], {c: [] for c in (*present, "chunk_idx", *BAND_VALUES)}
    for done, (config_key, config_points) in enumerate(groups):
        if progress is not None:
            progress(done, total)
        key = dict(zip(config, config_key if config else (), strict=True))
        if key.get("schedule") in VARIABLE_CHUNK_SCHEDULES:
            rows += _cost_law_rows(key, config_points, staged, thresholds, level)
            continue
        by_stage = (
            config_points.sort("vstage").partition_by("vstage", maintain_order=True)
            if staged
            else [config_points]
        )
        fits, stages, tables = [], [], []
        for index, group in enumerate(by_stage):
            group, order = _in_content_order(group)
            k = group.get_column("chunk_idx").to_numpy()
            run_ids = group.get_column("run_id").to_numpy()
            tables.append(_table_points(run_ids))
            fit, stage, lines = fit_stage_lines(
                k,
                group.get_column("tau_ns").to_numpy(),
                order,
                level=level,
                n_boot=n_boot,
                seed=seed + 7919 * index,
                independent=tables[-1],
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
        for (key, fit), stage, table in zip(fits, stages, tables, strict=True):
            if stage is not None:  # alone: this curve as four equal virtual stages
                fit = with_prediction(fit, prediction or predict_bubbles([stage], level))
            # a table curve is a request of seq_len tokens: its N, whatever its grid measured
            n_chunks = request_chunks(key.get("seq_len"), key.get("chunk_size")) if table else None
            verdict = classify(fit, thresholds, n_chunks=n_chunks)
            rows.append(
                {
                    **key,
                    **fit.as_dict(),
                    "law": "tau(k)",
                    **{f"law_{name}": float("nan") for name in LAW_VALUES},
                    "knee_at": verdict.knee_at or None,
                    "ab_flat_bound": verdict.flat_bound,
                    "verdict": verdict.label,
                    "evidence": verdict.evidence,
                }
            )
    if progress is not None:
        progress(total, total)
    key_schema = {key: points.schema[key] for key in present}
    schema = {
        **key_schema,
        **FIT_COLUMNS,
        **VERDICT_COLUMNS,
        "verdict": pl.String,
        "evidence": pl.String,
    }
    result = pl.DataFrame(rows, schema=schema)
    result = result.sort(present, nulls_last=True) if present else result
    band_schema = {**key_schema, "chunk_idx": pl.Int64, **dict.fromkeys(BAND_VALUES, pl.Float64)}
    bands = pl.DataFrame(band_columns, schema=band_schema) if rows else pl.DataFrame()
    return CurveFits(result, bands)


def _in_content_order(group: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    """A curve's points with its runs in the order of their own points (chunk indexes and tau
    in chunk order), and each point's run as its place in that order: the fit of a set of runs
    does not depend on their ids, which hold where their folders lay (the same bytes ingested
    from two folders, as the demo and Dagster do, are fitted to the same last bit). Runs of
    identical points keep their id order; swapping them changes no number. Within a run, the
    points of one chunk index (several requests) go by request id, then time: the rows' order
    as read (a lake's files come in no set order) must change no number either."""
    within = [c for c in ("chunk_idx", "request_id", "tau_ns") if c in group.columns]
    points = group.sort(within)
    content = {
        str(run_id): (sub.get_column("chunk_idx").to_list(), sub.get_column("tau_ns").to_list())
        for (run_id,), sub in points.partition_by("run_id", as_dict=True).items()
    }
    rank = {run_id: i for i, run_id in enumerate(sorted(content, key=lambda r: (content[r], r)))}
    ordered = group.with_columns(
        pl.col("run_id").replace_strict(rank, return_dtype=pl.Int64).alias("_run_order")
    ).sort("_run_order", *within)
    return ordered.drop("_run_order"), ordered.get_column("_run_order").to_numpy()


def _table_points(run_ids: np.ndarray) -> bool:
    """Whether a curve's points are an operator-latency table's: separate measurements of
    separate (tokens, prefix) points, fitted without serial correlation (fits._noise_model)."""
    return len(run_ids) > 0 and all(is_table_id(str(run_id)) for run_id in set(run_ids))


def _cost_law_rows(
    key: dict, points: pl.DataFrame, staged: bool, thresholds: Thresholds, level: float
) -> list[dict]:
    """One row per stage of a variable-chunk configuration: the cost law tau(c, p) and the
    affine tau_k it implies at the nominal chunk size (intercept, slope, a/b with Fieller's
    interval); verdict `cost_model`, `too_short` (fewer than cost_law.MIN_POINTS distinct
    (c, p)) or `too_noisy` (R^2 below Thresholds.min_r2)."""
    rows = []
    stages = (
        points.sort("vstage").partition_by("vstage", maintain_order=True) if staged else [points]
    )
    for group in stages:
        stage_key = dict(key)
        if staged:
            stage_key["vstage"] = group.get_column("vstage")[0]
        tokens = _column(group, "tokens")
        prefix = _column(group, "prefix_tokens", "prefix")
        c0 = key.get("chunk_size")
        law = fit_cost_law(
            tokens,
            prefix,
            group.get_column("tau_ns").to_numpy().astype(float),
            group.get_column("run_id").to_numpy(),
            c0=float(c0) if c0 else None,
            level=level,
        )
        k = group.get_column("chunk_idx").to_numpy()
        verdict, evidence = _law_verdict(law, thresholds)
        n = int(k.max()) + 1 if len(k) else 0
        rows.append(
            {
                **stage_key,
                **_law_fit_row(law, k, group.get_column("tau_ns").to_numpy(), level),
                "law": "tau(c,p)",
                **{f"law_{name}": float(getattr(law, name)) for name in LAW_VALUES},
                "knee_at": None,
                "ab_flat_bound": flat_bound(n, thresholds.flat_gain_share) if n else float("nan"),
                "verdict": verdict,
                "evidence": evidence,
            }
        )
    return rows


def _column(group: pl.DataFrame, *names: str) -> np.ndarray:
    for name in names:
        if name in group.columns:
            return group.get_column(name).cast(pl.Float64).fill_null(float("nan")).to_numpy()
    return np.full(group.height, np.nan)


def _law_verdict(law: CostLawFit, th: Thresholds) -> tuple[str, str]:
    if not law.usable:
        return "too_short", (
            f"variable chunk sizes: fitted by tau(c, p), not against k; {law.n_cp} distinct "
            f"(tokens, prefix) points < 5 (chunk markers need tokens= and prefix=)"
        )
    text = law_text(law)
    if not law.r2 >= th.min_r2:
        return "too_noisy", f"R2 {law.r2:.2f} < {th.min_r2}: {text}"
    return "cost_model", f"variable chunk sizes, fitted by the cost law: {text}"


def _law_fit_row(law: CostLawFit, k: np.ndarray, tau: np.ndarray, level: float) -> dict:
    """The CurveFit columns of a cost-law row: counts, the implied line at c0 and its a/b; the
    shape tests and the VPP predictions of tau(k) do not apply (NaN)."""
    row: dict = {name: float("nan") for name in FIT_COLUMNS}
    row.update(asdict(EMPTY_PREDICTION))
    row.update(
        n_runs=law.n_runs,
        n_points=law.n_points,
        n_k=len(np.unique(k)),
        k_min=int(k.min()) if len(k) else -1,
        k_max=int(k.max()) if len(k) else -1,
        mean_tau=float(np.mean(tau)) if len(tau) else float("nan"),
        level=level,
        ci_method=f"tau(c,p) law at c={law.c0:.0f}: {law.method}",
        intercept=law.a,
        intercept_lo=law.a_lo,
        intercept_hi=law.a_hi,
        slope=law.b,
        slope_lo=law.b_lo,
        slope_hi=law.b_hi,
        r2=law.r2,
        sigma_rel=law.sigma_rel,
        ab_ratio=law.ab,
        ab_lo=law.ab_lo,
        ab_hi=law.ab_hi,
        ba_lo=law.ba_lo,
        ba_hi=law.ba_hi,
        balance_method="none",
        n_outliers=0,
        outliers="",
    )
    for name, dtype in FIT_COLUMNS.items():
        if dtype == pl.String and not isinstance(row.get(name), str):
            row[name] = ""
        if dtype == pl.Int64 and not isinstance(row.get(name), int):
            row[name] = None
    return row
