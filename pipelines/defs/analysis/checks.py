"""Checks on the tau_k verdicts: dense-attention models stay linear, the DSA model is flagged.

A verdict in `flagged_verdicts` says tau_k is not (k+1)t-like: bent (kinked, convex, concave) or
with a collapsed slope (linear_offset, what DSA's top-k attention does past 2048 keys).
too_noisy and too_short decide nothing: they are listed, never counted either way. Models are
matched by case-insensitive glob patterns on runs.model; a check with no matching curve passes
and says so in its metadata.
"""

from fnmatch import fnmatch

import dagster as dg
import polars as pl

from pipelines import warehouse_queries
from pipelines.defs.analysis.assets import FIT_TABLE, tau_fits
from pipelines.defs.metadata import markdown_frame
from pipelines.defs.resources import WarehouseResource

FLAGGED_VERDICTS = ["linear_offset", "kinked", "convex", "concave"]
INCONCLUSIVE_VERDICTS = ("too_noisy", "too_short")
SHOWN = ("model", "schedule", "chunk_size", "seq_len", "vstage", "n_runs", "verdict", "evidence")


class ModelVerdictConfig(dg.Config):
    """Which models the check covers (glob patterns) and which verdicts flag a curve."""

    models: list[str]
    flagged_verdicts: list[str] = FLAGGED_VERDICTS


class DenseLinearConfig(ModelVerdictConfig):
    models: list[str] = ["qwen*", "deepseek-v3.1*", "llama*"]  # noqa: RUF012


class DsaFlaggedConfig(ModelVerdictConfig):
    models: list[str] = ["glm-5*", "deepseek-v3.2*"]  # noqa: RUF012


def curves_of(fits: pl.DataFrame, patterns: list[str]) -> pl.DataFrame:
    """Fit rows whose model matches one of the glob patterns (case-insensitive)."""
    lowered = [p.lower() for p in patterns]
    models = fits["model"].drop_nulls().unique().to_list()
    matched = [m for m in models if any(fnmatch(m.lower(), p) for p in lowered)]
    return fits.filter(pl.col("model").is_in(matched))


def _load_fits(warehouse: WarehouseResource) -> pl.DataFrame | None:
    """The fit table, or None when tau_fits has never been materialised in this warehouse."""
    if not warehouse.file.exists():
        return None
    with warehouse.connect(read_only=True) as con:
        found = warehouse_queries.relation_exists(con, FIT_TABLE)
        return warehouse_queries.read_relation(con, FIT_TABLE) if found else None


def _missing(config: ModelVerdictConfig, severity: dg.AssetCheckSeverity) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=False,
        severity=severity,
        description=f"no {FIT_TABLE} table in the warehouse: materialise tau_fits first",
        metadata={"models": ", ".join(config.models)},
    )


def _shown(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(c for c in SHOWN if c in frame.columns)


def _result(
    passed: bool,
    severity: dg.AssetCheckSeverity,
    config: ModelVerdictConfig,
    covered: pl.DataFrame,
    offending: pl.DataFrame,
    what: str,
) -> dg.AssetCheckResult:
    inconclusive = covered.filter(pl.col("verdict").is_in(INCONCLUSIVE_VERDICTS))
    note = (
        f"{offending.height} of {covered.height} curves {what}"
        if covered.height
        else f"no curves of models matching {config.models}: nothing to check"
    )
    return dg.AssetCheckResult(
        passed=passed,
        severity=severity,
        description=note,
        metadata={
            "models": ", ".join(config.models),
            "curves_checked": covered.height,
            "curves_offending": offending.height,
            "curves_inconclusive": inconclusive.height,
            "offending": markdown_frame(_shown(offending)),
            "inconclusive": markdown_frame(_shown(inconclusive)),
        },
    )


@dg.asset_check(
    asset=tau_fits,
    description="Fails when a dense-attention model (Qwen, DeepSeek-V3.1, Llama) gets a "
    "verdict that says its tau_k is not linear.",
)
def dense_models_linear(
    config: DenseLinearConfig, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    fits = _load_fits(warehouse)
    if fits is None:
        return _missing(config, dg.AssetCheckSeverity.ERROR)
    covered = curves_of(fits, config.models)
    offending = covered.filter(pl.col("verdict").is_in(config.flagged_verdicts))
    return _result(
        offending.is_empty(),
        dg.AssetCheckSeverity.ERROR,
        config,
        covered,
        offending,
        "of dense models are flagged as not linear",
    )


@dg.asset_check(
    asset=tau_fits,
    description="Warns when a DSA model (GLM-5, DeepSeek-V3.2) has a curve that is not flagged: "
    "its tau_k slope should collapse once the prefix exceeds the top-k keys.",
)
def dsa_models_flagged(
    config: DsaFlaggedConfig, warehouse: WarehouseResource
) -> dg.AssetCheckResult:
    fits = _load_fits(warehouse)
    if fits is None:
        return _missing(config, dg.AssetCheckSeverity.WARN)
    covered = curves_of(fits, config.models)
    decided = covered.filter(~pl.col("verdict").is_in(INCONCLUSIVE_VERDICTS))
    offending = decided.filter(~pl.col("verdict").is_in(config.flagged_verdicts))
    return _result(
        offending.is_empty(),
        dg.AssetCheckSeverity.WARN,
        config,
        covered,
        offending,
        "of DSA models are not flagged",
    )
