"""Rows a reader sets aside: one bad value spoils its row, not its file.

Every reader marks a row it cannot keep with one reason code (below), drops it and counts it; the
counts travel in `RankFrames.dropped` and end up per run in `runs.dropped_rows` (a JSON object
reason -> count). The same cause has the same code whichever parse path found it (trace_view via
DuckDB or msgspec, Kineto, CSV, SQLite). The rules are in docs/ingest_rules.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import polars as pl

MISSING_TIMESTAMP = "missing_timestamp"  # a complete event / task without a start time
UNPARSABLE_TIMESTAMP = "unparsable_timestamp"  # a start time that is not a number
TIMESTAMP_OUT_OF_RANGE = "timestamp_out_of_range"  # a number, but not an int64 of ns
MISSING_DURATION = "missing_duration"  # a complete event without `dur`
UNPARSABLE_DURATION = "unparsable_duration"  # a duration that is not a number
NON_FINITE_DURATION = "non_finite_duration"  # NaN, Infinity, -Infinity
NEGATIVE_DURATION = "negative_duration"
DURATION_OUT_OF_RANGE = "duration_out_of_range"  # start + duration past MAX_END_NS
INVALID_STEP = "invalid_step"  # a Step Id that is not an integer (e.g. 3.5) or is negative
UNPARSABLE_WAIT = "unparsable_wait"  # a wait cell that is neither missing nor a number
INVALID_EVENT = "invalid_event"  # a trace event that is not an object of the format's fields
DUPLICATE_KEY = "duplicate_key"  # a trace event that gives one key twice (which one was meant?)
DUPLICATE_ROW = "duplicate_row"  # a device row repeating an earlier one exactly: counted once
TOO_LARGE = "too_large"  # a value past the size the reader may hold (a huge JSON string)
CUT_OFF = "cut_off"  # a CSV's last line that the file ends inside (fewer cells than its header)
# a SQLite TASK row whose stream or device id is missing or no integer: its lane is unknown (the
# rank failed on a text deviceId, a NULL streamId was kept in no lane; issue 36 round five)
INVALID_STREAM = "invalid_stream"
INVALID_DEVICE = "invalid_device"

CODES = (
    MISSING_TIMESTAMP,
    UNPARSABLE_TIMESTAMP,
    TIMESTAMP_OUT_OF_RANGE,
    MISSING_DURATION,
    UNPARSABLE_DURATION,
    NON_FINITE_DURATION,
    NEGATIVE_DURATION,
    DURATION_OUT_OF_RANGE,
    INVALID_STEP,
    UNPARSABLE_WAIT,
    INVALID_EVENT,
    DUPLICATE_KEY,
    DUPLICATE_ROW,
    TOO_LARGE,
    CUT_OFF,
    INVALID_STREAM,
    INVALID_DEVICE,
)

# The latest end (start + duration, ns) a row may have: a margin under int64's 9.223e18 so that
# a double-precision check can never let an overflowing value through (year 2261 in epoch ns).
MAX_END_NS = 9.2e18
DROPPED = "_dropped"  # the column a reader fills with the reason code (NULL: keep)


def split(frame: pl.DataFrame, column: str = DROPPED) -> tuple[pl.DataFrame, dict[str, int]]:
    """The rows whose `column` is NULL (without that column) and the count per reason of the
    others."""
    if column not in frame.columns:
        return frame, {}
    reasons = frame.get_column(column)
    if reasons.null_count() == frame.height:
        return frame.drop(column), {}
    counts = reasons.drop_nulls().value_counts()
    dropped = {str(r): int(n) for r, n in counts.iter_rows()}
    return frame.filter(pl.col(column).is_null()).drop(column), dropped


def screen(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Drop and count rows of integer `start_ns` / `dur_ns` columns that no reader may keep:
    no start, no duration, a negative duration, an end past MAX_END_NS."""
    return split(_with_reasons(frame))


def screen_named(
    frame: pl.DataFrame, where: str, shown: int = 100
) -> tuple[pl.DataFrame, dict[str, int], list[str]]:
    """`screen`, and one `<where>: reason` line for each of the first `shown` dropped rows
    (`where` a str.format pattern over the row's columns, e.g. "TASK {global_task_id}"), in
    the frame's order: what the file's quarantine row names."""
    marked = _with_reasons(frame)
    if DROPPED not in marked.columns:
        return frame, {}, []
    bad = marked.filter(pl.col(DROPPED).is_not_null()).head(shown)
    lines = [f"{where.format(**row)}: {row[DROPPED]}" for row in bad.iter_rows(named=True)]
    kept, counts = split(marked)
    return kept, counts, lines


def _with_reasons(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with its DROPPED column filled by the screen's rules (unchanged when there is
    nothing to screen)."""
    if frame.is_empty() or "start_ns" not in frame.columns or "dur_ns" not in frame.columns:
        return frame
    start, dur = pl.col("start_ns"), pl.col("dur_ns")
    # a reason the reader found itself (a cell of the wrong type) comes first
    reason = (
        pl.when(pl.col(DROPPED).is_not_null() if DROPPED in frame.columns else pl.lit(False))
        .then(pl.col(DROPPED) if DROPPED in frame.columns else pl.lit(None, pl.String))
        .when(start.is_null())
        .then(pl.lit(MISSING_TIMESTAMP))
        .when(dur.is_null())
        .then(pl.lit(MISSING_DURATION))
        .when(dur < 0)
        .then(pl.lit(NEGATIVE_DURATION))
        .when(start.cast(pl.Float64) + dur.cast(pl.Float64) >= MAX_END_NS)
        .then(pl.lit(DURATION_OUT_OF_RANGE))
    )
    return frame.with_columns(reason.alias(DROPPED))


def merged(*counts: Mapping[str, int] | None) -> dict[str, int]:
    """The sum of several reason -> count maps (zero counts left out)."""
    out: dict[str, int] = {}
    for one in counts:
        for reason, n in (one or {}).items():
            if n:
                out[reason] = out.get(reason, 0) + int(n)
    return dict(sorted(out.items()))


def total(counts: Mapping[str, int] | None) -> int:
    return sum((counts or {}).values())


def sql_reason(cases: Iterable[tuple[str, str]]) -> str:
    """A SQL CASE yielding the first reason whose condition holds, NULL when none does."""
    whens = " ".join(f"when {condition} then '{reason}'" for condition, reason in cases)
    return f"case {whens} end"


ENTRY = "_entry"  # the column a reader fills with the row's position in its file (an int)


def positions(frame: pl.DataFrame, label: str, column: str = DROPPED) -> list[str]:
    """One `<label>[i]: reason` line per dropped row of `frame` (its `ENTRY` column is i), in
    file order: what the quarantine row of the file names (docs/ingest_rules.md)."""
    if column not in frame.columns or ENTRY not in frame.columns:
        return []
    bad = frame.filter(pl.col(column).is_not_null()).select(ENTRY, column).sort(ENTRY)
    return [f"{label}[{i}]: {reason}" for i, reason in bad.iter_rows()]
