"""kernel_details.csv -> kernel rows (one per device task, top-level HCCL ops included).

Columns are found by header name, so every variant works: Level0 (8 columns), V2023 (no OP State,
comm core `HCCL`), V2025a, V2025b (`Device_id` second), `Block Dim` or `Block Num`, and CANN
msprof `op_summary` names (`Op Name`, `Task Start Time(us)` ...). Times are microsecond text with
a trailing TAB (sometimes quoted), parsed exactly to nanoseconds. Rows whose accelerator core is
`HCCL` or `COMMUNICATION` (or whose name starts with `hcom_`) are communication (`is_comm`).

A start, duration or wait cell in scientific notation (`1.69512E+15`, Excel damage) quarantines
the whole file (reason `excel_mangled_number`): the nanoseconds cannot be recovered. A start or
duration cell that is text, NaN or inf costs its row (with a quarantine row naming its line,
reason `invalid_rows`); a header without name/start/duration quarantines the file as
`missing_columns`. A row with one bad value is dropped and counted
(dropped.py codes: missing start/duration, negative duration, out-of-range values, a Step Id
that is not an integer, a wait cell that is not a number); zero durations are kept
(docs/ingest_rules.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from pipelines.ingest import dropped as drop
from pipelines.ingest.readers.csv_text import (
    EXCEL_MANGLED,
    NUMBER,
    LongLines,
    as_int_sql,
    check_time_columns,
    open_csv,
    quoted,
    require,
    trimmed,
)
from pipelines.ingest.readers.csv_text import pick as pick_column
from pipelines.ingest.units import us_text_to_ns_sql
from pipelines.store.duck import scratch_connection

COMM_CORES = ("HCCL", "COMMUNICATION")
# the header names read, per field (any case): a long line's cells in other columns may be left
# empty (csv_text.MAX_UNUSED_CELL_BYTES)
COLUMNS = {
    "name": ("Name", "Op Name"),
    "start": ("Start Time(us)", "Task Start Time(us)"),
    "dur": ("Duration(us)", "Task Duration(us)"),
    "core": ("Accelerator Core", "Task Type"),
    "type": ("Type", "OP Type"),
    "wait": ("Wait Time(us)", "Task Wait Time(us)"),
    "step": ("Step Id", "Step ID"),
    "device": ("Device_id", "Device Id"),
}


def _huge(cell: str) -> str:
    """SQL: a cell in scientific notation whose value in µs is past the int64 ns range (`1e300`
    in one row of a file whose other times are plain: a bad value, not Excel damage)."""
    return (
        f"regexp_matches({cell}, '{EXCEL_MANGLED}')"
        f" and abs(try_cast({cell} as double)) * 1000 >= {drop.MAX_END_NS}"
    )


ROW_HASH = "_row_hash"  # md5 of the row's every cell as read (JSON of the row: NULL != "NULL")


def _collapse_copies(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with every row that repeats an earlier row cell for cell (all columns of the
    file, not only the ones read) marked `duplicate_row`, and `_first`: the 0-based index of
    the first row of its kind. One device task is one row: two kernels cannot start at one
    instant on one stream, so a row written twice is one kernel, counted once (a reason found
    in the row itself comes first: both copies of a bad row are dropped for it)."""
    first = pl.col("_index").min().over(ROW_HASH)
    return (
        frame.with_row_index("_index")
        .with_columns(
            pl.when(pl.col(drop.DROPPED).is_null() & (pl.col("_index") != first))
            .then(pl.lit(drop.DUPLICATE_ROW))
            .otherwise(pl.col(drop.DROPPED))
            .alias(drop.DROPPED),
            first.alias("_first"),
        )
        .drop(ROW_HASH, "_index")
    )


@dataclass
class KernelDetails:
    """Kernel rows (canonical `kernels` columns without run_id/rank) and the device they ran on."""

    kernels: pl.DataFrame
    device_id: int | None
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows set aside
    # cells that are not numbers (text, NaN, inf): "line N: reason" of the first few, how many
    set_aside: list[str] = field(default_factory=list)
    unusable: int = 0
    # cells of unused columns left empty so that their row could load: "line N: ..."
    repaired: list[str] = field(default_factory=list)


def read_kernel_details(path: Path) -> KernelDetails:
    """Read one kernel_details.csv (or msprof op_summary csv); raises QuarantineError."""
    con = scratch_connection()
    try:
        long_lines = LongLines()
        used = tuple(name.lower() for names in COLUMNS.values() for name in names)
        columns = open_csv(con, path, "kd", long_lines, used=used)
        col = require(
            columns,
            path.name,
            name=COLUMNS["name"],
            start=COLUMNS["start"],
            dur=COLUMNS["dur"],
        )
        core = pick_column(columns, *COLUMNS["core"])
        ktype = pick_column(columns, *COLUMNS["type"])
        wait = pick_column(columns, *COLUMNS["wait"])
        step = pick_column(columns, *COLUMNS["step"])
        device = pick_column(columns, *COLUMNS["device"])
        # a start or duration cell that is not a number (text, NaN, inf) costs its row only; Excel
        # damage still quarantines the file (no time in it can be trusted)
        check_time_columns(
            con,
            "kd",
            path.name,
            [col["start"], col["dur"]],
            [wait] if wait else [],
            unparsable_quarantines=False,
        )
        step_cell, wait_cell = (
            (trimmed(step) if step else "null"),
            (trimmed(wait) if wait else "null"),
        )
        reason = drop.sql_reason(
            [
                ("start_text is null", drop.MISSING_TIMESTAMP),
                (_huge("start_text"), drop.TIMESTAMP_OUT_OF_RANGE),
                (f"not regexp_matches(start_text, '{NUMBER}')", drop.UNPARSABLE_TIMESTAMP),
                ("start_ns is null", drop.TIMESTAMP_OUT_OF_RANGE),
                ("dur_text is null", drop.MISSING_DURATION),
                (
                    "regexp_full_match(lower(dur_text), '[+-]?(nan|inf|infinity)')",
                    drop.NON_FINITE_DURATION,
                ),
                (_huge("dur_text"), drop.DURATION_OUT_OF_RANGE),
                (f"not regexp_matches(dur_text, '{NUMBER}')", drop.UNPARSABLE_DURATION),
                ("dur_ns is null", drop.DURATION_OUT_OF_RANGE),
                ("dur_ns < 0", drop.NEGATIVE_DURATION),
                (f"start_ns::double + dur_ns >= {drop.MAX_END_NS}", drop.DURATION_OUT_OF_RANGE),
                ("step_text is not null and step is null", drop.INVALID_STEP),
                ("step < 0", drop.INVALID_STEP),  # ProfilerStep numbers start at 0
                (
                    f"wait_text is not null and (wait_ns is null"
                    f" or not regexp_matches(wait_text, '{NUMBER}'))",
                    drop.UNPARSABLE_WAIT,
                ),
            ]
        )
        core_sql = f"upper({trimmed(core)})" if core else "null"
        comm_cores = ", ".join(f"'{c}'" for c in COMM_CORES)
        frame = con.sql(
            f"""
            with rows as (
            select {as_int_sql(step)} as step,
                   {trimmed(col["name"])} as name,
                   {trimmed(ktype) if ktype else "null"} as type,
                   {trimmed(core) if core else "null"} as core,
                   {us_text_to_ns_sql(quoted(col["start"]))} as start_ns,
                   {us_text_to_ns_sql(quoted(col["dur"]))} as dur_ns,
                   {us_text_to_ns_sql(quoted(wait)) if wait else "null::bigint"} as wait_ns,
                   coalesce({core_sql} in ({comm_cores}), false)
                       or starts_with(lower({trimmed(col["name"])}), 'hcom_') as is_comm,
                   {as_int_sql(device)} as device_id,
                   {step_cell} as step_text,
                   {wait_cell} as wait_text,
                   {trimmed(col["start"])} as start_text,
                   {trimmed(col["dur"])} as dur_text,
                   md5(to_json(kd)) as {ROW_HASH}
            from kd
            )
            select * exclude (step_text, wait_text, start_text, dur_text),
                   {reason} as {drop.DROPPED}
            from rows
            """
        ).pl()
    finally:
        con.close()
    frame = _collapse_copies(frame)
    # every dropped row is named by its line (not only the cells that are no number)
    unusable = frame.with_row_index().filter(pl.col(drop.DROPPED).is_not_null())
    set_aside = long_lines.reasons() + [
        f"line {long_lines.source_line(index)}: {why}"
        + (
            f" (a copy of line {long_lines.source_line(first)})"
            if why == drop.DUPLICATE_ROW
            else ""
        )
        for index, why, first in unusable.select("index", drop.DROPPED, "_first").head(3).rows()
    ]
    frame, dropped = drop.split(frame.drop("_first"))
    if long_lines.cut:
        dropped = drop.merged(dropped, {drop.CUT_OFF: len(long_lines.cut)})
    devices = frame["device_id"].drop_nulls()
    device_id = int(devices.mode().sort()[0]) if len(devices) else None
    return KernelDetails(
        kernels=frame.drop("device_id"),
        device_id=device_id,
        dropped=dropped,
        set_aside=set_aside,
        unusable=unusable.height + long_lines.left_out,
        repaired=long_lines.repairs(),
    )
