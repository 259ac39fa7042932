"""Left joins of a trace's rows with a small table, in row order, for frames and LazyFrames.

A join streams in Polars' streaming engine; a `replace_strict` or `search_sorted` against a
literal mapping is a whole-column function that engine runs in memory, holding every row of the
trace, args and all (docs/bench_ingest.md "Where the streamed RSS grows"). So the streamed trace
reader looks values up by joining.
"""

from __future__ import annotations

import polars as pl


def left_lookup(frame: pl.DataFrame | pl.LazyFrame, table: pl.DataFrame, on: str):
    """`frame` left-joined with `table` on `on`, in frame order (the same kind as `frame`)."""
    right = table.lazy() if isinstance(frame, pl.LazyFrame) else table
    return frame.join(right, on=on, how="left", maintain_order="left")
