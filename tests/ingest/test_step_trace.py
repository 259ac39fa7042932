"""step_trace_time.csv variants (9, 10, 11 columns, empty Step)."""

from __future__ import annotations

from pathlib import Path

from pipelines.ingest.readers.step_trace import read_step_trace_time

OUT = "ASCEND_PROFILER_OUTPUT/step_trace_time.csv"


def test_three_header_variants(real_dir: Path) -> None:
    v2023 = read_step_trace_time(
        real_dir / f"msinsight/server/src/test/test_data/test_rank_0/{OUT}"
    )
    row = v2023.rows.row(0, named=True)
    assert row["step"] == 2 and row["preparing_ns"] is None
    assert row["computing_ns"] == 75174575  # 75174.57464453117 us, rounded to ns
    assert "preparing_ns" not in v2023.columns
    v2025a = read_step_trace_time(
        real_dir / f"msinsight/test/data/pytorch/text/level1/rank0_ascend_pt/{OUT}"
    )
    row = v2025a.rows.row(0, named=True)
    assert row["stage_ns"] == 136581000 and row["preparing_ns"] == 17902500
    assert v2025a.device_id is None
    v2025b = read_step_trace_time(real_dir / f"msinsight/test/st/level2/rank_3_ascend_pt/{OUT}")
    assert v2025b.device_id == 5
    assert v2025b.rows["origin"].to_list() == ["profiler"]
    assert v2025b.rows["bubble_ns"].to_list() == [0]


def test_empty_step_is_null(tmp_path: Path) -> None:
    path = tmp_path / "step_trace_time.csv"
    path.write_text(
        "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,"
        "Bubble,Communication(Not Overlapped and Exclude Receive)\n"
        ",1.5,2,0,2,3,6.5,0,2\n"
    )
    rows = read_step_trace_time(path).rows
    assert rows["step"].to_list() == [None]
    assert rows["computing_ns"].to_list() == [1500]
