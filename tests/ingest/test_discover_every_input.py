"""Every input found is loaded, quarantined or listed as ignored (issue 35 item 4): a Kineto trace
beside an Ascend rank folder was found, then dropped (its run shared the folder's origin with the
Ascend run, so one replaced the other)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from pipelines.ingest.discover import discover

RANK = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
KINETO = "kineto/HolisticTraceAnalysis/tests/data/critical_path/simple_add"
DATA = (".json", ".json.gz", ".csv", ".db")


def _accounted(paths: list[Path]) -> set[Path]:
    found = discover(paths)
    used = {p for run in found.runs for p in run.files}
    used |= set(found.ignored) | set(found.tables) | {Path(q.path) for q in found.quarantined}
    return used


@pytest.mark.real
@pytest.mark.parametrize("inside", [False, True], ids=["beside", "inside"])
def test_a_kineto_trace_beside_an_ascend_rank_folder_is_a_run(
    real_dir: Path, tmp_path: Path, inside: bool
) -> None:
    root = tmp_path / "job"
    shutil.copytree(real_dir / RANK, root / "rank0_ascend_pt")
    (trace,) = (real_dir / KINETO).glob("*.json.gz")
    shutil.copy(trace, (root / "rank0_ascend_pt") if inside else root)
    found = discover([root])
    assert sorted(r.source for r in found.runs) == ["ascend_pt", "kineto"]
    assert len({r.origin for r in found.runs}) == 2  # before: one origin, one run stored
    target = tmp_path / "w.duckdb"
    assert main(["ingest", str(root), "--warehouse", str(target)]) == 0
    con = duckdb.connect(str(target), read_only=True)
    sources = sorted(r[0] for r in con.execute("select source from runs").fetchall())
    con.close()
    assert sources == ["ascend_pt", "kineto"]


@pytest.mark.real
def test_every_real_data_file_is_loaded_quarantined_or_ignored(real_dir: Path) -> None:
    files = [p for p in real_dir.rglob("*") if p.is_file() and p.name.lower().endswith(DATA)]
    used = _accounted([real_dir])
    assert len(files) > 100 and [p for p in files if p.resolve() not in used] == []


def test_a_mistyped_path_is_a_bad_argument_not_a_quarantine_row(tmp_path: Path, capsys) -> None:
    """Before: `ingest typo/` stored a not_found quarantine row, and every later `check` warned
    of it for ever. Now: one line, exit 2, nothing written."""
    target = tmp_path / "w.duckdb"
    assert main(["ingest", str(tmp_path / "nowhere"), "--warehouse", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"tracereplay ingest: no such file or folder: {tmp_path / 'nowhere'}"
    assert not target.exists()


@pytest.mark.real
def test_a_lone_topology_file_is_listed_with_its_reason_not_a_run(
    real_dir: Path, tmp_path: Path, capsys
) -> None:
    """msinsight's server fixture `metadata/` holds one profiler_metadata.json (an 8-rank job's
    layout) and no rank data: before, it became a 'run' of 8 ranks and 0 events."""
    folder = real_dir / "msinsight/server/src/test/test_data/metadata"
    target = tmp_path / "w.duckdb"
    assert main(["ingest", str(folder), "--warehouse", str(target)]) == 0
    captured = capsys.readouterr()
    assert "0 runs (none)" in captured.out and "1 skipped" in captured.out
    assert f"skipped {folder / 'profiler_metadata.json'}: a job's topology" in captured.err
    assert "not a run" in captured.err
