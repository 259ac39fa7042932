"""Shared chart settings: sizes and the colours of the time-split parts."""

from __future__ import annotations

import altair as alt

WIDTH = 520
HEIGHT = 220
PART_COLORS = alt.Scale(
    domain=["computing", "exposed_comm", "bubble", "free"],
    range=["#4c78a8", "#f58518", "#e45756", "#bab0ac"],
)
PART_LABELS = {
    "computing": "computing",
    "exposed_comm": "exposed comm (not overlapped)",
    "bubble": "bubble (profiler: hcom_receive wait)",
    "free": "free (device idle)",
}


def part_legend(labels: dict[str, str] = PART_LABELS) -> alt.Legend:
    """The parts' legend with readable names (the data keeps the column names)."""
    cases = " : ".join(f"datum.label == '{k}' ? '{v}'" for k, v in labels.items())
    return alt.Legend(
        title="part of the step window", labelExpr=f"{cases} : datum.label", labelLimit=0
    )
