"""Issue 30 acceptance line on every real folder: "0 runs stored empty or silently partial; every
quarantine names a reason". Each directory under ../shared/traces/real (every level: a rank's
ASCEND_PROFILER_OUTPUT, a rank folder, a set, a repository) is ingested alone into a fresh
warehouse; no stored run may lack device work (kernel rows or compute / comm lane slices), and
every quarantined input carries a reason code and a detail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.ingest.load import ingest_paths
from pipelines.store import open_store

pytestmark = [pytest.mark.real, pytest.mark.slow]


def _folders(root: Path) -> list[Path]:
    return sorted(Path(d) for d, _, _ in os.walk(root) if Path(d) != root)


def test_every_real_folder_alone_stores_no_empty_run(real_dir: Path, tmp_path: Path) -> None:
    folders = _folders(real_dir)
    assert len(folders) > 40
    stored = quarantined = 0
    for i, folder in enumerate(folders):
        con = open_store(tmp_path / f"w{i}.duckdb").open()
        try:
            report = ingest_paths([folder], con, progress=False)
            empty = con.execute(
                """
                select r.run_id from runs as r
                where not exists (select 1 from kernels as k where k.run_id = r.run_id)
                  and not exists (
                      select 1 from slices as s
                      where s.run_id = r.run_id and s.lane in ('compute', 'comm'))
                """
            ).fetchall()
            reasons = con.execute("select path, reason, detail from quarantine").fetchall()
        finally:
            con.close()
        where = folder.relative_to(real_dir)
        assert empty == [], (where, empty)
        assert all(reason and detail for _, reason, detail in reasons), (where, reasons)
        assert len(reasons) == len(report.quarantined)
        stored += len(report.runs)
        quarantined += len(reasons)
    # the folders hold both: runs with device work, and summaries alone (quarantined)
    assert stored > 40 and quarantined >= 5


def test_summaries_alone_are_quarantined_with_their_reason(real_dir: Path, warehouse) -> None:
    """Set A's rank 1 (analysis.db, step_trace_time.csv, communication.json: no device task) and
    msprof-analyze's cluster summary without its rank folders were stored as runs with no device
    time before; now each is one quarantine `no_device_events`."""
    paths = [
        real_dir / "msinsight/test/st/level2/rank_1_ascend_pt",
        real_dir / "msprof-analyze/test/resource/advisor/cluster_analysis_output",
    ]
    report = ingest_paths(paths, warehouse, progress=False)
    assert report.runs == []
    assert [q.reason for q in report.quarantined] == ["no_device_events"] * 2
    assert warehouse.execute("select count(*) from runs").fetchone()[0] == 0
