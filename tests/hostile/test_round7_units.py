"""Round seven of the hostile-input campaign (issue 36): a microsecond cell `1_000` in the text
readers. DuckDB's DECIMAL cast takes the underscore (`1_000` -> 1000), so on 373e096 a
kernel_details.csv Duration, a step_trace_time.csv time or a cluster_step_trace_time.csv time
written so was stored as 1000 µs; no profiler writes it and no CSV reader reads it, so the cell
is its row's bad value, as `1_000` already is in a latency table (round six)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from pipelines.ingest.units import us_text_to_ns_sql
from tests.hostile.text_rank import text_rank_copy


@pytest.mark.parametrize(
    ("cell", "ns"),
    [
        ("1000", 1_000_000),
        ("1.5E+3", 1_500_000),
        ("+5", 5000),
        (".5", 500),
        ("-1", -1000),
        ("12.3456789", 12346),
        ("1_000", None),
        ("1_0.5", None),
        ("0x10", None),
        ("١٠٠٠", None),
    ],
)
def test_only_an_ascii_number_is_a_time(cell: str, ns: int | None) -> None:
    sql = f"select {us_text_to_ns_sql('c')} from (select ? as c)"
    assert duckdb.execute(sql, [cell]).fetchone()[0] == ns


def _set_cell(path: Path, line: int, column: str, value: str) -> None:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    rows[line - 1][rows[0].index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue())


def test_a_step_time_1_000_costs_its_row(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rank = text_rank_copy(real_dir, tmp_path / "run")
    steps = rank / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    _set_cell(steps, 2, "Free", "1_000")
    code = main(["ingest", str(tmp_path / "run"), "--warehouse", str(tmp_path / "w.duckdb")])
    err = capsys.readouterr().err
    assert code == 2 and "step_trace_time.csv" in err and "line 2" in err
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        free = con.execute(
            "select free_ns from step_breakdown where origin = 'profiler'"
        ).fetchall()
    assert free == []  # its one step row set aside, not stored with 1000 µs free
