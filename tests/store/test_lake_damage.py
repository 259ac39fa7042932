"""The lake's damage scan is incremental (pipelines/store/lake_damage.py): files found whole are
not read again while their size, mtime and inode hold, and a damaged file written after a scan
is still found, by the scan and by the next open of the store."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pipelines.ingest.load import ingest_paths
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import LakeStore, lake_damage
from pipelines.store.lake_layout import PART, partition_dir

GOOD = b"PAR1" + b"\0" * 8 + b"PAR1"  # passes the magic check: 16 bytes, both magics
OLD = time.time_ns() - 3600 * 10**9  # an hour ago: older than the racy window


def _file(root: Path, table: str, run_id: str, body: bytes = GOOD, name: str = PART) -> Path:
    folder = partition_dir(root, table, run_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(body)
    os.utime(path, ns=(OLD, OLD))
    return path


def _age(root: Path) -> None:
    """Every folder of the lake an hour old (as a lake not written in the last seconds)."""
    for folder in [p for p in root.rglob("*") if p.is_dir()]:
        os.utime(folder, ns=(OLD, OLD))


def test_an_unchanged_lake_is_not_read_again(tmp_path: Path, reads: list[str]) -> None:
    root = tmp_path / "lake"
    for run in ("a", "b"):
        for table in ("runs", "slices", "kernels"):
            _file(root, table, run)
    _age(root)
    assert lake_damage.damaged_files(root) != []  # runs without ranks/...: missing files
    assert len(reads) == 6
    reads.clear()
    lake_damage._remembered.clear()  # a new process: the record is read from the catalog
    lake_damage.damaged_files(root)
    assert reads == []
    lake_damage.forget(root)
    lake_damage.damaged_files(root)
    assert len(reads) == 6


@pytest.mark.parametrize("how", ["new file", "rewritten in place", "renamed over, same stamp"])
def test_a_damaged_file_written_after_a_scan_is_found(
    tmp_path: Path, reads: list[str], how: str
) -> None:
    root = tmp_path / "lake"
    kept = _file(root, "slices", "a")
    _file(root, "kernels", "a")
    _age(root)
    assert lake_damage.damaged_files(root) == []
    reads.clear()
    if how == "new file":
        target = _file(root, "slices", "a", b"PAR1 cut short", name="part-rank00001.parquet")
    elif how == "rewritten in place":
        target = kept
        kept.write_bytes(b"x" * len(GOOD))  # same size, same inode, a new mtime
    else:  # same size and mtime as the checked file: only the inode differs
        target = kept
        aside = tmp_path / "aside.parquet"
        aside.write_bytes(b"x" * len(GOOD))
        os.utime(aside, ns=(OLD, OLD))
        os.replace(aside, kept)
        os.utime(kept.parent, ns=(OLD, OLD))  # even the folder's stamp restored
    (found,) = lake_damage.damaged_files(root)
    assert found.path == str(target) and found.key == "a" and found.table == "slices"
    assert reads == [str(target)]  # only the changed file was read


def test_a_file_younger_than_the_racy_window_is_read_again(tmp_path: Path, reads) -> None:
    root = tmp_path / "lake"
    path = _file(root, "slices", "a")
    os.utime(path)  # written just now
    lake_damage.damaged_files(root)
    lake_damage.damaged_files(root)
    assert reads == [str(path), str(path)]


def test_the_store_finds_damage_done_after_its_first_open(tmp_path: Path) -> None:
    raw = tmp_path / "raw" / "cpp"
    write_ascend_pt(simulate([32768], "cpp", chunk_size=16384, pp=2), raw)
    store = LakeStore(tmp_path / "lake")
    (run,) = ingest_paths([raw], store, progress=False).runs
    _age(store.location)
    for path in store.location.rglob("*.parquet"):
        os.utime(path, ns=(OLD, OLD))
    with store.session() as session:
        assert session.damaged == ()
        assert session.execute("select count(*) from kernels").fetchone()[0] > 0
    target = partition_dir(store.location, "kernels", run.run_id) / PART
    target.write_bytes(target.read_bytes()[:100])  # cut short in place
    with store.session(read_only=True) as session:
        (damaged,) = session.damaged
        assert damaged.path == str(target) and damaged.key == run.run_id
        assert session.execute("select count(*) from runs").fetchone()[0] == 0  # left out
