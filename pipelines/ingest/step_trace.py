"""step_trace_time.csv -> the profiler's own step breakdown (rows with origin='profiler').

Header variants (read by name): 9 columns (V2023, no Preparing), 10 (V2025a, + Preparing),
11 (V2025b, Device_id first). All values are microseconds, converted exactly to nanoseconds.
An empty `Step` cell (no profiler schedule) becomes step NULL.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipelines.ingest.csv_text import as_int_sql, open_csv, pick, quoted, require, trimmed
from pipelines.ingest.duck import scratch_connection
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.units import us_text_to_ns_sql

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


@dataclass
class StepTrace:
    """Profiler step breakdown rows (without run_id/rank) and the device id column, if any."""

    rows: pl.DataFrame
    device_id: int | None
    columns: tuple[str, ...]  # canonical columns this file actually had


def read_step_trace_time(path: Path) -> StepTrace:
    """Read one step_trace_time.csv; raises QuarantineError."""
    con = scratch_connection()
    try:
        headers = open_csv(con, path, "st")
        require(headers, path.name, step=("Step",), computing=("Computing",))
        present = {key: pick(headers, header) for key, header in COLUMN_HEADERS.items()}
        selects = [f"{as_int_sql(pick(headers, 'Step'))} as step"]
        checks = []
        for key, header in present.items():
            if header is None:
                selects.append(f"null::bigint as {key}")
                continue
            selects.append(f"{us_text_to_ns_sql(quoted(header))} as {key}")
            checks.append(f"({trimmed(header)} is not null and {key} is null)")
        device = pick(headers, "Device_id")
        selects.append(f"{as_int_sql(device)} as device_id")
        step_text = trimmed(pick(headers, "Step"))
        rows = con.sql(
            f"select {', '.join(selects)}, {step_text} as step_text,"
            f" {' or '.join(checks) or 'false'} as bad from st"
        ).pl()
    finally:
        con.close()
    bad = rows.filter(
        pl.col("bad") | (pl.col("step").is_null() & pl.col("step_text").is_not_null())
    )
    if bad.height:
        raise QuarantineError(
            "unparsable_rows", f"{path.name}: {bad.height} rows with cells that are not numbers"
        )
    devices = rows["device_id"].drop_nulls()
    device_id = int(devices.mode().sort()[0]) if len(devices) else None
    rows = rows.drop("bad", "step_text", "device_id").with_columns(
        pl.lit("profiler").alias("origin")
    )
    return StepTrace(
        rows=rows,
        device_id=device_id,
        columns=tuple(k for k, v in present.items() if v is not None),
    )
