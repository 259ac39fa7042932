"""A whole Parquet file of another schema in a lake partition (written over the run's file, or a
stray one beside it) is found by the damage scan before any view reads it: its run is left out and
named, the other runs still list, and re-ingesting the run's folder rewrites its partitions
(pipelines/store/lake_damage.py, issue 36 deliver 4). Before, DuckDB failed every command on the
lake with "schema mismatch in glob"."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.load import ingest_paths
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import LakeStore, lake_damage
from pipelines.store.lake_layout import PART, partition_dir


@pytest.fixture
def lake(tmp_path: Path) -> tuple[LakeStore, dict[str, Path]]:
    """A lake holding two simulated runs (cpp, vpp), and their raw folders by run id."""
    store = LakeStore(tmp_path / "lake")
    folders = {}
    for schedule in ("cpp", "vpp"):
        raw = tmp_path / "raw" / schedule
        write_ascend_pt(simulate([32768], schedule, chunk_size=16384, pp=2), raw)
        (run,) = ingest_paths([raw], store, progress=False).runs
        folders[run.run_id] = raw
    return store, folders


def _runs(store: LakeStore) -> set[str]:
    with store.session(read_only=True) as session:
        return {r[0] for r in session.execute("select run_id from runs").fetchall()}


@pytest.mark.parametrize("how", ["foreign", "stray"])
def test_a_foreign_or_stray_parquet_file_costs_its_run_only(
    lake: tuple[LakeStore, dict[str, Path]], how: str, capsys
) -> None:
    store, folders = lake
    bad, good = sorted(folders)
    folder = partition_dir(store.location, "kernels", bad)
    with store.session(read_only=True) as session:
        kernels = dict(
            session.execute("select run_id, count(*) from kernels group by run_id").fetchall()
        )
    target = folder / (PART if how == "foreign" else "stray.parquet")
    pl.DataFrame({"x": [1, 2]}).write_parquet(target)

    damaged = lake_damage.damaged_files(store.location)
    assert [(d.table, d.key, d.path) for d in damaged] == [("kernels", bad, str(target))]
    assert damaged[0].reason.startswith("foreign schema: lacks ")
    assert "dur_ns" in damaged[0].reason and "(has x)" in damaged[0].reason

    assert _runs(store) == {good}  # the run of the bad file is left out, the other listed
    err = capsys.readouterr().err
    assert f"lake run {bad} left out" in err and "foreign schema" in err and "re-ingest" in err

    # re-ingest rewrites the run's partitions: the foreign file replaced, the stray one removed
    ingest_paths([folders[bad]], store, progress=False)
    assert lake_damage.damaged_files(store.location) == []
    assert sorted(p.name for p in folder.glob("*.parquet")) == [PART]
    assert _runs(store) == {bad, good}
    with store.session(read_only=True) as session:
        again = dict(
            session.execute("select run_id, count(*) from kernels group by run_id").fetchall()
        )
    assert again == kernels and kernels[bad] > 0


def test_a_file_of_its_own_table_passes_and_a_file_of_another_table_does_not(
    lake: tuple[LakeStore, dict[str, Path]],
) -> None:
    """Whole files of the lake's own writer pass (every table); a slices file copied into the
    kernels partition lacks kernels' columns (its own columns are no excuse)."""
    store, folders = lake
    assert lake_damage.damaged_files(store.location) == []
    run = sorted(folders)[0]
    source = partition_dir(store.location, "slices", run) / PART
    target = partition_dir(store.location, "kernels", run) / "copied.parquet"
    target.write_bytes(source.read_bytes())
    (found,) = lake_damage.damaged_files(store.location)
    assert found.path == str(target) and "foreign schema: lacks" in found.reason
