import polars as pl
import pytest

from pipelines.ingest.frames import RunFrames
from pipelines.store import open_store, queries
from pipelines.store.insert import INSERT_BATCH_ROWS, insert_frame
from pipelines.store.schema import CANONICAL_TABLES


def test_schema_has_every_canonical_table(warehouse):
    tables = {r[0] for r in warehouse.execute("show tables").fetchall()}
    assert set(CANONICAL_TABLES) <= tables


def test_write_run_twice_adds_no_rows(warehouse):
    frames = RunFrames(
        run={"run_id": "r1", "source": "sim", "content_hash": "abc"},
        tables={"ranks": pl.DataFrame({"run_id": ["r1", "r1"], "rank": [0, 1]})},
    )
    first = warehouse.write_run("r1", frames.conformed())
    second = warehouse.write_run("r1", frames.conformed())
    assert first == second
    assert queries.row_counts(warehouse, ["runs", "ranks"]) == {"runs": 1, "ranks": 2}


def test_unknown_column_is_rejected():
    frames = RunFrames(run={"run_id": "r1"}, tables={"ranks": pl.DataFrame({"bogus": [1]})})
    with pytest.raises(ValueError, match="bogus"):
        frames.conformed()


def test_insert_frame_spanning_several_row_groups_keeps_every_row_in_order(warehouse):
    n = 2 * INSERT_BATCH_ROWS + 7  # three statements, the last one partial
    frame = pl.DataFrame(
        {
            "run_id": ["r"] * n,
            "rank": [0] * n,
            "lane": ["host"] * n,
            "name": [f"op{i}" for i in range(n)],
            "start_ns": list(range(n)),
            "dur_ns": [1] * n,
            "args": [f'{{"i": {i}}}' for i in range(n)],
        }
    )
    assert insert_frame(warehouse, "slices", frame) == n
    rows = warehouse.execute(
        "select count(*), count(distinct start_ns), min(start_ns), max(start_ns),"
        " count(*) filter (where name = 'op' || start_ns and args = '{\"i\": ' || start_ns || '}')"
        " from slices"
    ).fetchone()
    assert rows == (n, n, 0, n - 1, n)


def test_reopening_rebuilds_no_view_unless_sql_or_tables_changed(tmp_path, monkeypatch):
    from pipelines.store import relations

    path = tmp_path / "w.duckdb"
    open_store(path).open().close()
    builds = []
    real_build = relations.build
    monkeypatch.setattr(
        relations, "build", lambda con, *a, **k: builds.append(k) or real_build(con, *a, **k)
    )
    open_store(path).open().close()
    open_store(path).open(read_only=True).close()
    assert builds == []  # the stored views were built from these sql/ files
    con = open_store(path).open()
    con.execute(f"update {relations.VIEWS_SIGNATURE_TABLE} set signature = 'older sql/'")
    con.execute("drop view int_chunk_tau")
    con.close()
    reader = open_store(path).open(read_only=True)  # older views: this connection gets temp ones
    assert builds == [{"temporary": True}]
    assert reader.execute("select count(*) from int_chunk_tau").fetchone() == (0,)
    reader.close()
    open_store(path).open().close()  # a writer rebuilds them and stores the signature
    assert builds[-1] == {}
    con = open_store(path).open()
    assert relations.views_current(con, relations.views_signature())
    con.execute("alter table runs drop column segmentation")  # a file from before the column
    con.close()
    open_store(path).open().close()  # column added back: views that read runs are rebuilt
    assert len(builds) == 3
