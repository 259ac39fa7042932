"""Step breakdown chart: per rank, the step window split into computing, exposed communication,
bubble (profiler definition) and free, stacked, in ms; one panel per run.

Input: dashboards.data.rank_breakdown (run_id, rank, part, part_order, ms, origin, n_steps);
one row per run x rank x part (16 ranks x 4 parts for a cluster run)."""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboards._style import PART_COLORS, WIDTH


def breakdown_chart(frame: pl.DataFrame, title: str = "") -> alt.FacetChart:
    """Horizontal stacked bars, y = rank, x = ms, colour = part, one row facet per run."""
    data = frame.select("run_id", "rank", "part", "part_order", "ms", "origin", "n_steps")
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("rank:O", title="rank"),
            x=alt.X("sum(ms):Q", title="ms over the rank's steps", stack="zero"),
            color=alt.Color("part:N", scale=PART_COLORS, title="part"),
            order=alt.Order("part_order:Q"),
            tooltip=[
                "run_id",
                "rank",
                "part",
                alt.Tooltip("ms:Q", format=".3f"),
                "origin",
                "n_steps",
            ],
        )
        .properties(width=WIDTH)
    )
    return bars.facet(row=alt.Row("run_id:N", title=None), title=title).resolve_scale(
        y="independent", x="independent"
    )
