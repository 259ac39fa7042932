"""`bench scale`'s DuckDB-file probe: the history copied in SQL holds count x one run's rows, and
the probe times the ingest and the commands at both sizes (issue 37 item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.bench.rank_copies import DEFAULT_RANK, replicate_rank
from pipelines.bench.scale import COMMANDS, copy_run_rows, store_probe
from pipelines.ingest.load import ingest_paths
from pipelines.store import open_store
from pipelines.store.schema import RUN_TABLES

pytestmark = pytest.mark.real


@pytest.fixture
def rank_source() -> Path:
    if not DEFAULT_RANK.is_dir():
        pytest.skip(f"real rank folder absent: {DEFAULT_RANK}")
    return DEFAULT_RANK


def test_copied_history_holds_count_times_one_runs_rows(rank_source: Path, tmp_path: Path) -> None:
    folder = replicate_rank(tmp_path / "run", 2, rank_source)
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        run_id = ingest_paths([folder], con, progress=False).runs[0].run_id
        one = {t: con.execute(f"select count(*) from {t}").fetchone()[0] for t in RUN_TABLES}
        copy_run_rows(con, run_id, 4)
        for table, rows in one.items():
            assert con.execute(f"select count(*) from {table}").fetchone()[0] == 5 * rows, table
        distinct = "select count(distinct run_id), count(distinct origin) from runs"
        assert con.execute(distinct).fetchone() == (5, 5)
        assert one["slices"] > 0
    finally:
        con.close()


@pytest.mark.slow
def test_store_probe_times_ingest_and_commands(rank_source: Path, tmp_path: Path) -> None:
    probe = store_probe(tmp_path, small=1, large=3, repeat=1)
    assert set(probe.ingest_s) == {1, 3} and all(v > 0 for v in probe.ingest_s.values())
    for command in COMMANDS:
        assert probe.command_rc[command][3] in (0, 1), command  # it ran (1: a check failed)
        assert probe.command_ratio(command) > 0
    con = open_store(tmp_path / "warehouse_3.duckdb").open()
    try:  # the probe's new run was removed after each ingest
        assert con.execute("select count(*) from runs").fetchone()[0] == 3
    finally:
        con.close()
