"""What one more run costs a lake is what changed (issue 37 deliver 3): ingest checks only the runs
it relies on instead of every partition file (pipelines/store/lake_damage.py `run_damage`), the
identity catalog answers a fit's question about every run's configuration (Session.run_facts), and
the damage record is kept per table. Each test fails on the code before: ingest read every stored
file when the record was gone, and `run_facts` did not exist."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pipelines.ingest.load import ingest_paths
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import LakeStore, lake_catalog, lake_damage, open_store, queries
from pipelines.store.lake_layout import CATALOG, PART, partition_dir

OLD = time.time_ns() - 3600 * 10**9  # an hour ago: older than the racy window
TAGS = {"hardware": "910B", "collected_at": "2026-01-02T03:04:05.123456"}


def _raw(tmp_path: Path, schedule: str) -> Path:
    raw = tmp_path / "raw" / schedule
    write_ascend_pt(simulate([32768], schedule, chunk_size=16384, pp=2), raw)
    return raw


def test_the_catalog_gives_the_runs_tables_facts(tmp_path: Path) -> None:
    """run_facts of a lake (from the identity catalog) equals the `runs` view's columns, a
    damaged run left out of both, an entry of the version before (no facts) rebuilt; and equals
    a DuckDB file's run_facts for the same runs."""
    lake, warehouse = LakeStore(tmp_path / "lake"), open_store(tmp_path / "w.duckdb")
    folders = [_raw(tmp_path, schedule) for schedule in ("cpp", "vpp")]
    for store in (lake, warehouse):
        ingest_paths(folders[:1], store, tags=TAGS, progress=False)
        ingest_paths(folders[1:], store, progress=False)  # no tags: collected_at from the files
    with lake.session() as session, warehouse.session(read_only=True) as other:
        facts = session.run_facts()
        assert facts.height == 2 and facts["collected_at"].null_count() == 0
        assert facts.equals(queries.run_columns(session.con, None, lake_catalog.FACT_COLUMNS))
        assert facts.equals(other.run_facts())
    first = facts["run_id"][0]
    entry_file = tmp_path / "lake" / CATALOG / f"run_id={first}.json"
    old = json.loads(entry_file.read_text())
    del old["facts"], old["version"]
    entry_file.write_text(json.dumps(old))
    lake_catalog._parsed.clear()  # a new process
    with lake.session() as session:
        assert session.run_facts().equals(facts)
    target = partition_dir(lake.location, "kernels", first) / PART
    target.write_bytes(target.read_bytes()[:50])
    with lake.session() as session:
        left = session.run_facts()
        assert left["run_id"].to_list() == [facts["run_id"][1]]
        assert left.equals(queries.run_columns(session.con, None, lake_catalog.FACT_COLUMNS))


def test_ingest_reads_no_file_of_the_runs_it_does_not_touch(tmp_path: Path, reads) -> None:
    """With the damage record gone (so a whole-lake scan would read every file), ingesting a new
    run reads none of the stored run's files."""
    store = LakeStore(tmp_path / "lake")
    (stored,) = ingest_paths([_raw(tmp_path, "cpp")], store, progress=False).runs
    lake_damage.forget(store.location)
    reads.clear()
    (new,) = ingest_paths([_raw(tmp_path, "vpp")], store, progress=False).runs
    assert new.status == "loaded"
    assert not [path for path in reads if f"run_id={stored.run_id}" in path]
    with store.session() as session:  # a command with views scans the whole lake again
        assert session.damaged == ()
    assert [path for path in reads if f"run_id={stored.run_id}" in path]


def test_reingest_rewrites_a_file_rewritten_in_place_with_the_same_size(tmp_path: Path) -> None:
    """A stored run's file rewritten in place with bytes of the same length, its mtime put back:
    ingest of the run's folder finds the run unchanged by content, reads the run's own files
    before relying on it (`run_damage`, no record trusted) and rewrites it."""
    store = LakeStore(tmp_path / "lake")
    raw = _raw(tmp_path, "cpp")
    (run,) = ingest_paths([raw], store, progress=False).runs
    target = partition_dir(store.location, "kernels", run.run_id) / PART
    whole = target.read_bytes()
    with store.session() as session:
        kernels = session.execute("select count(*) from kernels").fetchone()[0]
    before = os.stat(target)
    with open(target, "r+b") as handle:  # same inode, same size
        handle.write(b"x" * len(whole))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    (found,) = lake_damage.run_damage(store.location, run.run_id)
    assert found.path == str(target) and "no PAR1 magic" in found.reason
    (again,) = ingest_paths([raw], store, progress=False).runs
    assert again.run_id == run.run_id and again.status == "loaded"  # written, not "unchanged"
    assert (
        target.read_bytes()[:4] == b"PAR1"
        and lake_damage.run_damage(store.location, run.run_id) == []
    )
    with store.session() as session:
        assert session.execute("select count(*) from kernels").fetchone()[0] == kernels > 0
    (kept,) = ingest_paths([raw], store, progress=False).runs
    assert kept.status == "unchanged"  # a whole run is relied on as before


def test_a_run_missing_a_partition_is_rewritten_by_reingest(tmp_path: Path) -> None:
    store = LakeStore(tmp_path / "lake")
    raw = _raw(tmp_path, "cpp")
    (run,) = ingest_paths([raw], store, progress=False).runs
    (partition_dir(store.location, "slices", run.run_id) / PART).unlink()
    (found,) = lake_damage.run_damage(store.location, run.run_id)
    assert found.table == "slices" and found.reason.startswith("missing")
    (again,) = ingest_paths([raw], store, progress=False).runs
    assert again.status == "loaded" and lake_damage.run_damage(store.location, run.run_id) == []


def test_the_one_file_record_of_earlier_versions_is_taken_over(tmp_path: Path, reads) -> None:
    """A lake scanned by the version that kept one record for every table is not read again
    file by file: the old record is split into the per-table ones."""
    root = tmp_path / "lake"
    for run in ("a", "b"):
        for table in ("runs", "slices"):
            folder = partition_dir(root, table, run)
            folder.mkdir(parents=True)
            (folder / PART).write_bytes(b"PAR1" + b"\0" * 8 + b"PAR1")
            os.utime(folder / PART, ns=(OLD, OLD))
            os.utime(folder, ns=(OLD, OLD))
    lake_damage.damaged_files(root)
    assert len(reads) == 4
    checked = root / CATALOG / lake_damage.RECORD_FOLDER
    legacy = {}
    for record in checked.glob("*.json"):
        legacy.update({f"{record.stem}/{k}": v for k, v in json.loads(record.read_text()).items()})
        record.unlink()
    (checked / "files.json").write_text(json.dumps(legacy))
    lake_damage._remembered.clear()
    reads.clear()
    lake_damage.damaged_files(root)
    assert reads == [] and (checked / "slices.json").exists()
