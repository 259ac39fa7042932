"""Exact time-unit conversions: profiler text writes microseconds with up to 3 (sometimes more)
decimals; inside the warehouse everything is integer nanoseconds."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

# DuckDB expression: a VARCHAR column of microseconds -> exact integer nanoseconds (NULL if not a
# number). DECIMAL parsing is exact for the 3-decimal strings torch_npu writes; more decimals round.
US_TEXT_TO_NS_SQL = "round(try_cast(trim({col}, ' \t\r\n\"') as decimal(38, 9)) * 1000)::bigint"


def us_text_to_ns_sql(column: str) -> str:
    """SQL for converting the VARCHAR microsecond column `column` to integer nanoseconds."""
    return US_TEXT_TO_NS_SQL.format(col=column)


def us_to_ns(value: str | float | int | None) -> int | None:
    """Microseconds (text or number) to integer nanoseconds; text is parsed exactly."""
    if value is None:
        return None
    try:
        return int((Decimal(str(value).strip()) * 1000).to_integral_value())
    except (InvalidOperation, ValueError):
        return None


def ms_to_ns(value: str | float | int | None) -> int | None:
    """Milliseconds (communication*.json durations) to integer nanoseconds."""
    if value is None:
        return None
    try:
        return int((Decimal(str(value).strip()) * 1_000_000).to_integral_value())
    except (InvalidOperation, ValueError):
        return None
