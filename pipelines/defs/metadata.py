"""Small helpers that turn frames and rows into Dagster metadata values."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import dagster as dg
import polars as pl


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_rows(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], max_rows: int = 100
) -> str:
    """A Markdown table of `rows`; a last line says how many rows were left out."""
    rows = list(rows)
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows[:max_rows]]
    if len(rows) > max_rows:
        lines.append(f"\n{len(rows) - max_rows} more rows not shown")
    return "\n".join(lines)


def markdown_frame(frame: pl.DataFrame, max_rows: int = 100) -> dg.MarkdownMetadataValue:
    """A Polars frame as Markdown metadata."""
    return dg.MetadataValue.md(markdown_rows(frame.columns, frame.iter_rows(), max_rows))
