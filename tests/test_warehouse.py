import polars as pl
import pytest

from pipelines import warehouse as wh
from pipelines.ingest.frames import RunFrames


def test_schema_has_every_canonical_table(warehouse):
    tables = {r[0] for r in warehouse.execute("show tables").fetchall()}
    assert set(wh.CANONICAL_TABLES) <= tables


def test_write_run_twice_adds_no_rows(warehouse):
    frames = RunFrames(
        run={"run_id": "r1", "source": "sim", "content_hash": "abc"},
        tables={"ranks": pl.DataFrame({"run_id": ["r1", "r1"], "rank": [0, 1]})},
    )
    first = wh.write_run(warehouse, "r1", frames.conformed())
    second = wh.write_run(warehouse, "r1", frames.conformed())
    assert first == second
    assert wh.row_counts(warehouse, ["runs", "ranks"]) == {"runs": 1, "ranks": 2}


def test_unknown_column_is_rejected():
    frames = RunFrames(run={"run_id": "r1"}, tables={"ranks": pl.DataFrame({"bogus": [1]})})
    with pytest.raises(ValueError, match="bogus"):
        frames.conformed()
