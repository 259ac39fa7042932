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
    assert main(["show", "test-show", "--warehouse", warehouse, "--no-fit"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "esc\\x1b[31mred" in out
