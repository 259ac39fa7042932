"""Schedule comparison chart: computing, bubble and exposed communication per schedule, mean over
repeats with its Student-t interval as error bars (n in the tooltip), one panel per workload and
part, each part on its own y scale (computing is seconds where bubble and comm are milliseconds:
on one scale the small parts would not show).

Input: dashboards.data.schedule_summary (workload, schedule, part, n, mean, sd, lo, hi); one row
per workload x schedule x part."""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboards._style import PART_COLORS, part_legend, time_axis

Y_TITLE = "ms (mean, 95 % t interval)"
# the parts of tracereplay schedules (sql/marts/fct_run_metrics.sql, docs/metrics.md)
RUN_PART_LABELS = {
    "computing": "computing",
    "bubble": "bubble (idle + pipeline wait)",
    "exposed_comm": "exposed comm (not overlapped)",
}


def schedule_chart(summary: pl.DataFrame, title: str = "") -> alt.FacetChart:
    """Bars (x schedule, y mean ms) with error bars lo..hi; rows: workload, columns: part (a
    row per workload keeps the page as wide as three panels however many workloads there are)."""
    data = summary.select("workload", "schedule", "part", "n", "mean", "sd", "lo", "hi")
    data = data.with_columns(
        pl.col("part").replace_strict(RUN_PART_LABELS, default=pl.col("part")).alias("part_name")
    )
    base = alt.Chart().encode(x=alt.X("schedule:N", title=None))
    top = data.select(pl.max_horizontal("mean", "hi")).to_series().max() if data.height else None
    axis, unit = time_axis(top)  # type: ignore[arg-type]
    title = Y_TITLE.replace("ms", unit, 1)
    bars = base.mark_bar().encode(
        y=alt.Y("mean:Q", title=title, axis=axis),
        color=alt.Color("part:N", scale=PART_COLORS, legend=part_legend(RUN_PART_LABELS)),
        tooltip=[
            alt.Tooltip("schedule"),
            alt.Tooltip("part"),
            alt.Tooltip("n"),
            alt.Tooltip("mean:Q", format=".3f"),
            alt.Tooltip("lo:Q", format=".3f"),
            alt.Tooltip("hi:Q", format=".3f"),
        ],
    )
    errors = base.mark_errorbar(ticks=True).encode(
        y=alt.Y("lo:Q", title=title, axis=axis), y2=alt.Y2("hi:Q")
    )
    return (
        alt.layer(bars, errors, data=data)
        .properties(width=220, height=140)
        .facet(
            row=alt.Row(
                "workload:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")
            ),
            column=alt.Column("part_name:N", title=None, sort=list(RUN_PART_LABELS.values())),
            title=title,
        )
        .resolve_scale(y="independent")
    )
