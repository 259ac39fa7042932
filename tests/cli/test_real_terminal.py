"""The terminal output of the commands on the real sets (../shared/traces/real), read as a
performance engineer new to the tool reads it: every line within 120 columns, no `None` /
`nan` printed as a value, durations with units."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.ingest.load import ingest_paths
from pipelines.store import open_store

B0 = "msinsight/test/data/pytorch/text/level0"
B1 = "msinsight/test/data/pytorch/text/level1"
REAL_SETS = (
    "msinsight/test/st/level2",
    B0,
    B1,
    "msinsight/test/data/pytorch/db/level1",
    "msinsight/server/src/test/test_data",
    "msprof-analyze/test/ut/advisor/advisor_backend",
    "kineto",
)
WIDTH = 120


@pytest.fixture(scope="module")
def real_warehouse(real_dir: Path, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("terminal") / "w.duckdb"
    con = open_store(target).open()
    try:
        ingest_paths([real_dir / p for p in REAL_SETS], con, progress=False)
    finally:
        con.close()
    return target


def _run_id(warehouse: Path, origin_suffix: str) -> str:
    con = open_store(warehouse).open(read_only=True)
    try:
        rows = con.execute("select run_id, origin from runs").fetchall()
    finally:
        con.close()
    (run_id,) = [r for r, o in rows if o.endswith(origin_suffix)]
    return run_id


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _assert_readable(text: str) -> None:
    too_wide = [line for line in _lines(text) if len(line) > WIDTH]
    assert not too_wide, f"{len(too_wide)} line(s) past {WIDTH} columns: {too_wide[0]!r}"
    words = set(text.replace(",", " ").replace(";", " ").split())
    assert not words & {"None", "nan", "NaN", "null"}, text


def test_explain_of_two_real_runs_fits_the_terminal(real_warehouse: Path, capsys) -> None:
    """B0 vs B1 (Level0 / Level1 exports of one job) hold no chunks: the tau_k hint named
    `tracereplay chunks --profiler-steps` on one 151-column line."""
    base, cand = _run_id(real_warehouse, B0), _run_id(real_warehouse, B1)
    args = ["explain", f"runs={base}", f"runs={cand}", "--warehouse", str(real_warehouse)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "hcom_allReduce" in out and "--profiler-steps" in out
    _assert_readable(out)


def test_chunks_table_fits_and_leaves_unknown_device_time_blank(
    real_warehouse: Path, capsys
) -> None:
    """`chunks` on the real runs: the table was 129 columns wide (whole Kineto run ids), and a
    run of kernel_details rows only (set A: 5,050 kernels, no trace slice to segment) showed
    `0.0` ms of device time."""
    assert main(["chunks", "--warehouse", str(real_warehouse)]) == 0
    out = capsys.readouterr().out
    _assert_readable(out)
    set_a = _run_id(real_warehouse, "msinsight/test/st/level2")
    (row,) = [line for line in _lines(out) if line and set_a.startswith(line.split()[0])]
    assert row.split()[4:6] == ["-", "-"], row
    b1 = _run_id(real_warehouse, B1)
    (row,) = [line for line in _lines(out) if line and b1.startswith(line.split()[0])]
    assert "17.8 ms" in row, row  # B1's two ranks' union of device work, 8.9 ms each
    assert "--profiler-steps" in out


def test_breakdown_chart_names_the_unit_of_its_axes(real_warehouse: Path) -> None:
    """The real runs' breakdown page: HTA's simple_add step spans 16 s, so the axes read in
    seconds, and the title said `ms` (a 137 ms B0 step drawn as 0.14 under a title in ms)."""
    from dashboards.breakdown import breakdown_chart
    from dashboards.data import rank_breakdown

    con = open_store(real_warehouse).open(read_only=True)
    try:
        run_ids = [r for (r,) in con.execute("select run_id from runs").fetchall()]
        frame = rank_breakdown(con, run_ids)
    finally:
        con.close()
    spec = breakdown_chart(frame).to_dict()
    x = spec["spec"]["encoding"]["x"]
    unit = x["title"].split(",")[0]
    assert unit == "s" and "datum.value / 1000" in x["axis"]["labelExpr"]
    title = spec["title"] if isinstance(spec["title"], str) else spec["title"]["text"]
    assert title.endswith(f", {unit}"), title


def test_run_page_of_a_run_without_collection_time(real_warehouse: Path, tmp_path: Path) -> None:
    """msprof-analyze's advisor kernel_details.csv has no profiler_info: no collection time. The
    run page said `collected None .. None`."""
    import re

    from dashboards.site import run_page

    run_id = _run_id(real_warehouse, "advisor_backend/compute_advice")
    con = open_store(real_warehouse).open(read_only=True)
    try:
        page = run_page(con, run_id, tmp_path).read_text()
    finally:
        con.close()
    text = re.sub(r"<script.*?</script>|<style.*?</style>|<[^>]+>", " ", page, flags=re.S)
    assert "collection time unknown" in text
    assert "None" not in text.split(), " ".join(text.split())


@pytest.mark.parametrize(
    ("origin", "title"),
    [
        ("kineto/HolisticTraceAnalysis/tests/data/trace_filter", "the trace's kernels"),
        ("msinsight/test/data/pytorch/db/level1", "the db's tasks"),
        (B1, "kernel_details"),
        ("advisor_backend/timeline_advice", "the trace's device tasks"),
    ],
)
def test_show_names_where_its_top_kernels_come_from(
    real_warehouse: Path, capsys, origin: str, title: str
) -> None:
    """The top-kernels table of a Kineto trace and of a SQLite export said `(kernel_details)`,
    a file neither has."""
    run_id = _run_id(real_warehouse, origin)
    assert main(["show", run_id, "--no-fit", "--warehouse", str(real_warehouse)]) == 0
    out = capsys.readouterr().out
    assert f"Top kernels by time ({title})" in out
    _assert_readable(out)


def test_dashboards_lines_fit_the_terminal(real_warehouse: Path, tmp_path: Path, capsys) -> None:
    """The real runs (no model fact, no chunks) chart only the breakdown; the trends page's
    reason (untagged runs, how to tag them) was one 192-column line."""
    out_dir = tmp_path / "site"
    args = ["dashboards", "--out", str(out_dir), "--warehouse", str(real_warehouse)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "trends" in out and "--tag model=NAME" in " ".join(out.split())
    _assert_readable(out)


@pytest.mark.parametrize(
    ("origin", "steps", "profiler_steps"),
    [
        ("kineto/HolisticTraceAnalysis/tests/data/critical_path/simple_add", "0", False),
        ("msinsight/test/st/level2", "1", False),  # kernel_details.csv: no host lane
        (B1, "1", True),
    ],
)
def test_show_says_when_a_run_has_no_step_or_no_profiler_step_to_cut(
    real_warehouse: Path, capsys, origin: str, steps: str, profiler_steps: bool
) -> None:
    """HTA's simple_add has no ProfilerStep: show counted its whole-capture breakdown row as `1`
    step, and told every run without markers to try `chunks --profiler-steps`, which finds
    nothing in it nor in set A (kernel_details.csv rows, no host lane)."""
    run_id = _run_id(real_warehouse, origin)
    assert main(["show", run_id, "--no-fit", "--warehouse", str(real_warehouse)]) == 0
    out = capsys.readouterr().out
    _assert_readable(out)
    rank0 = next(line for line in _lines(out) if line.startswith("0 "))
    assert rank0.split()[1] == steps, rank0
    assert ("no step number" in out) == (steps == "0")
    text = " ".join(out.split())
    assert ("treat each ProfilerStep as one chunk" in text) == profiler_steps
    assert ("finds nothing here" in text) == (not profiler_steps)
