"""Round five of the hostile-input campaign (issue 36): operator-latency tables. Each case is a
copy of a real table (Vidur's A100 attention.csv / mlp.csv under tests/data/latency_tables) or a
small generic table with ONE change; the expected points are counted from the raw text with the
csv module (the row with the bad value left out). The campaign script (/tmp/h5/hostile/campaign5.py,
docs/ingest_rules.md "round five") ran them through `tracereplay ingest`; these are its fast
failing cases (all failed before this round: the row was kept with a default or NULL value, or
the whole table was lost)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.readers.latency_tables import read_table

VIDUR = Path(__file__).parents[1] / "data/latency_tables/vidur/e2d00e9/data/profiling/a100"


def _vidur(name: str) -> Path:
    """A Vidur file of tests/data/latency_tables/vidur (git-ignored local copies: SOURCES.md);
    the test is skipped where they are not restored, as on CI's clean clone."""
    path = VIDUR / name
    if not path.is_file():
        pytest.skip(f"{path}: fetched copies are not committed")
    return path


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text())))


def _write(path: Path, rows: list[list[str]]) -> Path:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue())
    return path


@pytest.fixture(scope="module")
def attention() -> list[list[str]]:
    """Vidur's header, its first 40 prefill rows of batch 1 and 10 decode rows."""
    rows = _rows(_vidur("attention.csv"))
    col = {name: j for j, name in enumerate(rows[0])}
    prefill = [
        r for r in rows[1:] if r[col["is_prefill"]] == "True" and r[col["batch_size"]] == "1"
    ]
    decode = [r for r in rows[1:] if r[col["is_prefill"]] == "False"]
    return [rows[0], *prefill[:40], *decode[:10]]


def _points_per_row(header: list[str]) -> int:
    ops = {c.split(".")[1] for c in header if c.startswith("time_stats.") and c.endswith(".median")}
    return len(ops - {"attn_decode"})


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("batch_size", "abc", "invalid_batch"),
        ("batch_size", "0", "invalid_batch"),
        ("batch_size", "-3", "invalid_batch"),
        ("batch_size", "2.5", "invalid_batch"),
        ("batch_size", "", "invalid_batch"),
        ("time_stats.attn_prefill.std", "abc", "invalid_stat"),
        ("time_stats.attn_prefill.mean", "-0.5", "invalid_stat"),
        ("time_stats.attn_prefill.min", "nan", "invalid_stat"),
        ("num_tensor_parallel_workers", "abc", "invalid_tp"),
        ("num_tensor_parallel_workers", "0", "invalid_tp"),
        ("is_prefill", "maybe", "invalid_phase"),
        ("is_prefill", "", "invalid_phase"),
        ("kv_cache_size", "", "invalid_prefix"),
        ("kv_cache_size", "8192", "past_max_len"),
    ],
)
def test_one_bad_value_costs_its_row(attention, tmp_path, column, value, reason) -> None:
    """Before: batch 'abc' / -3 / 2.5 / '' became batch 1 and 0 stayed 0, a statistic or tp that
    was no number became NULL, an is_prefill other than true/false a decode row, an empty
    kv_cache_size a point without prefix, a prefix past max_model_len a point; all exit 0."""
    col = attention[0].index(column)
    bad = [list(r) for r in attention]
    bad[7][col] = value
    table = read_table(_write(tmp_path / "attention.csv", bad))
    want = (40 - 1) * _points_per_row(attention[0])
    assert table.points.height == want
    assert 8 not in table.points["line"].to_list()
    assert len(table.quarantined) == 1
    assert f"line 8: {reason}" in table.quarantined[0].detail


def test_vidur_real_attention_still_loads_whole(attention, tmp_path) -> None:
    table = read_table(_write(tmp_path / "attention.csv", attention))
    assert table.points.height == 40 * _points_per_row(attention[0])
    assert table.quarantined == []
    assert table.left_out == {"decode_rows": 10}


def test_cr_only_line_ends_and_a_blank_line(tmp_path) -> None:
    """An old-Mac file (CR only) was read as one header line: 0 of 2,610 MLP points, exit 0. A
    blank line became a row of empty cells, set aside as missing_time (exit 2)."""
    text = _vidur("mlp.csv").read_text()
    clean = read_table(VIDUR / "mlp.csv").points
    (tmp_path / "mlp.csv").write_bytes(text.replace("\n", "\r").encode())
    kept = ("run_id", "origin", "content_hash", "line", "hardware")  # hardware: from the path
    assert read_table(tmp_path / "mlp.csv").points.drop(kept).equals(clean.drop(kept))
    lines = text.split("\n")
    (tmp_path / "b" / "mlp.csv").parent.mkdir()
    (tmp_path / "b" / "mlp.csv").write_text("\n".join([*lines[:10], "", *lines[10:]]))
    blank = read_table(tmp_path / "b" / "mlp.csv")
    assert blank.points.height == clean.height and blank.quarantined == []


GENERIC = [["operator", "tp", "tokens", "prefix", "time_us", "std_us"]] + [
    ["attn", "2", str(t), str(p), f"{10 + t * 0.5 + p * 0.01:.3f}", "0.1"]
    for t in (128, 256)
    for p in (0, 256, 512)
]


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("tp", "2.5", "invalid_tp"),
        ("tp", str(2**40), "invalid_tp"),
        ("std_us", "-0.1", "invalid_stat"),
        ("prefix", "", "invalid_prefix"),
    ],
)
def test_generic_one_bad_value(tmp_path, column, value, reason) -> None:
    """tp 2^40 made the whole table unreadable (Int32 overflow); tp 2.5, std -0.1 and an empty
    prefix were kept (NULL tp, a negative std, a point without prefix)."""
    rows = [list(r) for r in GENERIC]
    rows[3][rows[0].index(column)] = value
    table = read_table(_write(tmp_path / "table.csv", rows))
    assert table.points.height == 5
    assert f"line 4: {reason}" in table.quarantined[0].detail


def test_generic_latin1_byte_kept_as_escape(tmp_path) -> None:
    """A model cell with a byte that is no UTF-8 failed the whole table (Polars' UTF-8 check)."""
    rows = [[*GENERIC[0], "model"]] + [[*r, "m1"] for r in GENERIC[1:]]
    path = _write(tmp_path / "table.csv", rows)
    path.write_bytes(path.read_bytes().replace(b"m1\n", b"m\xe9\n", 1))
    table = read_table(path)
    assert table.points.height == 6
    assert "m\\xe9" in table.points["model"].to_list()


@pytest.mark.parametrize("extra", ["time_ms", "tokens"])
def test_ambiguous_header_is_refused(tmp_path, extra) -> None:
    """Two time columns (time_ms was taken silently) or a column given twice (Polars renamed
    the second): which one is meant is unknown, so the table is refused by name."""
    rows = [[*GENERIC[0], extra]] + [[*r, "7"] for r in GENERIC[1:]]
    with pytest.raises(ValueError, match="which one is meant is unknown"):
        read_table(_write(tmp_path / "table.csv", rows))


def test_parquet_nested_and_binary_columns_no_layout_reads(tmp_path) -> None:
    """A list, map or binary column beside the generic columns made the whole table unreadable
    (its cast to text failed): it is left out; a nested time column is refused by name."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    frame = pl.DataFrame(GENERIC[1:], schema=GENERIC[0], orient="row")
    table = frame.to_arrow()
    n = table.num_rows
    table = table.append_column("shapes", pa.array([[1, 2]] * n, pa.list_(pa.int64())))
    table = table.append_column("blob", pa.array([b"\xff"] * n, pa.binary()))
    table = table.append_column("m", pa.array([[("k", 1)]] * n, pa.map_(pa.string(), pa.int64())))
    pq.write_table(table, tmp_path / "t.parquet")
    assert read_table(tmp_path / "t.parquet").points.height == 6
    nested = frame.to_arrow().set_column(
        4, "time_us", pa.array([[1.0]] * n, pa.list_(pa.float64()))
    )
    pq.write_table(nested, tmp_path / "n.parquet")
    with pytest.raises(ValueError, match="'time_us' is a List"):
        read_table(tmp_path / "n.parquet")


@pytest.mark.parametrize("value", ["99999999999", "²"])
def test_a_count_tag_past_integer_is_refused(tmp_path, capsys, value) -> None:
    """`--tag tp=99999999999` reached the INTEGER column and lost the whole table
    (unreadable_table: a Polars overflow message); '²' is a digit int() refuses."""
    from pipelines.cli import main

    table = _write(tmp_path / "table.csv", GENERIC)
    argv = ["ingest", str(table), "--warehouse", str(tmp_path / "w.duckdb"), "--tag", f"tp={value}"]
    assert main(argv) == 2
    assert "tp must be a whole number >= 1 (at most 2147483647)" in capsys.readouterr().err
    assert not (tmp_path / "w.duckdb").exists()


def test_advise_on_a_table_whose_points_lie_on_a_plane_is_one_line(tmp_path, capsys) -> None:
    """A generic table whose times are exactly linear in tokens and prefix (no curvature) gave
    the chunk predictor a = -1e-14 and `advise --table` ended in a ValueError traceback."""
    from pipelines.cli import main

    rows = [["operator", "tokens", "prefix", "time_us"]] + [
        ["attn", str(t), str(p), f"{10 + t * 0.5 + p * 0.01:.3f}"]
        for t in (128, 256, 512)
        for p in (0, 256, 512, 1024)
    ]
    table = _write(tmp_path / "table.csv", rows)
    argv = ["advise", "--table", str(table), "--seq-len", "4K", "--chunks", "256,512"]
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "advise:" in line]
    assert err and "Traceback" not in "".join(err)
