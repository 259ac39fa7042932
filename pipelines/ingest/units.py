"""Exact time-unit conversions: profiler text writes microseconds with up to 3 (sometimes more)
decimals; inside the warehouse everything is integer nanoseconds."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

# DuckDB expression: a VARCHAR column of microseconds -> exact integer nanoseconds (NULL if not a
# number). The common form (digits, up to 3 decimals, as torch_npu writes) is split into integer
# and fraction (fast); anything else (more decimals, exponents, signs) goes through DECIMAL, which
# is exact but ~20x slower. Surrounding blanks, TABs and quotes are ignored. A number whose ns do
# not fit an int64 is NULL too, never an error (the fast path takes at most 15 integer digits,
# < 1e18 ns; the DECIMAL path is bounded before it multiplies). Only a number written in ASCII
# digits, sign, point and exponent reaches DECIMAL: DuckDB's cast also takes `1_000` as 1000
# (issue 36 round seven: a cluster_step_trace_time.csv, step_trace_time.csv or kernel_details.csv
# cell `1_000` was stored as 1000 µs), which no profiler writes and no CSV reader reads.
_CELL = "trim({col}, ' \t\r\n\"')"
_MAX_US = "9223372036854775.807"
_NUMBER = "[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?"
US_TEXT_TO_NS_SQL = (
    "case when regexp_full_match({cell}, '[0-9]{{1,15}}([.][0-9]{{0,3}})?') then"
    " try_cast(split_part({cell}, '.', 1) as bigint) * 1000"
    " + coalesce(try_cast(rpad(split_part({cell}, '.', 2), 3, '0') as bigint), 0)"
    " when regexp_full_match({cell}, '" + _NUMBER + "')"
    " and abs(try_cast({cell} as decimal(38, 9))) <= " + _MAX_US + " then"
    " round(try_cast({cell} as decimal(38, 9)) * 1000)::bigint end"
)


def us_text_to_ns_sql(column: str) -> str:
    """SQL for converting the VARCHAR microsecond column `column` to integer nanoseconds."""
    return US_TEXT_TO_NS_SQL.format(cell=_CELL.format(col=column))


def us_to_ns(value: str | float | int | None) -> int | None:
    """Microseconds (text or number) to integer nanoseconds; text is parsed exactly, and a
    value past the ns (`5.7985`) rounded to the nearest ns, ties away from zero, as the SQL of
    US_TEXT_TO_NS_SQL rounds it (DuckDB's round of a DECIMAL)."""
    if value is None:
        return None
    try:
        return int((Decimal(str(value).strip()) * 1000).to_integral_value(ROUND_HALF_UP))
    except (InvalidOperation, ValueError):
        return None


def ms_to_ns(value: str | float | int | None) -> int | None:
    """Milliseconds (communication*.json durations) to integer nanoseconds, rounded as
    us_to_ns."""
    if value is None:
        return None
    try:
        return int((Decimal(str(value).strip()) * 1_000_000).to_integral_value(ROUND_HALF_UP))
    except (InvalidOperation, ValueError):
        return None
