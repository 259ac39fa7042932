"""Round six of the hostile-input campaign (issue 36), the generic latency-table layout: one bad
cell in a small self-made table. On ce6c018 an empty `operator` cell filed its row under an
operator named `unnamed`, and `1_000` in a number cell was read as 1000 (Python's float takes the
underscore; no CSV reader does): /tmp/h6/for_mem.md items 4 and 6, docs/latency_tables.md."""

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


def _ingest(tmp_path: Path, rows: list[list[str]], capsys: pytest.CaptureFixture[str]):
    table = tmp_path / "table.csv"
    with table.open("w", newline="") as out:
        csv.writer(out).writerows([HEADER, *rows])
    code = main(["ingest", str(table), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    err = capsys.readouterr().err
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        stored = con.execute(
            "select operator, tokens, prefix_tokens from latency_points order by all"
        ).fetchall()
    return code, err, stored


def test_the_clean_table_stores_every_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    code, _, stored = _ingest(tmp_path, ROWS, capsys)
    assert code == 0 and len(stored) == len(ROWS)


def test_an_empty_operator_cell_sets_its_row_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [list(r) for r in ROWS]
    rows[6][0] = ""  # line 8 of the file (the header is line 1)
    code, err, stored = _ingest(tmp_path, rows, capsys)
    assert code == 2
    assert "line 8: missing_operator" in err
    assert len(stored) == len(ROWS) - 1
    assert {operator for operator, _, _ in stored} == {"attn"}


@pytest.mark.parametrize(("column", "reason"), [(2, "invalid_tokens"), (4, "invalid_time")])
@pytest.mark.parametrize("cell", ["1_000", "١٠٠٠"])
def test_a_number_python_reads_but_csv_does_not_is_a_bad_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: int, reason: str, cell: str
) -> None:
    rows = [list(r) for r in ROWS]
    rows[3][column] = cell  # line 5
    code, err, stored = _ingest(tmp_path, rows, capsys)
    assert code == 2
    assert f"line 5: {reason}" in err
    assert len(stored) == len(ROWS) - 1


@pytest.mark.parametrize("fact", ["source", "hardware", "model"])
def test_an_empty_naming_fact_sets_its_row_aside_unless_a_tag_gives_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fact: str
) -> None:
    header = [*HEADER, "source", "hardware"]
    rows = [[*r, "vidur", "a100"] for r in ROWS]
    rows[6][header.index(fact)] = ""  # line 8
    table = tmp_path / "table.csv"
    with table.open("w", newline="") as out:
        csv.writer(out).writerows([header, *rows])
    warehouse = str(tmp_path / "w.duckdb")
    code = main(["ingest", str(table), "--warehouse", warehouse, "--no-progress"])
    assert code == 2 and f"line 8: missing_{fact}" in capsys.readouterr().err
    tagged = tmp_path / "tagged"
    tagged.mkdir()
    (tagged / "table.csv").write_bytes(table.read_bytes())
    warehouse = str(tmp_path / "w2.duckdb")
    tag = ["--tag", f"{fact}=given"]
    assert main(["ingest", str(tagged / "table.csv"), "--warehouse", warehouse, *tag]) == 0
    with duckdb.connect(warehouse, read_only=True) as con:
        assert con.execute("select count(*) from latency_points").fetchone()[0] == len(ROWS)
