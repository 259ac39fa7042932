"""Ingest assets on a real torch_npu text export (through a symlink) and on a quarantined input."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipelines.defs.ingest.assets import canonical_tables, raw_run_files
from tests.defs.conftest import metadata_by_key, write_tiny_run

LEVEL1 = Path("msinsight/test/data/pytorch/text/level1")


def _kernel_rows(folder: Path) -> int:
    total = 0
    for path in sorted(folder.glob("rank*_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv")):
        with path.open(newline="") as handle:
            total += sum(1 for _ in csv.reader(handle)) - 1
    return total


def _ingest(instance, resources, key: str) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [raw_run_files, canonical_tables],
        partition_key=key,
        resources=resources,
        instance=instance,
    )


@pytest.mark.real
def test_real_run_folder_ingests_and_reingests_unchanged(
    real_dir: Path, raw: Path, instance, resources, tmp_path: Path
) -> None:
    source = real_dir / LEVEL1
    (raw / "level1").symlink_to(source, target_is_directory=True)
    instance.add_dynamic_partitions("runs", ["level1"])

    first = _ingest(instance, resources, "level1")
    assert first.success
    files = metadata_by_key(first, "raw_run_files")["raw_run_files"]
    assert files["runs_found"] == 1 and files["rank_folders"] == 2
    assert files["readers"] == {"ascend_text": 2}
    tables = metadata_by_key(first, "canonical_tables")
    assert set(tables) == {
        "runs",
        "ranks",
        "slices",
        "kernels",
        "comm_ops",
        "step_breakdown",
        "quarantine",
        "latency_points",
    }
    assert tables["runs"]["dagster/row_count"] == 1
    assert tables["ranks"]["dagster/row_count"] == tables["runs"]["ranks"] == 2
    assert tables["kernels"]["dagster/row_count"] == _kernel_rows(source) > 0
    assert tables["slices"]["dagster/row_count"] > tables["kernels"]["dagster/row_count"]
    assert tables["quarantine"]["quarantined_inputs"] == 0
    assert 0 < tables["runs"]["span_s"] < 60
    assert tables["runs"]["last_start_s"] - tables["runs"]["first_start_s"] == pytest.approx(
        tables["runs"]["span_s"], abs=1e-5
    )

    second = _ingest(instance, resources, "level1")
    again = metadata_by_key(second, "canonical_tables")
    for table, meta in tables.items():
        assert again[table]["dagster/row_count"] == meta["dagster/row_count"], table
        assert again[table]["rows_in_table"] == meta["rows_in_table"], table
    assert again["runs"]["run_ids"] == tables["runs"]["run_ids"]
    assert again["runs"]["stale_runs_removed"] == ""
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True)
    try:
        kernels = con.execute("select count(*) from kernels").fetchone()[0]
        origins = con.execute("select origin from runs").fetchall()
    finally:
        con.close()
    assert kernels == tables["kernels"]["dagster/row_count"]
    assert origins == [(str(source.resolve()),)]


def test_quarantined_input_is_reported_not_fatal(raw: Path, instance, resources) -> None:
    folder = raw / "mixed"
    write_tiny_run(folder)
    (folder / "extra").mkdir()
    (folder / "extra" / "trace.json.gz").write_bytes(b"this is not gzip")
    instance.add_dynamic_partitions("runs", ["mixed"])

    result = _ingest(instance, resources, "mixed")
    assert result.success
    tables = metadata_by_key(result, "canonical_tables")
    assert tables["runs"]["dagster/row_count"] == 1
    assert tables["quarantine"]["quarantined_inputs"] == 1
    assert tables["quarantine"]["rows_in_table"] == 1
    assert "not_gzip" in tables["quarantine"]["quarantined"]
    warnings = [
        entry.user_message
        for entry in instance.all_logs(result.run_id)
        if entry.level == logging.WARNING
    ]
    assert any("quarantined" in w and "trace.json.gz" in w for w in warnings)


def test_changed_folder_replaces_its_run(raw: Path, instance, resources, tmp_path: Path) -> None:
    write_tiny_run(raw / "tiny", seed=0)
    instance.add_dynamic_partitions("runs", ["tiny"])
    first = metadata_by_key(_ingest(instance, resources, "tiny"), "canonical_tables")
    write_tiny_run(raw / "tiny", seed=1)  # same folder names, other durations
    second = metadata_by_key(_ingest(instance, resources, "tiny"), "canonical_tables")
    assert second["runs"]["run_ids"] != first["runs"]["run_ids"]
    assert second["runs"]["stale_runs_removed"] == first["runs"]["run_ids"]
    assert second["runs"]["rows_in_table"] == 1
    assert second["kernels"]["rows_in_table"] == first["kernels"]["rows_in_table"]


def test_missing_folder_fails_with_a_reason(instance, resources) -> None:
    instance.add_dynamic_partitions("runs", ["gone"])
    result = dg.materialize(
        [raw_run_files],
        partition_key="gone",
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "does not exist" in str(failure.step_failure_data.error.message)
