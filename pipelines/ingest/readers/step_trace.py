"""step_trace_time.csv -> the profiler's own step breakdown (rows with origin='profiler').

Header variants (read by name): 9 columns (V2023, no Preparing), 10 (V2025a, + Preparing),
11 (V2025b, Device_id first). All values are microseconds, converted exactly to nanoseconds.
An empty `Step` cell (no profiler schedule) becomes step NULL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers.csv_text import (
    LongLines,
    as_int_sql,
    open_csv,
    pick,
    require,
    trimmed,
)
from pipelines.ingest.units import us_text_to_ns_sql
from pipelines.store.duck import scratch_connection

# canonical step_breakdown column -> header of step_trace_time.csv
COLUMN_HEADERS = {
    "computing_ns": "Computing",
    "comm_not_overlapped_ns": "Communication(Not Overlapped)",
    "overlapped_ns": "Overlapped",
    "communication_ns": "Communication",
    "free_ns": "Free",
    "stage_ns": "Stage",
    "bubble_ns": "Bubble",
    "comm_not_overlapped_excl_receive_ns": "Communication(Not Overlapped and Exclude Receive)",
    "preparing_ns": "Preparing",
}

DURATION_KEYS = (
    "computing_ns",
    "comm_not_overlapped_ns",
    "overlapped_ns",
    "communication_ns",
    "free_ns",
    "stage_ns",
    "bubble_ns",
)
"""Columns that are durations of their own (a negative value is impossible)."""


@dataclass
class StepTrace:
    """Profiler step breakdown rows (without run_id/rank) and the device id column, if any."""

    rows: pl.DataFrame
    device_id: int | None
    columns: tuple[str, ...]  # canonical columns this file actually had
    # rows left out for a cell that is no number, each "line N: <column> is <text>"
    set_aside: list[str] = field(default_factory=list)


def read_step_trace_time(path: Path) -> StepTrace:
    """Read one step_trace_time.csv; raises QuarantineError."""
    con = scratch_connection()
    try:
        long_lines = LongLines()  # a line too long to parse is set aside by its number
        headers = open_csv(con, path, "st", long_lines)
        require(headers, path.name, step=("Step",), computing=("Computing",))
        present = {key: pick(headers, header) for key, header in COLUMN_HEADERS.items()}
        found = [key for key, header in present.items() if header is not None]
        # one row per cell (long form), so the conversion is written, and compiled by DuckDB,
        # once rather than once per column: half the time of a file of a few rows
        # (docs/bench_ingest.md); the cells go back to columns in Polars
        cells = con.sql(
            f"""
            with cells as (
                select row_number() over () as row_no,
                       {as_int_sql(pick(headers, "Step"))} as step,
                       {as_int_sql(pick(headers, "Device_id"))} as device_id,
                       {trimmed(pick(headers, "Step"))} as step_text,
                       unnest([{", ".join(f"'{key}'" for key in found)}]) as key,
                       unnest([{", ".join(trimmed(present[key]) for key in found)}]) as text
                from st)
            select *, {us_text_to_ns_sql("text")} as ns from cells
            """
        ).pl()
    finally:
        con.close()
    # the profiler's own durations: a negative one is as impossible as text (none in the real
    # sets). Not "Exclude Receive" (not-overlapped comm minus the receive wait: below zero when
    # the wait is longer) nor Preparing, both differences
    negative = (pl.col("ns") < 0) & pl.col("key").is_in(DURATION_KEYS)
    # a row without a Step among rows that have one belongs to no step (it was stored under a
    # NULL step next to the numbered ones: issue 36 round five); a file without steps keeps them
    stepless = pl.col("step_text").is_null() & pl.col("step").is_not_null().any()
    unparsable = cells.filter(
        (pl.col("text").is_not_null() & pl.col("ns").is_null())
        | negative
        | (pl.col("step").is_null() & pl.col("step_text").is_not_null())
        | (pl.col("step") < 0)  # ProfilerStep#N counts from 0
        | stepless
    )
    set_aside: list[str] = []
    bad_rows = unparsable["row_no"].unique()
    if len(bad_rows):
        # one bad cell costs its row (issue 36 deliver 3): the row is named, the rest loads
        first = unparsable.sort("row_no").unique("row_no", keep="first", maintain_order=True)
        set_aside = [
            f"line {long_lines.source_line(row_no - 1)}: "
            + (
                "Step is empty (the other rows have one)"
                if step_text is None
                else f"{COLUMN_HEADERS[key]} is a negative time ({text})"
                if ns is not None and ns < 0
                else f"{COLUMN_HEADERS.get(key, 'Step') if ns is None else 'Step'}"
                f" is {text if ns is None else step_text!r}"
            )
            for row_no, key, text, ns, step_text in first.select(
                "row_no", "key", "text", "ns", "step_text"
            ).iter_rows()
        ]
    set_aside = long_lines.reasons() + set_aside
    if len(bad_rows) and len(bad_rows) == cells["row_no"].n_unique():
        raise QuarantineError(
            "unparsable_rows",
            f"{path.name}: every row has a cell that is not a number: {'; '.join(set_aside[:3])}",
        )
    if len(bad_rows):
        cells = cells.filter(~pl.col("row_no").is_in(bad_rows.implode()))
    index = ["row_no", "step", "device_id"]
    rows = (
        cells.pivot(on="key", index=index, values="ns", aggregate_function=None)
        if cells.height
        else pl.DataFrame(schema={c: cells.schema[c] for c in index})
    )
    rows = rows.with_columns(
        pl.lit(None, pl.Int64).alias(key) for key in COLUMN_HEADERS if key not in rows.columns
    ).sort("row_no")
    rows, twice = steps_once(rows, lambda row_no: long_lines.source_line(row_no - 1))
    set_aside += twice
    devices = rows["device_id"].drop_nulls()
    device_id = int(devices.mode().sort()[0]) if len(devices) else None
    rows = rows.select("step", *COLUMN_HEADERS).with_columns(pl.lit("profiler").alias("origin"))
    return StepTrace(
        rows=rows,
        device_id=device_id,
        columns=tuple(k for k, v in present.items() if v is not None),
        set_aside=set_aside,
    )


def steps_once(
    rows: pl.DataFrame,
    line_of: Callable[[int], int],
    keys: tuple[str, ...] = ("step", "device_id"),
) -> tuple[pl.DataFrame, list[str]]:
    """The rows with each step once (issue 36 round four: a step row written twice was stored
    twice). An exact copy of an earlier row is left out (`line N: duplicate_row (a copy of line
    M)`); two different rows for one step are both left out, as which one the profiler meant is
    unknown (`line N: step S is given again with other times (line M)`). `row_no` numbers the
    rows, `line_of` turns it into the file's line; `keys` say what one step of the file is
    (cluster_step_trace_time.csv: step and rank)."""
    keys = list(keys)
    whole = [c for c in rows.columns if c != "row_no"]
    numbered = rows.with_columns(
        pl.col("row_no").min().over(whole).alias("_copy_of"),
        pl.col("row_no").min().over(keys).alias("_first_of_step"),
    )
    copies = numbered.filter(
        pl.col("step").is_not_null() & (pl.col("row_no") != pl.col("_copy_of"))
    )
    kept = numbered.filter(pl.col("step").is_null() | (pl.col("row_no") == pl.col("_copy_of")))
    clash = kept.filter(pl.col("step").is_not_null() & (pl.len().over(keys) > 1))
    lines = [
        f"line {line_of(row_no)}: duplicate_row (a copy of line {line_of(first)})"
        for row_no, first in copies.select("row_no", "_copy_of").iter_rows()
    ] + [
        f"line {line_of(row_no)}: step {step} is given again with other"
        f" times (line {line_of(first)}): both left out"
        for row_no, step, first in clash.filter(pl.col("row_no") != pl.col("_first_of_step"))
        .select("row_no", "step", "_first_of_step")
        .iter_rows()
    ]
    out = kept.filter(~pl.col("row_no").is_in(clash["row_no"].implode()))
    return out.drop("_copy_of", "_first_of_step"), lines
