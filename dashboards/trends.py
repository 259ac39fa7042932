"""Trend chart: one metric over the nightly runs per configuration, the night's mean with its
interval band over that night's repeats, change points marked as vertical rules.

Input: dashboards.data.metric_history (config, night, collected_at, n, mean, lo, hi, metric) and
a change-point frame with columns config, metric, collected_at, direction (may be empty: the
change-point detection is another step's output) and, when present, earliest_at and latest_at:
the 95 % set of the first night after the change (likelihood ratio), drawn as a shaded span."""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboards._style import WIDTH, time_axis

CHANGE_COLUMNS = ("config", "metric", "collected_at", "direction")
DATE_SPAN_COLUMNS = ("earliest_at", "latest_at")
DIRECTION_SCALE = alt.Scale(domain=["up", "down"], range=["#e45756", "#54a24b"])
CONFIG_COLORS = ["#4c78a8", "#f58518", "#b279a2", "#72b7b2", "#9d755d", "#79706e", "#ff9da6"]
METRIC_NAMES = {"ttft": "TTFT", "bubble": "bubble", "computing": "computing"}


def trend_chart(
    history: pl.DataFrame, change_points: pl.DataFrame | None = None, title: str = ""
) -> alt.LayerChart:
    """Line of the nightly mean, band lo..hi, points, and a rule per change point (colour =
    direction) of this metric."""
    metric = history["metric"][0] if history.height else ""
    data = history.select("config", "collected_at", "n", "mean", "lo", "hi")
    x = alt.X("collected_at:T", title="collected at")
    # no red or green among the configurations: those are the change points' colours
    color = alt.Color(
        "config:N",
        title="configuration",
        scale=alt.Scale(range=CONFIG_COLORS),
        legend=alt.Legend(labelLimit=0, orient="bottom", direction="vertical"),
    )
    base = alt.Chart(data)
    top = data.select(pl.max_horizontal("mean", "hi")).to_series().max() if data.height else None
    axis, unit = time_axis(top)  # type: ignore[arg-type]
    band = base.mark_area(opacity=0.2).encode(x=x, y=alt.Y("lo:Q"), y2=alt.Y2("hi:Q"), color=color)
    line = base.mark_line(point=True).encode(
        x=x,
        y=alt.Y("mean:Q", title=f"{metric} ({unit}, nightly mean)", axis=axis),
        color=color,
        tooltip=[
            alt.Tooltip("config"),
            alt.Tooltip("collected_at"),
            alt.Tooltip("n"),
            alt.Tooltip("mean:Q", format=".3f"),
            alt.Tooltip("lo:Q", format=".3f"),
            alt.Tooltip("hi:Q", format=".3f"),
        ],
    )
    layers = [band, line]
    changes = pl.DataFrame(schema={c: pl.String for c in CHANGE_COLUMNS})
    if change_points is not None and change_points.height:
        columns = [*CHANGE_COLUMNS]
        if all(c in change_points.columns for c in DATE_SPAN_COLUMNS):
            columns += DATE_SPAN_COLUMNS
        changes = change_points.select(columns).filter(pl.col("metric") == metric)
    if changes.height and "earliest_at" in changes.columns:
        # where the first night after the change may lie (95 %): the nights to bisect
        layers.append(
            alt.Chart(changes)
            .mark_rect(opacity=0.12)
            .encode(
                x=alt.X("earliest_at:T"),
                x2=alt.X2("latest_at:T"),
                fill=alt.Fill("direction:N", scale=DIRECTION_SCALE, legend=None),
                tooltip=list(changes.columns),
            )
        )
    if changes.height:
        rules = (
            alt.Chart(changes)
            .mark_rule(strokeDash=[4, 3], strokeWidth=2)
            .encode(
                x=alt.X("collected_at:T"),
                stroke=alt.Stroke(
                    "direction:N",
                    title="change point",
                    scale=DIRECTION_SCALE,
                ),
                tooltip=list(changes.columns),
            )
        )
        layers.append(rules)
    name = METRIC_NAMES.get(metric, metric)
    default = f"{name} per configuration over the nights: nightly mean (ms), 95 % t interval"
    return alt.layer(*layers).properties(width=WIDTH, height=220, title=title or default)
