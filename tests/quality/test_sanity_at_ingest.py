"""Impossible data is named at ingest, and fails `check` (issue: hostile input, round three): a
timestamp in ms where µs are meant (a rank over years), every kernel stored again 5 µs later,
one chunk marker given twice."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "run"
    write_ascend_pt(simulate([32768], "cpp", chunk_size=16384, pp=2), out)
    return out


def _ms_for_us(events: list) -> list:
    event = next(e for e in events if e.get("ph") == "X")
    event["ts"] = f"{float(event['ts']) / 1000:.3f}"  # written in ms, read as µs: 1970
    return events


def _marker_twice(events: list) -> list:
    marker = next(e for e in events if str(e.get("name", "")).startswith("chunk["))
    again = dict(marker, ts=str(float(marker["ts"]) + float(marker["dur"]) + 10))
    return [*events, again]


def _kernels_twice(data: str) -> str:
    lines = data.splitlines(keepends=True)
    header = [h.strip() for h in lines[0].split(",")]
    start = header.index("Start Time(us)")
    copies = []
    for line in lines[1:]:
        cells = line.split(",")
        cells[start] = f"{float(cells[start].strip()) + 5:.3f}\t"  # 5 µs later
        copies.append(",".join(cells))
    return "".join(lines + copies)


CASES: dict[str, tuple[str, Callable, str]] = {
    "ms for µs": ("trace_view.json", _ms_for_us, "slices.plausible_span"),
    "a chunk marker twice": ("trace_view.json", _marker_twice, "slices.chunk_markers_unique"),
    "every kernel twice, 5 µs later": (
        "kernel_details.csv",
        _kernels_twice,
        "kernels.no_overlapping_copies",
    ),
}


# one case in the default run; the other two (an ingest and a check each) in CI's slow pass
FAST_CASE = "ms for µs"


@pytest.mark.parametrize(
    "case",
    [c if c == FAST_CASE else pytest.param(c, marks=pytest.mark.slow) for c in sorted(CASES)],
)
def test_impossible_data_is_named_at_ingest_and_fails_check(clean, tmp_path, capsys, case):
    name, change, key = CASES[case]
    folder = tmp_path / "run"
    shutil.copytree(clean, folder)
    path = sorted(folder.rglob(name))[0]
    if name.endswith(".json"):
        path.write_text(json.dumps(change(json.loads(path.read_text()))))
    else:
        path.write_text(change(path.read_text()))
    warehouse = str(tmp_path / "w.duckdb")
    assert main(["ingest", str(folder), "--warehouse", warehouse, "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert f"warning: {key}:" in err
    assert main(["check", "--warehouse", warehouse, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    failed = {r["expectation"] for r in report["results"] if not r["passed"]}
    assert key.split(".")[1] in failed


def test_clean_data_gives_no_warning(clean, tmp_path, capsys):
    warehouse = str(tmp_path / "w.duckdb")
    assert main(["ingest", str(clean), "--warehouse", warehouse, "--no-progress"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_partial_run_is_named_at_ingest(real_dir: Path, tmp_path, capsys):
    """Set A (msinsight st/level2): ranks 1 and 3 kept only their summaries upstream (no
    kernel_details.csv, no trace): the run is stored, and ingest names those two ranks."""
    folder = real_dir / "msinsight" / "test" / "st" / "level2"
    warehouse = str(tmp_path / "w.duckdb")
    assert main(["ingest", str(folder), "--warehouse", warehouse, "--no-progress", "--json"]) == 0
    captured = capsys.readouterr()
    line = next(x for x in captured.err.splitlines() if "ranks.device_work_on_every_rank" in x)
    assert "2 row(s) break it" in line and "rank_1_ascend_pt" in line
    warnings = json.loads(captured.out)["warnings"]
    assert [w.split(":")[0] for w in warnings] == ["ranks.device_work_on_every_rank"]


def test_a_check_past_duckdbs_share_of_the_budget_is_a_warning_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 290,000 points under --max-memory 256MB (DuckDB 64 MiB) raised DuckDB's
    # OutOfMemoryException out of latency_points.in_line_with_neighbours: a traceback, exit 1
    import duckdb

    from pipelines.quality import sanity

    real_probe = sanity.probe

    def probe(con, item, sample_rows):
        if item.key == "latency_points.in_line_with_neighbours":
            raise duckdb.OutOfMemoryException("could not allocate block (64.0 MiB/64.0 MiB used)")
        return real_probe(con, item, sample_rows=sample_rows)

    monkeypatch.setattr(sanity, "probe", probe)
    table = Path(__file__).parents[1] / "data/latency_tables/self_made/generic_attention.csv"
    code = main(["ingest", str(table), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2  # the table's two bad rows, as without the memory shortfall
    assert "warning: latency_points.in_line_with_neighbours: not checked here" in err
    assert "Traceback" not in err
