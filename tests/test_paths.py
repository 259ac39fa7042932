"""Paths resolve from the working folder (or the nearest tracereplay.toml above it), never from
where the package is installed; the SQL files are found as package data."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pipelines import paths
from pipelines.cli import ExitCode, main


@pytest.fixture
def no_path_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRACEREPLAY_WAREHOUSE", "TRACEREPLAY_RAW_DIR"):
        monkeypatch.delenv(name, raising=False)


def test_without_a_marker_the_working_folder_is_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_path_env: None
) -> None:
    monkeypatch.chdir(tmp_path)
    assert paths.project_root() == tmp_path.resolve()
    assert paths.warehouse_path() == tmp_path.resolve() / "data" / "warehouse.duckdb"
    assert paths.raw_dir() == tmp_path.resolve() / "data" / "raw"
    assert paths.demo_dir() == tmp_path.resolve() / "data" / "demo"


def test_the_nearest_marker_above_the_working_folder_is_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_path_env: None
) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / paths.MARKER).write_text("")
    deep = tmp_path / "proj" / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert paths.project_root() == (tmp_path / "proj").resolve()
    assert paths.warehouse_path() == (tmp_path / "proj" / "data" / "warehouse.duckdb").resolve()


def test_environment_and_explicit_paths_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRACEREPLAY_WAREHOUSE", "/elsewhere/w.duckdb")
    monkeypatch.setenv("TRACEREPLAY_RAW_DIR", "/elsewhere/raw")
    assert paths.warehouse_path() == Path("/elsewhere/w.duckdb")
    assert paths.warehouse_path("x.duckdb") == Path("x.duckdb")
    assert paths.raw_dir() == Path("/elsewhere/raw")


def test_the_repository_checkout_is_a_project() -> None:
    repo = Path(__file__).resolve().parent.parent
    assert (repo / paths.MARKER).is_file()
    assert paths.project_root(repo / "pipelines" / "cli") == repo


def test_sql_files_are_found() -> None:
    assert (paths.SQL_DIR / "intermediate" / "int_chunk_tau.sql").is_file()
    assert (paths.SQL_DIR / "schema" / "runs.sql").is_file()


def test_fit_without_flags_reads_the_warehouse_of_this_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_path_env: None, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["fit"]) == ExitCode.BAD_INPUT
    assert f"no warehouse at {tmp_path.resolve() / 'data' / 'warehouse.duckdb'}" in (
        capsys.readouterr().err
    )


def test_cache_entries_unused_for_the_max_age_are_swept_and_a_read_keeps_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "change_search" / "points"
    folder.mkdir(parents=True)
    old = time.time() - paths.CACHE_MAX_AGE_S - 3_600
    stale, read_lately, fresh = (folder / f"{name}.json" for name in ("stale", "read", "fresh"))
    for entry in (stale, read_lately, fresh):
        entry.write_bytes(b"[]")
    for entry in (stale, read_lately):
        os.utime(entry, (old, old))
    assert paths.read_cache_file(read_lately) == b"[]"  # a read marks it used
    monkeypatch.setattr(paths, "_swept", set())
    paths.keep_file(folder / "new.json", lambda out: out.write(b"{}"))
    assert sorted(p.name for p in folder.iterdir()) == ["fresh.json", "new.json", "read.json"]
    # once per folder per process: an entry going stale later is left to the next process
    os.utime(fresh, (old, old))
    paths.keep_file(folder / "other.json", lambda out: out.write(b"{}"))
    assert fresh.exists()
