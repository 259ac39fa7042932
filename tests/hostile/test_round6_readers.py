"""Round six of the hostile-input campaign (issue 36): the small JSON files of an Ascend rank
(profiler_info, communication.json) with a value nested a million deep or a string past the
memory budget, on a copy of the real msinsight Level1 rank 0 text export (read in place under
../shared/traces/real). Each failed on ce6c018: the deep profiler_info lost the rank's 191 kernels
(`read_error: RecursionError` for the whole run), the 500 MB communication.json string peaked at
1.74 GB RSS under a 512 MB budget (/tmp/h6/hostile/campaign6.py, docs/ingest_rules.md "round
six")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from tests.hostile.text_rank import text_rank_copy


def _kernels(warehouse: Path) -> int:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute("select count(*) from kernels").fetchone()[0]


def test_a_profiler_info_nested_a_million_deep_costs_the_file_not_the_rank(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rank = text_rank_copy(real_dir, tmp_path / "run")
    info = rank / "profiler_info_0.json"
    deep = "[" * 1_000_000 + "]" * 1_000_000
    info.write_text(json.dumps(json.loads(info.read_text()))[:-1] + f', "deep": {deep}}}')
    code = main(["ingest", str(tmp_path / "run"), "--warehouse", str(tmp_path / "w.duckdb")])
    err = capsys.readouterr().err
    assert code == 2
    assert "profiler_info_0.json: invalid_json" in err and "nested too deep" in err
    assert "Traceback" not in err and "RecursionError" not in err
    assert _kernels(tmp_path / "w.duckdb") == 191  # every kernel of the rank


def test_a_communication_json_past_an_eighth_of_the_budget_is_too_large(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rank = text_rank_copy(real_dir, tmp_path / "run")
    path = rank / "ASCEND_PROFILER_OUTPUT/communication.json"
    data = json.loads(path.read_text())
    data["step50"]["collective"]["pad"] = {"x": "y" * (20 << 20)}  # 20 MiB > max(16, 64 / 8) MiB
    path.write_text(json.dumps(data))
    warehouse = str(tmp_path / "w.duckdb")
    code = main(["ingest", str(tmp_path / "run"), "--warehouse", warehouse, "--max-memory", "64MB"])
    err = capsys.readouterr().err
    assert code == 2
    assert "communication.json: too_large" in err
    assert _kernels(tmp_path / "w.duckdb") == 191


def test_a_trace_view_gzipped_twice_says_so(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rank = text_rank_copy(real_dir, tmp_path / "run")
    trace_view = next(rank.rglob("trace_view.json"))
    twice = gzip.compress(gzip.compress(trace_view.read_bytes()))
    (trace_view.parent / "trace_view.json.gz").write_bytes(twice)
    trace_view.unlink()
    code = main(["ingest", str(tmp_path / "run"), "--warehouse", str(tmp_path / "w.duckdb")])
    err = capsys.readouterr().err
    assert code == 2
    assert "trace_view.json.gz: its inflated bytes are gzip again (a .gz of a .gz)" in err
    assert _kernels(tmp_path / "w.duckdb") == 191  # kernel_details.csv still read
