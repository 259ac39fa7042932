"""Schedule timeline chart (the paper's Figure 2 view): one Gantt per schedule of the same
workload, a lane per rank and virtual stage, chunks as bars labelled by k, and each rank's idle
gaps (bubbles) on a red lane of their own under it.

Input: dashboards.data.timeline_spans (kind, schedule, schedule_order, lane, rank, vstage,
request_id, chunk_idx, start_ms, end_ms, dur_ms), at most a few thousand spans."""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboards._style import WIDTH

SECONDS_FROM_MS = 10_000.0  # a time axis this long (ms) is labelled in seconds

COLUMNS = (
    "kind",
    "schedule",
    "schedule_order",
    "lane",
    "rank",
    "vstage",
    "request_id",
    "chunk_idx",
    "start_ms",
    "end_ms",
    "dur_ms",
)


def timeline_chart(spans: pl.DataFrame, title: str = "") -> alt.FacetChart:
    """Gantt bars (x start_ms..end_ms, y lane), chunks coloured by virtual stage, bubbles red,
    one row per schedule (ordered cpp, dcpp, vpp, vpp_async, vpp_pack). The axis is labelled in
    seconds when the runs last 10 s or more; bars too narrow for their C_k label go without."""
    frame = spans.select(COLUMNS).with_columns(
        pl.when(pl.col("kind") == "chunk")
        .then(pl.format("vs {}", "vstage"))
        .otherwise(pl.lit("bubble"))
        .alias("fill"),
        pl.col("end_ms").max().over("schedule").alias("last_ms"),
    )
    vstages = sorted(frame.filter(pl.col("kind") == "chunk")["fill"].unique().to_list())
    palette = ["#4c78a8", "#72b7b2", "#54a24b", "#b279a2", "#9d755d", "#79706e"]
    color = alt.Color(
        "fill:N",
        title="span",
        scale=alt.Scale(
            domain=[*vstages, "bubble"],
            range=[*(palette[i % len(palette)] for i in range(len(vstages))), "#e45756"],
        ),
    )
    seconds = frame.height > 0 and (frame["end_ms"].max() or 0) >= SECONDS_FROM_MS
    axis = alt.Axis(labelExpr="format(datum.value / 1000, ',')") if seconds else alt.Axis()
    unit = "s" if seconds else "ms"
    base = alt.Chart().encode(
        x=alt.X("start_ms:Q", title=f"time from the run's first chunk ({unit})", axis=axis),
        x2=alt.X2("end_ms:Q"),
        y=alt.Y("lane:N", title=None, sort="ascending"),
    )
    bars = base.mark_bar(stroke="white", strokeWidth=0.5).encode(
        color=color,
        tooltip=[
            alt.Tooltip("kind"),
            alt.Tooltip("lane"),
            alt.Tooltip("request_id"),
            alt.Tooltip("chunk_idx"),
            alt.Tooltip("start_ms:Q", format=",.3f", title="start (ms)"),
            alt.Tooltip("end_ms:Q", format=",.3f", title="end (ms)"),
            alt.Tooltip("dur_ms:Q", format=",.3f", title="duration (ms)"),
        ],
    )
    labels = (
        alt.Chart()
        .encode(y=alt.Y("lane:N", sort="ascending"))
        # a label only where the bar is wide enough to hold it (1/40 of the panel's time range)
        .transform_filter("datum.kind == 'chunk' && datum.dur_ms * 40 >= datum.last_ms")
        .transform_calculate(mid="(datum.start_ms + datum.end_ms) / 2", k="'C' + datum.chunk_idx")
        .mark_text(fontSize=8, color="white")
        .encode(x=alt.X("mid:Q"), text=alt.Text("k:N"))
    )
    layered = alt.layer(bars, labels, data=frame).properties(width=WIDTH + 200)
    return layered.facet(
        row=alt.Row("schedule:N", title=None, sort=alt.SortField("schedule_order")),
        title=title,
    ).resolve_scale(y="independent")
