"""Hostile paths: a folder name with bytes that are not UTF-8, rank folders that are symlinks
(and a link loop), a folder name with an escape sequence shown by `show` (docs/ingest_rules.md)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.ingest.load import ingest_paths
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import FileStore


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "run"
    write_ascend_pt(simulate([32768], "cpp", chunk_size=16384, pp=2), out)
    return out


def test_a_folder_name_that_is_not_utf8_is_ingested_and_shown_escaped(run_folder, tmp_path):
    bad = os.fsdecode(os.fsencode(str(tmp_path)) + b"/job\xff\xfe")
    shutil.copytree(run_folder, bad)
    store = FileStore(tmp_path / "w.duckdb")
    (run,) = ingest_paths([bad], store, progress=False).runs
    assert run.status == "loaded" and run.ranks == 2
    assert run.origin.endswith("/job\\xff\\xfe")  # the bytes as escapes, never dropped
    (again,) = ingest_paths([bad], store, progress=False).runs
    assert again.status == "unchanged" and again.run_id == run.run_id


def test_symlinked_rank_folders_are_followed_once(run_folder, tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    for rank in sorted(run_folder.iterdir()):
        (job / rank.name).symlink_to(rank)
    (job / "loop").symlink_to(job)  # a link back up: read once, never forever
    (run,) = ingest_paths([job], FileStore(tmp_path / "w.duckdb"), progress=False).runs
    assert run.ranks == 2 and run.rows["kernels"] == 16


def test_show_prints_control_characters_as_escapes(run_folder, tmp_path, capsys):
    folder = tmp_path / "esc\x1b[31mred"
    shutil.copytree(run_folder, folder)
    warehouse = str(tmp_path / "w.duckdb")
    with contextlib.redirect_stderr(io.StringIO()):
        assert main(["ingest", str(folder), "--warehouse", warehouse, "--no-progress"]) == 0
    capsys.readouterr()
    # the id comes from the profiler's files, never from the folder's name (docs/run_identity.md)
    assert main(["show", "ascend-pt-", "--warehouse", warehouse, "--no-fit"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "esc\\x1b[31mred" in out


@pytest.mark.parametrize("what", ["folder", "one file"])
def test_a_run_removed_during_ingest_is_quarantined_by_name(run_folder, tmp_path, what):
    """Discovery found the run, then it (or one of its files) vanished: a named quarantine row,
    nothing of it stored, the other run loaded."""
    from pipelines.ingest.discover import discover
    from pipelines.ingest.load import ingest_discovered

    for name in ("kept", "gone"):
        shutil.copytree(run_folder, tmp_path / "jobs" / name)
    found = discover([tmp_path / "jobs"])
    gone = tmp_path / "jobs" / "gone"
    if what == "folder":
        shutil.rmtree(gone)
    else:
        next(p for p in sorted(gone.rglob("*.csv"))).unlink()
    store = FileStore(tmp_path / "w.duckdb")
    report = ingest_discovered(found, store, progress=False)
    assert [Path(r.origin).name for r in report.runs] == ["kept"]
    (item,) = [q for q in report.quarantined if q.reason == "removed_during_ingest"]
    assert Path(item.path) == gone and "nothing of it was stored" in item.detail
    with store.session(read_only=True) as session:
        stored = session.con.execute("select reason from quarantine").fetchall()
    assert ("removed_during_ingest",) in stored
