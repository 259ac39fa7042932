"""The Parquet lake (docs/lake.md): the same real folders give the same rows as the file warehouse,
re-ingest replaces a run's partitions atomically, processes ingest different runs at once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.ingest.load import ingest_paths
from pipelines.paths import LAKE_ENV
from pipelines.store import LakeStore, lake_catalog, open_store, parquet_lake, queries
from pipelines.store.lake_layout import PART, partition_dir
from pipelines.store.schema import CANONICAL_TABLES, RUN_TABLES

pytestmark = pytest.mark.real

TRACEREPLAY = str(Path(sys.executable).parent / "tracereplay")
TIMESTAMPS = ("ingested_at", "seen_at")  # when a row was written: differs between two ingests


def _folders(real_dir: Path) -> list[Path]:
    base = real_dir / "msinsight" / "test"
    return [
        base / "st" / "level2",  # set A: 4 ranks, text + analysis.db
        base / "data" / "pytorch" / "text" / "level1",  # set B1: trace_view.json
        base / "data" / "pytorch" / "db" / "level1",  # set C: profiler SQLite
    ]


def _rows(con, table: str) -> list[tuple]:
    columns = [c for c in queries.table_columns(con, table) if c not in TIMESTAMPS]
    listed = ", ".join(f'"{c}"' for c in columns)
    return con.execute(f"select {listed} from {table} order by all").fetchall()


def _bad_folder(tmp_path: Path) -> Path:
    """A rank folder whose trace is not JSON: a quarantine row in either store."""
    folder = tmp_path / "broken" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    folder.mkdir(parents=True)
    (folder / "trace_view.json").write_text('[{"name": "x", "ph": "X", "ts": 1, ')
    return tmp_path / "broken"


@pytest.mark.slow  # real runs in both stores; parity stays in tests/store (CI runs it)
def test_file_warehouse_and_lake_hold_the_same_rows(real_dir, tmp_path, monkeypatch):
    # an operator-latency table (latency_points) with two bad rows rides along
    table = Path(__file__).parent / "data/latency_tables/self_made/generic_attention.csv"
    folders = [*_folders(real_dir), _bad_folder(tmp_path), table]
    monkeypatch.delenv(LAKE_ENV, raising=False)
    file_report = ingest_paths(folders, open_store(tmp_path / "file.duckdb"), progress=False)
    monkeypatch.setenv(LAKE_ENV, str(tmp_path / "lake"))
    lake_report = ingest_paths(folders, open_store(), progress=False)
    assert [r.run_id for r in lake_report.runs] == [r.run_id for r in file_report.runs]
    assert len(lake_report.runs) == 3 and lake_report.quarantined

    with open_store().session() as lake_con:
        assert open_store().warehouse_file == tmp_path / "lake" / "warehouse.duckdb"
        monkeypatch.delenv(LAKE_ENV)
        with open_store(tmp_path / "file.duckdb").session(read_only=True) as file_con:
            for table in CANONICAL_TABLES:
                expected = _rows(file_con, table)
                assert _rows(lake_con, table) == expected, table
                assert expected or table == "chunks", f"{table}: nothing compared"
            # the SQL layer reads the views unchanged
            for mart in ("fct_run_metrics", "fct_rank_breakdown", "fct_op_time_by_run"):
                assert _rows(lake_con, mart) == _rows(file_con, mart), mart
    files = {p.relative_to(tmp_path / "lake").parts[0] for p in (tmp_path / "lake").rglob("*")}
    assert set(CANONICAL_TABLES) <= files
    assert not list((tmp_path / "lake").rglob(".incoming/*")), "a file left aside"


def _copy_run(real_dir: Path, tmp_path: Path) -> Path:
    source = _folders(real_dir)[1]
    target = tmp_path / "runs" / "level1"
    shutil.copytree(source, target)
    return target


def _lake_rows(root: Path, table: str) -> list[tuple]:
    with LakeStore(root).open_runs() as con:
        return _rows(con, table)


def test_reingest_replaces_the_run_partitions(real_dir, tmp_path, monkeypatch):
    root = tmp_path / "lake"
    monkeypatch.setenv(LAKE_ENV, str(root))
    folder = _copy_run(real_dir, tmp_path)
    first = ingest_paths([folder], open_store(), progress=False).runs[0]
    kernels = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    lines = kernels.read_text().splitlines(keepends=True)
    kernels.write_text("".join(lines[:-1]))  # one kernel row fewer: new bytes, same origin
    second = ingest_paths([folder], open_store(), progress=False).runs[0]
    assert second.status == "replaced" and second.replaced == [first.run_id]
    assert [r[0] for r in _lake_rows(root, "runs")] == [second.run_id]
    kernel_runs = {r[0] for r in _lake_rows(root, "kernels")}
    assert kernel_runs == {second.run_id}
    assert second.rows["kernels"] == first.rows["kernels"] - 1
    for table in RUN_TABLES:  # the old run's folders are gone, the new run's are there
        assert not partition_dir(root, table, first.run_id).exists()
        assert partition_dir(root, table, second.run_id).is_dir()


def test_the_identity_catalog_follows_the_run_folders(real_dir, tmp_path, monkeypatch):
    """Ingest reads stored runs from the catalog (docs/lake.md, incremental cost); the catalog
    heals from the `runs` folders when an entry is missing, stale or orphaned."""
    root = tmp_path / "lake"
    monkeypatch.setenv(LAKE_ENV, str(root))
    folder = _copy_run(real_dir, tmp_path)
    first = ingest_paths([folder], open_store(), progress=False).runs[0]
    (entry,) = lake_catalog.entries(root)
    assert entry["run_id"] == first.run_id and entry["origin"] == first.origin
    with LakeStore(root).open_runs() as con:
        inputs = con.execute("select path, sha256 from run_inputs order by all").fetchall()
    assert sorted(map(tuple, entry["files"])) == inputs

    shutil.rmtree(root / lake_catalog.FOLDER)  # a lake written before the catalog existed
    again = ingest_paths([folder], open_store(), progress=False).runs[0]
    assert again.status == "unchanged" and again.run_id == first.run_id

    runs_file = partition_dir(root, "runs", first.run_id) / PART
    with LakeStore(root).open_runs() as con:  # a runs file rewritten behind the catalog's back
        con.execute(
            f"copy (select * replace ('/elsewhere' as origin) from read_parquet('{runs_file}'))"
            f" to '{tmp_path / 'runs.parquet'}' (format parquet)"
        )
    os.replace(tmp_path / "runs.parquet", runs_file)
    assert [e["origin"] for e in lake_catalog.entries(root)] == ["/elsewhere"]

    parquet_lake.delete_partitions(root, first.run_id)
    assert lake_catalog.entries(root) == []
    assert not list((root / lake_catalog.FOLDER).glob("*.json"))


def test_a_failed_write_leaves_the_stored_run_whole(real_dir, tmp_path, monkeypatch):
    """Every file is written aside before any rename: a failure on the fourth table leaves the
    run's partitions as they were and no file aside."""
    root = tmp_path / "lake"
    monkeypatch.setenv(LAKE_ENV, str(root))
    folder = _copy_run(real_dir, tmp_path)
    run_id = ingest_paths([folder], open_store(), progress=False).runs[0].run_id
    before = {t: _lake_rows(root, t) for t in RUN_TABLES}
    real_aside = parquet_lake._conformed_aside
    calls = []

    def failing(scratch, root_, table, frame):
        calls.append(table)
        if len(calls) == 4:
            raise OSError(28, "No space left on device")
        return real_aside(scratch, root_, table, frame)

    monkeypatch.setattr(parquet_lake, "_conformed_aside", failing)
    with LakeStore(root).open_runs() as con, pytest.raises(OSError):
        con.write_run(run_id, {"runs": con.run_row(run_id)})
    assert {t: _lake_rows(root, t) for t in RUN_TABLES} == before
    assert not list(root.rglob(".incoming/*"))


def test_two_processes_ingest_different_runs_into_one_lake(real_dir, tmp_path):
    root = tmp_path / "lake"
    env = {k: v for k, v in os.environ.items() if k != LAKE_ENV}
    folders = _folders(real_dir)[1:]
    procs = [
        subprocess.Popen(
            [TRACEREPLAY, "--lake", str(root), "ingest", str(f)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in folders
    ]
    outcomes = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outcomes
    origins = sorted(r[2] for r in _lake_rows(root, "runs"))
    assert origins == sorted(str(f.resolve()) for f in folders)
    kernels = _lake_rows(root, "kernels")
    assert len({r[0] for r in kernels}) == 2


@pytest.mark.slow  # CLI processes over a real lake (CI runs it: .ci/run)
def test_cli_reads_the_lake(real_dir, tmp_path):
    """`tracereplay runs` and `show` through the lake's warehouse file (views)."""
    root = tmp_path / "lake"
    env = {k: v for k, v in os.environ.items() if k != LAKE_ENV}
    cli = [TRACEREPLAY, "--lake", str(root)]
    folder = _folders(real_dir)[1]
    subprocess.run([*cli, "ingest", str(folder)], env=env, check=True, capture_output=True)
    runs = subprocess.run(
        [*cli, "runs", "--json"], env=env, check=True, capture_output=True, text=True
    )
    # set B1's id: its reader, its rank folders' stem and profiler_info's collection time
    (run_id,) = [r["run_id"] for r in json.loads(runs.stdout)["runs"]]
    assert run_id.startswith("ascend-pt-rank-20250109-0748-")
    shown = subprocess.run(
        [*cli, "show", run_id[:-6]], env=env, check=True, capture_output=True, text=True
    )
    assert "rank" in shown.stdout
    assert (root / "warehouse.duckdb").is_file()


@pytest.mark.parametrize("store", ["file", "lake"])
def test_chunks_rules_and_fit_through_either_store(tmp_path, monkeypatch, capsys, store):
    """ingest (chunk markers segmented at once), a stored chunk rule kept across re-ingest, and
    fit: the same outputs from the file warehouse and from the lake."""
    from pipelines.cli import main
    from pipelines.sim.run import simulate
    from pipelines.sim.writers_ascend import write_ascend_pt

    write_ascend_pt(simulate([65536], "cpp", chunk_size=16384, pp=2), tmp_path / "raw" / "cpp")
    monkeypatch.delenv(LAKE_ENV, raising=False)
    monkeypatch.delenv("TRACEREPLAY_WAREHOUSE", raising=False)
    monkeypatch.chdir(tmp_path)  # data/ of this folder
    lake_flag = ["--lake", str(tmp_path / "lake")] if store == "lake" else []
    if store == "lake":  # main() sets the variable for the process: monkeypatch restores it
        monkeypatch.setenv(LAKE_ENV, str(tmp_path / "lake"))
    ingest = [*lake_flag, "ingest", str(tmp_path / "raw"), "--json"]
    assert main(ingest) == 0
    first = json.loads(capsys.readouterr().out)["runs"]
    assert [r["chunks"] for r in first] == [8]
    assert main([*lake_flag, "chunks", "--profiler-steps"]) == 0
    capsys.readouterr()
    assert main(ingest) == 0  # same bytes: unchanged, counted from the stored rows
    again = json.loads(capsys.readouterr().out)["runs"]
    assert [(r["status"], r["events"] > 0) for r in again] == [("unchanged", True)]
    assert main([*lake_flag, "fit", "--json"]) in (0, 1)
    fits = json.loads(capsys.readouterr().out)
    assert fits, "fit printed nothing"
    if store == "lake":
        monkeypatch.setenv(LAKE_ENV, str(tmp_path / "lake"))
        with LakeStore(tmp_path / "lake").open_runs() as con:
            rule = con.execute("select segmentation from runs").fetchone()[0]
        assert rule and "profiler" in rule
        assert (tmp_path / "lake" / "warehouse.duckdb").is_file()
        assert not (tmp_path / "data" / "warehouse.duckdb").exists()


@pytest.mark.parametrize(
    ("table", "spoil", "reason"),
    [
        ("kernels", lambda b: b[: len(b) // 2], "truncated (no Parquet footer"),
        # the second damage (five CLI processes again) in CI's slow pass
        pytest.param(
            "runs",
            lambda b: b"not parquet at all, but long enough",
            "not a Parquet file",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_a_damaged_partition_costs_its_run_and_reingest_rewrites_it(
    real_dir, tmp_path, table, spoil, reason
):
    """A truncated or foreign file in one run's partition: every command still works, that run is
    left out and named with the repair, the other run is whole, and re-ingest rewrites the file."""
    root = tmp_path / "lake"
    env = {k: v for k, v in os.environ.items() if k != LAKE_ENV}
    cli = [TRACEREPLAY, "--lake", str(root)]
    damaged_folder, other_folder = _copy_run(real_dir, tmp_path), _folders(real_dir)[2]
    for folder in (damaged_folder, other_folder):
        subprocess.run([*cli, "ingest", str(folder)], env=env, check=True, capture_output=True)
    before = {r[0]: r for r in _lake_rows(root, "runs")}
    # the copy at runs/level1 (same bytes as set B1: its id differs from B1's in the hash only)
    damaged_run = next(r for r, row in before.items() if row[2] == str(damaged_folder.resolve()))
    kernels_before = len([r for r in _lake_rows(root, "kernels") if r[0] == damaged_run])
    target = partition_dir(root, table, damaged_run) / PART
    target.write_bytes(spoil(target.read_bytes()))

    listed = subprocess.run([*cli, "runs", "--json"], env=env, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    shown = {r["run_id"] for r in json.loads(listed.stdout)["runs"]}
    assert shown == set(before) - {damaged_run}
    assert f"lake run {damaged_run} left out" in listed.stderr and reason in listed.stderr
    assert "re-ingest" in listed.stderr and "Traceback" not in listed.stderr

    again = subprocess.run(
        [*cli, "ingest", str(damaged_folder)], env=env, capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    assert {r[0] for r in _lake_rows(root, "runs")} == set(before)
    kernels_after = len([r for r in _lake_rows(root, "kernels") if r[0] == damaged_run])
    assert kernels_after == kernels_before > 0
    quiet = subprocess.run([*cli, "runs", "--json"], env=env, capture_output=True, text=True)
    assert quiet.returncode == 0 and "left out" not in quiet.stderr


@pytest.mark.slow  # four CLI processes end to end (CI runs it: .ci/run)
def test_a_foreign_parquet_file_costs_its_run_until_reingest_rewrites_it(real_dir, tmp_path):
    """A Parquet file of another schema passes the magic check but lacks its table's columns:
    the damage scan leaves its run out and names the file with the repair (issue 36: every
    command failed on "schema mismatch in glob" before); re-ingest rewrites it."""
    import duckdb

    root = tmp_path / "lake"
    env = {k: v for k, v in os.environ.items() if k != LAKE_ENV}
    cli = [TRACEREPLAY, "--lake", str(root)]
    folder = _copy_run(real_dir, tmp_path)
    subprocess.run([*cli, "ingest", str(folder)], env=env, check=True, capture_output=True)
    (run_id,) = [r[0] for r in _lake_rows(root, "runs")]
    target = partition_dir(root, "slices", run_id) / PART
    kept = len([r for r in _lake_rows(root, "slices") if r[0] == run_id])
    duckdb.sql(f"copy (select 1.5 as foreign_column) to '{target}' (format parquet)")

    shown = subprocess.run([*cli, "show", run_id], env=env, capture_output=True, text=True)
    assert shown.returncode != 0 and "Traceback" not in shown.stderr
    assert f"lake run {run_id} left out" in shown.stderr and "foreign schema" in shown.stderr

    listed = subprocess.run([*cli, "runs", "--json"], env=env, capture_output=True, text=True)
    assert "Traceback" not in listed.stderr and run_id not in listed.stdout  # its only run is out
    assert "re-ingest" in listed.stderr

    subprocess.run([*cli, "ingest", str(folder)], env=env, check=True, capture_output=True)
    assert len([r for r in _lake_rows(root, "slices") if r[0] == run_id]) == kept > 0
