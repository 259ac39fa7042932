"""Round six of the hostile-input campaign (issue 36): `kernels.no_same_stream_overlap` on a rank
whose kernels' streams are unknown. A kernel_details.csv without trace_view.json gives no
compute-lane slice, so no kernel has a known stream; kernels of two streams may run at once on the
AI cores, and the check flagged them as one stream's overlap. Built from the real msinsight Level1
rank 0 text export (read in place under ../shared/traces/real, copied before changing): no real
export here runs two streams of AI-core work at once (every kernel_details.csv with a `Stream ID`
column has one stream of AI-core kernels), so a second stream is made by adding a kernel on
`Stream ID` 3 that starts a quarter into a stream-2 kernel. The same folder with one kernel written
again 5 µs later on its own stream must still fail (a real duplicate)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from pipelines.quality.check_catalog import expectation
from pipelines.quality.check_queries import probe, select_runs
from tests.hostile.text_rank import text_rank_copy

OVERLAP = "kernels.no_same_stream_overlap"
AI_CORES = ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV")


def _rows(text: str) -> tuple[list[str], list[list[str]]]:
    table = list(csv.reader(io.StringIO(text)))
    return table[0], [r for r in table[1:] if r]


def _write(path: Path, header: list[str], rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows])
    path.write_text(out.getvalue())


def _without_trace_view(real_dir: Path, dest: Path) -> Path:
    rank = text_rank_copy(real_dir, dest)
    (rank / "ASCEND_PROFILER_OUTPUT/trace_view.json").unlink()
    return next(dest.rglob("kernel_details.csv"))


def _long_ai_core_row(header: list[str], rows: list[list[str]]) -> int:
    """The first AI-core kernel longer than 20 µs (its overlaps pass the check's limit)."""
    core, length = header.index("Accelerator Core"), header.index("Duration(us)")
    return next(i for i, r in enumerate(rows) if r[core] in AI_CORES and float(r[length]) > 20)


def _failing(warehouse: Path) -> int:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        select_runs(con, None)
        return probe(con, expectation(OVERLAP)).failing


def _ingest(folder: Path, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["ingest", str(folder), "--warehouse", str(warehouse), "--no-progress"]) == 0
    return capsys.readouterr().err


def test_two_streams_at_once_without_trace_view_pass(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed before round six: `warning: kernels.no_same_stream_overlap` at ingest and 1
    failing pair in `check`, though the two kernels are on streams 2 and 3."""
    path = _without_trace_view(real_dir, tmp_path / "run")
    header, rows = _rows(path.read_text())
    i = _long_ai_core_row(header, rows)
    start, length = header.index("Start Time(us)"), header.index("Duration(us)")
    other = next(r for r in rows if r[header.index("Name")] != rows[i][header.index("Name")])
    second = list(other)  # another kernel, on stream 3, a quarter into kernel i
    second[header.index("Stream ID")] = "3"
    second[start] = f"{float(rows[i][start]) + float(rows[i][length]) / 4:.3f}"
    second[length] = rows[i][length]
    rows.insert(i + 1, second)
    _write(path, header, rows)
    err = _ingest(tmp_path / "run", tmp_path / "w.duckdb", capsys)
    assert OVERLAP not in err
    assert _failing(tmp_path / "w.duckdb") == 0


def test_a_kernel_written_again_5_us_later_without_trace_view_fails(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _without_trace_view(real_dir, tmp_path / "run")
    header, rows = _rows(path.read_text())
    i = _long_ai_core_row(header, rows)
    start = header.index("Start Time(us)")
    again = list(rows[i])
    again[start] = f"{float(rows[i][start]) + 5:.3f}"
    rows.insert(i + 1, again)
    _write(path, header, rows)
    err = _ingest(tmp_path / "run", tmp_path / "w.duckdb", capsys)
    assert f"warning: {OVERLAP}:" in err  # named at ingest
    assert _failing(tmp_path / "w.duckdb") == 1
