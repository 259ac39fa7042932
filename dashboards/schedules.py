"""Schedule comparison chart: computing, bubble and exposed communication per schedule, mean over
repeats with its Student-t interval as error bars (n in the tooltip), one panel per workload.

Input: dashboards.data.schedule_summary (workload, schedule, part, n, mean, sd, lo, hi); one row
per workload x schedule x part."""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboards._style import PART_COLORS


def schedule_chart(summary: pl.DataFrame, title: str = "") -> alt.FacetChart:
    """Grouped bars (x schedule, offset part, y mean ms) with error bars lo..hi."""
    data = summary.select("workload", "schedule", "part", "n", "mean", "sd", "lo", "hi")
    base = alt.Chart().encode(x=alt.X("schedule:N", title=None), xOffset=alt.XOffset("part:N"))
    bars = base.mark_bar().encode(
        y=alt.Y("mean:Q", title="ms (mean over repeats)"),
        color=alt.Color("part:N", scale=PART_COLORS, title="part"),
        tooltip=[
            "schedule",
            "part",
            "n",
            alt.Tooltip("mean:Q", format=".3f"),
            alt.Tooltip("lo:Q", format=".3f"),
            alt.Tooltip("hi:Q", format=".3f"),
        ],
    )
    errors = base.mark_errorbar(ticks=True).encode(y="lo:Q", y2="hi:Q")
    return (
        alt.layer(bars, errors, data=data)
        .properties(width=260, height=200)
        .facet(facet=alt.Facet("workload:N", title=None), columns=3, title=title)
        .resolve_scale(y="independent")
    )
