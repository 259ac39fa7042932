"""Step breakdown chart: per rank, the step window split into computing, exposed communication,
recv_wait (the profiler's receive wait, docs/metrics.md "Names") and free, stacked; one panel
per run. The data and tooltips are in ms; the axes, and the unit the title names, in s once the
widest bar reaches ten seconds (_style.time_axis).

Input: dashboards.data.rank_breakdown (run_id, rank, part, part_order, ms, origin, n_steps);
one row per run x rank x part (16 ranks x 4 parts for a cluster run)."""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboards._style import BREAKDOWN_COLORS, WIDTH, part_legend, time_axis

TITLE = "Step breakdown per rank: the step window (stage + recv_wait) split into parts"


def breakdown_chart(frame: pl.DataFrame, title: str = TITLE) -> alt.FacetChart:
    """Horizontal stacked bars, y = rank, x = time, colour = part, one row facet per run (its id
    as a header above the panel); the title ends with the axes' unit."""
    data = frame.select("run_id", "rank", "part", "part_order", "ms", "origin", "n_steps")
    widest = (
        data.group_by("run_id", "rank").agg(pl.col("ms").sum())["ms"].max() if data.height else None
    )
    axis, unit = time_axis(widest, tickCount=8)  # type: ignore[arg-type]
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("rank:O", title="rank"),
            x=alt.X(
                "sum(ms):Q",
                title=f"{unit}, summed over the rank's steps (n_steps in the tooltip)",
                stack="zero",
                axis=axis,
            ),
            color=alt.Color("part:N", scale=BREAKDOWN_COLORS, legend=part_legend()),
            order=alt.Order("part_order:Q"),
            tooltip=[
                alt.Tooltip("run_id"),
                alt.Tooltip("rank"),
                alt.Tooltip("part"),
                alt.Tooltip("ms:Q", format=".3f", title="ms"),
                alt.Tooltip("origin"),
                alt.Tooltip("n_steps"),
            ],
        )
        .properties(width=WIDTH)
    )
    header = alt.Header(labelAngle=0, labelOrient="top", labelAnchor="start", labelFontSize=11)
    row = alt.Row("run_id:N", title=None, header=header)
    return bars.facet(row=row, title=f"{title}, {unit}").resolve_scale(
        y="independent", x="independent"
    )
