"""Checks on the tau_k verdicts: the verdict policy (pipelines.analysis.tau.verdict_policy) applied
to the stored `tau_fits` table, one check per expectation. Runs with dense attention must give no
flagged curve (an error); runs with sparse attention no linear one (a warning). Which runs are
dense or sparse is the run fact runs.attention; too_noisy and too_short are listed, never counted.
A check whose expectation covers no curve passes and says so."""

import dagster as dg

from pipelines.analysis.tau.fit_store import FIT_TABLE, load_fits
from pipelines.analysis.tau.verdict_policy import (
    DENSE_LINEAR,
    SPARSE_FLAGGED,
    Expectation,
    check_expectation,
)
from pipelines.defs.analysis.assets import tau_fits
from pipelines.defs.metadata import markdown_frame
from pipelines.defs.resources import StoreResource


def _check(
    expectation: Expectation, severity: dg.AssetCheckSeverity, warehouse: StoreResource
) -> dg.AssetCheckResult:
    fits = None
    if warehouse.file.exists():
        with warehouse.connect(read_only=True) as con:
            fits = load_fits(con)
    if fits is None:
        return dg.AssetCheckResult(
            passed=False,
            severity=severity,
            description=f"no {FIT_TABLE} table in the warehouse: materialise tau_fits first",
            metadata={"attention": expectation.attention},
        )
    result = check_expectation(fits, expectation)
    return dg.AssetCheckResult(
        passed=result.passed,
        severity=severity,
        description=result.description(),
        metadata={
            "attention": expectation.attention,
            "expected": expectation.wants,
            "curves_checked": result.covered.height,
            "curves_decided": result.decided,
            "curves_offending": result.offending.height,
            "curves_inconclusive": result.inconclusive.height,
            "offending": markdown_frame(result.offending),
            "inconclusive": markdown_frame(result.inconclusive),
        },
    )


@dg.asset_check(
    asset=tau_fits,
    description="Fails when a curve of runs with dense attention (runs.attention) is flagged "
    "as not linear (knee, staircase, convex, concave, flattened; kinked and linear_offset in "
    "older tables).",
)
def dense_models_linear(warehouse: StoreResource) -> dg.AssetCheckResult:
    return _check(DENSE_LINEAR, dg.AssetCheckSeverity.ERROR, warehouse)


@dg.asset_check(
    asset=tau_fits,
    description="Warns when a curve of runs with sparse (DSA) attention is judged linear: its "
    "tau_k slope should collapse once the prefix exceeds the top-k keys.",
)
def dsa_models_flagged(warehouse: StoreResource) -> dg.AssetCheckResult:
    return _check(SPARSE_FLAGGED, dg.AssetCheckSeverity.WARN, warehouse)
