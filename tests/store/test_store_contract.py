"""One contract, two backends: every Session method behaves the same on a DuckDB file and on a
Parquet lake (docs/store.md)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.load import ingest_paths
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import FileStore, LakeStore, Store, StoreError, queries
from pipelines.store.schema import RUN_TABLES


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("raw")
    write_ascend_pt(simulate([32768], "cpp", chunk_size=16384, pp=2), out / "cpp")
    return out / "cpp"


@pytest.fixture(params=["file", "lake"])
def store(request, tmp_path: Path) -> Store:
    if request.param == "file":
        return FileStore(tmp_path / "w.duckdb")
    return LakeStore(tmp_path / "lake")


def _counts(store: Store, run_id: str) -> dict[str, int]:
    with store.session(read_only=True) as session:
        return {
            t: session.execute(f"select count(*) from {t} where run_id = ?", [run_id]).fetchone()[0]
            for t in RUN_TABLES
        }


def test_a_read_only_open_never_creates_a_store(store: Store) -> None:
    assert not store.exists()
    with pytest.raises(StoreError, match="run `tracereplay ingest` first"):
        store.open(read_only=True)
    assert not store.location.exists()


def test_writes_reads_and_deletes_agree_across_backends(store: Store, raw: Path) -> None:
    (run,) = ingest_paths([raw], store, progress=False).runs
    counts = _counts(store, run.run_id)
    assert counts["runs"] == 1 and counts["slices"] > 50 and counts["ranks"] == 2

    with store.session() as session:
        assert [r[0] for r in session.stored_runs()] == [run.run_id]
        assert session.run_ids_at_origin(run.origin) == [run.run_id]
        assert session.run_row(run.run_id)["run_id"].to_list() == [run.run_id]
        assert session.run_row_counts(run.run_id)["slices"] == counts["slices"]
        files = session.run_input_files()
        assert files and {f[0] for f in files} == {run.run_id}
        ranks = session.rows_of_runs("ranks", [run.run_id])
        assert ranks.height == 2
        assert session.rows_of_runs("ranks", ["no-such-run"]).height == 0

        # replace one table's rows and set a run value together
        session.replace_run_rows(run.run_id, {"chunks": pl.DataFrame()}, {"model": "renamed"})
        assert session.run_row(run.run_id)["model"].to_list() == ["renamed"]

        # quarantine rows are recorded once per (path, reason, content)
        for _ in range(2):
            session.record_quarantine("/x/trace.json", "not_json", "bad", "abc")
        assert session.execute("select count(*) from quarantine").fetchone()[0] == 1

        # a table computed in Python replaces the previous one
        session.replace_table("tau_fits", pl.DataFrame({"a": [1, 2]}))
        session.replace_table("tau_fits", pl.DataFrame({"a": [3]}))
        assert queries.read_relation(session.con, "tau_fits")["a"].to_list() == [3]

    with store.session(read_only=True) as reader, pytest.raises(StoreError, match="read-only"):
        reader.delete_run(run.run_id)

    with store.session() as session:
        session.delete_run(run.run_id)
        assert session.stored_runs() == []
    assert set(_counts(store, run.run_id).values()) == {0}


def test_the_same_run_gives_the_same_rows_in_both_backends(tmp_path: Path, raw: Path) -> None:
    file, lake = FileStore(tmp_path / "w.duckdb"), LakeStore(tmp_path / "lake")
    ids = [ingest_paths([raw], s, progress=False).runs[0].run_id for s in (file, lake)]
    assert ids[0] == ids[1]
    assert _counts(file, ids[0]) == _counts(lake, ids[1])
    with file.session(read_only=True) as a, lake.session(read_only=True) as b:
        for mart in ("fct_run_summary", "fct_rank_step_totals", "fct_kernel_totals"):
            left = a.execute(f"select * from {mart} order by all").fetchall()
            assert left and left == b.execute(f"select * from {mart} order by all").fetchall()
