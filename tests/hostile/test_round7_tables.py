"""Round seven of the hostile-input campaign (issue 36), the generic latency-table layout: a
header whose names are padded with spaces was recognised as the generic layout and then failed
with an IndexError traceback on 373e096 (the padded time column was not found)."""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main

HEADER = ["operator", "model", "tokens", "prefix", "time_us"]
ROWS = [
    ["attn", "m1", str(tokens), str(prefix), str(10 + tokens / 100 + prefix / 1000)]
    for tokens in (512, 1024)
    for prefix in (0, 1024, 2048, 4096, 8192)
]


def _ingest(tmp_path: Path, header: list[str], rows: list[list[str]]) -> tuple[int, list]:
    table = tmp_path / "table.csv"
    with table.open("w", newline="") as out:
        csv.writer(out).writerows([header, *rows])
    code = main(["ingest", str(table), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        stored = con.execute(
            "select operator, tokens, prefix_tokens, time_ns from latency_points order by all"
        ).fetchall()
    return code, stored


def test_names_padded_with_spaces_are_the_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "clean").mkdir()
    (tmp_path / "padded").mkdir()
    clean = _ingest(tmp_path / "clean", HEADER, ROWS)
    padded = _ingest(tmp_path / "padded", [f" {n} " for n in HEADER], ROWS)
    assert "Traceback" not in capsys.readouterr().err
    assert clean == padded and clean[0] == 0 and len(clean[1]) == len(ROWS)


def test_a_row_with_more_cells_than_the_header_costs_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ref").mkdir()
    (tmp_path / "ragged").mkdir()
    _, reference = _ingest(tmp_path / "ref", HEADER, ROWS[:3] + ROWS[4:])
    rows = [list(r) for r in ROWS]
    rows[3] = [*rows[3], "99"]  # line 5: which cell is which is unknown
    code, stored = _ingest(tmp_path / "ragged", HEADER, [*rows[:6], [], *rows[6:]])
    err = capsys.readouterr().err
    assert code == 2 and "line 5: extra_cells" in err
    assert stored == reference  # the blank line is no row, the others load
