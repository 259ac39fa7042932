"""Round six of the hostile-input campaign (issue 36): store targets and process state. Each case
failed on ce6c018 (the campaign: /tmp/h6/hostile/campaign6.py, docs/ingest_rules.md "round six")."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pipelines.analysis.chunks.engine_forwards import parse_forward
from pipelines.cli import main
from pipelines.paths import LAKE_ENV


@pytest.mark.parametrize("argv", [["runs"], ["ingest", "{here}"]], ids=["runs", "ingest"])
def test_a_warehouse_path_with_a_trailing_slash_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """`--warehouse w.duckdb/` names a folder; pathlib dropped the slash and a file w.duckdb was
    written (exit 0)."""
    argv = [a.replace("{here}", str(tmp_path)) for a in argv]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--warehouse", f"{tmp_path}/w.duckdb/"])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert "names a folder" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "w.duckdb").exists()


def test_the_warehouse_variable_with_a_trailing_slash_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACEREPLAY_WAREHOUSE", f"{tmp_path}/w.duckdb/")
    assert main(["runs"]) == 2
    assert "TRACEREPLAY_WAREHOUSE" in capsys.readouterr().err


def test_lake_of_one_call_is_not_the_lake_of_the_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tracereplay --lake DIR` set TRACEREPLAY_LAKE for the rest of the process: a later
    `main(["ingest", ..., "--warehouse", W])` in the same process (a test, a notebook) wrote into
    the lake and W stayed missing."""
    monkeypatch.delenv(LAKE_ENV, raising=False)
    main(["--lake", str(tmp_path / "lake"), "runs"])
    assert LAKE_ENV not in os.environ
    capsys.readouterr()
    main(["runs", "--warehouse", str(tmp_path / "w.duckdb")])  # no warehouse there: exit 2
    err = capsys.readouterr().err
    assert "no warehouse at" in err  # the warehouse asked for, not the earlier call's lake
    monkeypatch.setenv(LAKE_ENV, str(tmp_path / "configured"))
    main(["--lake", str(tmp_path / "lake"), "runs"])
    assert os.environ[LAKE_ENV] == str(tmp_path / "configured")


@pytest.mark.parametrize(
    "name",
    [
        "execute_context_1(99999999999999999999999)_generation_0(0)",
        "execute_context_4294967296(888)_generation_0(0)",
        "step[EXTEND bs=1 c_sq=99999999999999999999]",
    ],
)
def test_a_forward_name_with_a_count_past_int32_is_no_forward(name: str) -> None:
    """Such a name reached the chunks insert and failed ingest with a DuckDB overflow
    traceback ("a value overflows the data-type's capacity")."""
    assert parse_forward(name) is None
    assert parse_forward("execute_context_1(888)_generation_0(0)") is not None


def test_a_lakes_views_file_given_as_the_warehouse_of_a_write_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tracereplay --lake L runs --warehouse W` keeps the lake's views in W; `chunks --warehouse
    W` then ended in DuckDB's "Can only delete from base table" traceback, and `ingest` called
    the run unchanged."""
    run = tmp_path / "run"
    run.mkdir()
    trace = {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k",
                "pid": 0,
                "tid": 7,
                "ts": 1000,
                "dur": 5,
                "args": {"stream": 7},
            }
        ]
    }
    (run / "w.1.pt.trace.json").write_text(json.dumps(trace))
    views = str(tmp_path / "views.duckdb")
    assert main(["--lake", str(tmp_path / "lake"), "ingest", str(run), "--warehouse", views]) == 0
    assert main(["--lake", str(tmp_path / "lake"), "runs", "--warehouse", views]) == 0
    capsys.readouterr()
    for argv in (["chunks"], ["ingest", str(run)]):
        assert main([*argv, "--warehouse", views]) == 2
        err = capsys.readouterr().err
        assert "views file of a Parquet lake" in err and len(err.strip().splitlines()) == 1
    assert main(["runs", "--warehouse", views]) in (0, 2)  # a read: through the views
    assert len(capsys.readouterr().err.strip().splitlines()) <= 1


HTA = Path(
    "kineto/HolisticTraceAnalysis/tests/data/critical_path/simple_add/"
    "benchmark_result_493459_1694039959_trace.json.gz"
)


def test_check_fails_when_the_lake_left_a_run_out_for_a_missing_file(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lake run whose kernels file is gone is left out of the views (named on stderr); `check`
    then passed "63 expectations over 0 runs", exit 0."""
    if not (real_dir / HTA).is_file():
        pytest.skip("the HTA trace is not there")
    (tmp_path / "run").mkdir()
    shutil.copy(real_dir / HTA, tmp_path / "run")
    lake = tmp_path / "lake"
    assert main(["--lake", str(lake), "ingest", str(tmp_path / "run")]) == 0
    for part in (lake / "kernels").glob("run_id=kineto*/*.parquet"):
        part.unlink()
    capsys.readouterr()
    assert main(["--lake", str(lake), "check"]) == 1
    out = capsys.readouterr().out
    assert "1 lake run(s) left out for a damaged file" in out
    assert main(["--lake", str(lake), "check", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert len(report["damaged_runs_left_out"]) == 1


def test_max_memory_of_one_ingest_call_is_not_the_budget_of_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ingest --max-memory 64MB` set TRACEREPLAY_MAX_MEMORY for the rest of the process: later
    in-process ingests streamed their traces under it (a test's in-memory read was streamed)."""
    from pipelines.memory_budget import ENV_MAX_MEMORY

    monkeypatch.delenv(ENV_MAX_MEMORY, raising=False)
    (tmp_path / "empty").mkdir()
    warehouse = str(tmp_path / "w.duckdb")
    main(["ingest", str(tmp_path / "empty"), "--warehouse", warehouse, "--max-memory", "64MB"])
    assert ENV_MAX_MEMORY not in os.environ
