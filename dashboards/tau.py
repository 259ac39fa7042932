"""tau_k chart: one curve's points per chunk over repeats, the fitted line with its interval band,
the verdict and its evidence in the title, and a residual panel below.

Input: the frames of dashboards.data.tau_curves (points: one per run x chunk index, already the
mean over the run's requests; band: one row per chunk index; fit: the curve's fit row)."""

from __future__ import annotations

import math

import altair as alt
import polars as pl

from dashboards._style import WIDTH


def _pct(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.1%}"


def _ms(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x / 1e6:.3g} ms"


def tau_title(fit: dict) -> list[str]:
    """Curve, verdict, slope and intercept with intervals, n runs / points, the test, evidence."""
    level = fit.get("level") or 0.95
    return [
        f"{fit['curve']}: {fit['verdict']}",
        f"slope {_ms(fit['slope'])}/chunk [{_ms(fit['slope_lo'])}, {_ms(fit['slope_hi'])}], "
        f"intercept {_ms(fit['intercept'])}, R² {fit['r2']:.3f}; n = {fit['n_runs']} runs, "
        f"{fit['n_points']} points; {level:.0%} CI, OLS {fit['ci_method']}",
        f"evidence: {fit['evidence']}",
    ]


def tau_chart(points: pl.DataFrame, band: pl.DataFrame, fit: dict) -> alt.VConcatChart:
    """Points (tau_ms per chunk_idx, coloured by run), the fit line and band (fit_ms, lo_ms,
    hi_ms), and residuals (resid_ms) of one curve."""
    base_points = alt.Chart(points.select("run_id", "chunk_idx", "tau_ms", "resid_ms"))
    x = alt.X("chunk_idx:Q", title="chunk k", axis=alt.Axis(tickMinStep=1))
    run = alt.Color("run_id:N", title="run", legend=None)
    dots = base_points.mark_circle(size=45, opacity=0.8).encode(
        x=x,
        y=alt.Y("tau_ms:Q", title="τ_k (ms)", scale=alt.Scale(zero=False)),
        color=run,
        tooltip=["run_id", "chunk_idx", "tau_ms"],
    )
    base_band = alt.Chart(band.select("chunk_idx", "fit_ms", "lo_ms", "hi_ms"))
    area = base_band.mark_area(opacity=0.25, color="#888").encode(x=x, y="lo_ms:Q", y2="hi_ms:Q")
    line = base_band.mark_line(color="black").encode(x=x, y="fit_ms:Q")
    top = (area + line + dots).properties(width=WIDTH, height=200, title=tau_title(fit))
    zero = alt.Chart(pl.DataFrame({"y": [0.0]})).mark_rule(color="black").encode(y="y:Q")
    resid = base_points.mark_circle(size=35).encode(
        x=x, y=alt.Y("resid_ms:Q", title="residual (ms)"), color=run
    )
    return alt.vconcat(top, (zero + resid).properties(width=WIDTH, height=90))
