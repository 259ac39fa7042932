"""Replay vs measured chart: predicted (a simulated rerun) against measured (mean over the
measured runs of the same workload and schedule, min..max as error bars) per metric, with the
identity line y = x.

Input: dashboards.data.replay_pairs (metric, schedule, predicted_ms, measured_ms,
measured_min_ms, measured_max_ms, n_measured); one row per rerun x metric."""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboards._style import time_axis


def replay_chart(pairs: pl.DataFrame, metric: str, title: str = "") -> alt.LayerChart:
    """Scatter of one metric's pairs with error bars and the identity line over their range."""
    data = pairs.filter(pl.col("metric") == metric).select(
        "schedule",
        "predicted_ms",
        "measured_ms",
        "measured_min_ms",
        "measured_max_ms",
        "n_measured",
    )
    values = data.select(
        pl.concat_list("predicted_ms", "measured_min_ms", "measured_max_ms").explode()
    ).to_series()
    low, high = float(values.min()), float(values.max())
    pad = (high - low) * 0.05 or abs(high) * 0.05 or 1.0
    identity = pl.DataFrame({"x": [low - pad, high + pad], "y": [low - pad, high + pad]})
    scale = alt.Scale(domain=[low - pad, high + pad], zero=False)
    axis, unit = time_axis(high + pad)
    line = (
        alt.Chart(identity)
        .mark_line(color="grey", strokeDash=[5, 4])
        .encode(
            x=alt.X("x:Q", scale=scale, title=f"measured {metric} ({unit})", axis=axis),
            y=alt.Y("y:Q", scale=scale, title=f"predicted {metric} ({unit})", axis=axis),
        )
    )
    base = alt.Chart(data)
    errors = base.mark_rule().encode(
        x=alt.X("measured_min_ms:Q"),
        x2=alt.X2("measured_max_ms:Q"),
        y=alt.Y("predicted_ms:Q"),
        color=alt.Color("schedule:N"),
    )
    dots = base.mark_point(filled=True, size=80).encode(
        x=alt.X("measured_ms:Q"),
        y=alt.Y("predicted_ms:Q"),
        color=alt.Color("schedule:N", title="schedule"),
        tooltip=[
            alt.Tooltip("schedule"),
            alt.Tooltip("n_measured"),
            alt.Tooltip("measured_ms:Q", format=".3f"),
            alt.Tooltip("predicted_ms:Q", format=".3f"),
        ],
    )
    return alt.layer(line, errors, dots).properties(
        width=300, height=300, title=title or f"{metric}: replay vs measured"
    )
