"""tau_k chart: one curve's points per chunk over repeats, the fitted line with its interval band,
the verdict and its evidence in the title, and a residual panel below.

Input: the frames of dashboards.data.tau_curves (points: one per run x chunk index, already the
mean over the run's requests; band: one row per chunk index; fit: the curve's fit row)."""

from __future__ import annotations

import math
import textwrap

import altair as alt
import polars as pl

from dashboards._style import WIDTH

TITLE_CHARS = 100


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
        f"{fit['n_points']} points; {level:.0%} CI by {fit['ci_method']}",
        *_wrapped(f"evidence: {fit['evidence']}"),
    ]


def _wrapped(text: str, width: int = TITLE_CHARS) -> list[str]:
    """Title lines of at most `width` characters, broken after '; ' where possible (a title
    line as long as the evidence would make the chart a thin strip beside it)."""
    lines: list[str] = []
    for part in text.split("; "):
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += "; " + part
        else:
            lines += textwrap.wrap(part, width) or [""]
    return lines


LEGEND = (
    "dots: runs (each the mean over its requests) · dark line: mean over runs with its 95 % t "
    "interval · dashed line and grey band: the fitted line (the estimator named in the title) "
    "with its 95 % band"
)


def _chunk_axis(points: pl.DataFrame) -> alt.X:
    sizes = points["chunk_size"].unique().to_list() if "chunk_size" in points.columns else []
    prefix = f" (prefix = k × {sizes[0]:,} tokens)" if len(sizes) == 1 and sizes[0] else ""
    return alt.X("chunk_idx:Q", title=f"chunk k{prefix}", axis=alt.Axis(tickMinStep=1))


def tau_chart(points: pl.DataFrame, band: pl.DataFrame, fit: dict) -> alt.VConcatChart:
    """Points (tau_ms per chunk_idx, coloured by run), the mean over runs per chunk index with
    its interval (mean_ms, mean_lo_ms, mean_hi_ms: the curve's own shape), the fit line and band
    (fit_ms, lo_ms, hi_ms), and residuals from the line (resid_ms per run; the mean's below) of
    one curve. A curve that bends (DSA past its top-k keys) shows as the dark mean line leaving
    the dashed straight one, and as a run of same-signed mean residuals."""
    base_points = alt.Chart(points.select("run_id", "chunk_idx", "tau_ms", "resid_ms"))
    x = _chunk_axis(points)
    run = alt.Color("run_id:N", title="run", legend=None)
    dots = base_points.mark_circle(size=30, opacity=0.45).encode(
        x=x,
        y=alt.Y("tau_ms:Q", title="τ_k (ms)", scale=alt.Scale(zero=False)),
        color=run,
        tooltip=[
            alt.Tooltip("run_id"),
            alt.Tooltip("chunk_idx"),
            alt.Tooltip("tau_ms:Q", format=".2f", title="τ_k (ms)"),
        ],
    )
    columns = ("chunk_idx", "fit_ms", "lo_ms", "hi_ms", "n_runs", "mean_ms", "mean_lo_ms")
    base_band = alt.Chart(band.select(*columns, "mean_hi_ms")).transform_calculate(
        mean_resid_ms="datum.mean_ms - datum.fit_ms"
    )
    area = base_band.mark_area(opacity=0.2, color="#888").encode(
        x=x, y=alt.Y("lo_ms:Q"), y2=alt.Y2("hi_ms:Q")
    )
    line = base_band.mark_line(color="#555", strokeDash=[6, 4]).encode(x=x, y=alt.Y("fit_ms:Q"))
    spread = base_band.mark_rule(color="#222").encode(
        x=x, y=alt.Y("mean_lo_ms:Q"), y2=alt.Y2("mean_hi_ms:Q")
    )
    mean = base_band.mark_line(color="#222", point=alt.OverlayMarkDef(color="#222")).encode(
        x=x,
        y=alt.Y("mean_ms:Q"),
        tooltip=[
            alt.Tooltip("chunk_idx"),
            alt.Tooltip("n_runs"),
            alt.Tooltip("mean_ms:Q", format=".2f", title="mean τ_k (ms)"),
            alt.Tooltip("mean_lo_ms:Q", format=".2f", title="95% lo (ms)"),
            alt.Tooltip("mean_hi_ms:Q", format=".2f", title="95% hi (ms)"),
            alt.Tooltip("fit_ms:Q", format=".2f", title="line (ms)"),
        ],
    )
    title = alt.TitleParams(tau_title(fit), subtitle=LEGEND, fontSize=12, subtitleFontSize=10)
    top = alt.layer(area, line, dots, spread, mean).properties(width=WIDTH, height=220, title=title)
    zero = alt.Chart(pl.DataFrame({"y": [0.0]})).mark_rule(color="#555", strokeDash=[6, 4])
    resid = base_points.mark_circle(size=25, opacity=0.45).encode(
        x=x, y=alt.Y("resid_ms:Q", title="residual (ms)"), color=run
    )
    mean_resid = base_band.mark_line(color="#222", point=alt.OverlayMarkDef(color="#222")).encode(
        x=x, y=alt.Y("mean_resid_ms:Q")
    )
    bottom = alt.layer(zero.encode(y=alt.Y("y:Q")), resid, mean_resid).properties(
        width=WIDTH, height=100, title="τ_k minus the fitted line"
    )
    return alt.vconcat(top, bottom)
