"""Shared chart settings: sizes and the colours of the time-split parts."""

from __future__ import annotations

import altair as alt

WIDTH = 520
HEIGHT = 220
PART_COLORS = alt.Scale(
    domain=["computing", "exposed_comm", "bubble", "free"],
    range=["#4c78a8", "#f58518", "#e45756", "#bab0ac"],
)
