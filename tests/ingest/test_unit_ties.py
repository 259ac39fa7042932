"""A time past the ns is rounded the same way on every path: the CSV cells' SQL
(units.US_TEXT_TO_NS_SQL: DuckDB's round of a DECIMAL, ties away from zero) and the Python
conversions of the JSON summaries (units.us_to_ns / ms_to_ns) rounded ties to even, so one text
gave two ns values: set D's kernel_details.csv `5.7985` µs -> 5,799 ns, the same text through
us_to_ns 5,798; communication.json Transit Time `1.2285845` ms (set D) -> 1,228,584 ns."""

from __future__ import annotations

import duckdb
import pytest

from pipelines.ingest.units import ms_to_ns, us_text_to_ns_sql, us_to_ns

TIES = ["5.7985", "1744.1465", "0.0025", "-0.0005", "72.1612", "12.3456789"]


@pytest.mark.parametrize("cell", TIES)
def test_python_and_sql_round_a_tie_alike(cell: str) -> None:
    sql = duckdb.execute(f"select {us_text_to_ns_sql('c')} from (select ? as c)", [cell])
    assert us_to_ns(cell) == sql.fetchone()[0]


def test_ms_ties_go_away_from_zero() -> None:
    assert ms_to_ns("1.2285845") == 1_228_585  # 1,228,584.5 ns
    assert ms_to_ns(0.1750235) == 175_024
    assert us_to_ns("5.7985") == 5_799 and us_to_ns("-0.0005") == -1
