"""Shared chart settings: sizes and the colours of the time-split parts."""

from __future__ import annotations

import altair as alt

WIDTH = 520
HEIGHT = 220
PART_COLORS = alt.Scale(
    domain=["computing", "exposed_comm", "bubble", "free"],
    range=["#4c78a8", "#f58518", "#e45756", "#bab0ac"],
)
BREAKDOWN_COLORS = alt.Scale(
    domain=["computing", "exposed_comm", "recv_wait", "free"],
    range=["#4c78a8", "#f58518", "#e45756", "#bab0ac"],
)
"""The step breakdown's parts: the profiler's receive wait (`recv_wait`) instead of `bubble`
(idle + pipeline wait, docs/metrics.md "Names")."""
PART_LABELS = {
    "computing": "computing",
    "exposed_comm": "exposed comm (not overlapped)",
    "bubble": "bubble (idle + pipeline wait)",
    "recv_wait": "recv_wait (profiler: hcom_receive)",
    "free": "free (device idle)",
}


SECONDS_FROM_MS = 10_000.0
"""A time axis reaching this many ms is labelled in seconds (20 s, not 20,000 ms)."""


def time_axis(max_ms: float | None, **options: object) -> tuple[alt.Axis, str]:
    """The axis of a quantity kept in ms, and its unit for the title: labels in seconds once
    the values reach SECONDS_FROM_MS (the data and the tooltips stay in ms)."""
    if max_ms is not None and max_ms >= SECONDS_FROM_MS:
        return alt.Axis(labelExpr="format(datum.value / 1000, ',')", **options), "s"
    return alt.Axis(**options), "ms"


def label_expr(labels: dict[str, str]) -> str:
    """A Vega expression that shows each value's readable name (others as they are)."""
    cases = " : ".join(f"datum.label == '{k}' ? '{v}'" for k, v in labels.items())
    return f"{cases} : datum.label"


def part_legend(labels: dict[str, str] = PART_LABELS) -> alt.Legend:
    """The parts' legend with readable names (the data keeps the column names)."""
    return alt.Legend(title="part of the step window", labelExpr=label_expr(labels), labelLimit=0)
