"""Round six of the hostile-input campaign (issue 36): one measurement in other bytes. The real HTA
simple_add Kineto trace (read in place under ../shared/traces/real) kept plain and gzipped: side
by side in one folder it was stored as two runs (196 kernels for 98), in two folders as two
runs every statistic pooled as two repeats, with nothing said (both on ce6c018)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main

HTA = Path(
    "kineto/HolisticTraceAnalysis/tests/data/critical_path/simple_add/"
    "benchmark_result_493459_1694039959_trace.json.gz"
)
CHECK = "runs.same_device_work_once"


def _plain_and_gz(real_dir: Path, plain: Path, packed: Path) -> None:
    if not (real_dir / HTA).is_file():
        pytest.skip("the HTA trace is not there")
    plain.mkdir(parents=True, exist_ok=True)
    packed.mkdir(parents=True, exist_ok=True)
    (plain / "t.pt.trace.json").write_bytes(gzip.decompress((real_dir / HTA).read_bytes()))
    shutil.copy(real_dir / HTA, packed / "t.pt.trace.json.gz")


def test_a_gzipped_twin_beside_its_trace_is_read_once(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _plain_and_gz(real_dir, tmp_path / "run", tmp_path / "run")
    warehouse = tmp_path / "w.duckdb"
    assert main(["ingest", str(tmp_path / "run"), "--warehouse", str(warehouse)]) == 0
    assert "a gzipped copy of t.pt.trace.json" in capsys.readouterr().err
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select count(*), count(distinct run_id) from kernels").fetchone() == (
            98,
            1,
        )


def test_one_trace_plain_and_gzipped_in_two_folders_fails_the_check(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _plain_and_gz(real_dir, tmp_path / "plain", tmp_path / "gz")
    warehouse = str(tmp_path / "w.duckdb")
    folders = [str(tmp_path / "plain"), str(tmp_path / "gz")]
    assert main(["ingest", *folders, "--warehouse", warehouse]) == 0
    assert f"warning: {CHECK}" in capsys.readouterr().err  # said at ingest
    assert main(["check", "--warehouse", warehouse, "--failures"]) == 1
    assert f"{CHECK} (error, 2 rows)" in capsys.readouterr().out


def test_a_trace_gzipped_twice_is_named_as_such(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was `unrecognised_input: ...: not a trace`."""
    if not (real_dir / HTA).is_file():
        pytest.skip("the HTA trace is not there")
    (tmp_path / "run").mkdir()
    twice = gzip.compress((real_dir / HTA).read_bytes())
    (tmp_path / "run" / "t.pt.trace.json.gz").write_bytes(twice)
    assert main(["ingest", str(tmp_path / "run"), "--warehouse", str(tmp_path / "w.duckdb")]) == 2
    assert "a .gz of a .gz" in capsys.readouterr().err
