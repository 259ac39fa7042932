"""The raw-folder sensor and the ingest assets on hostile folders, round four (issue 36; campaign
under /tmp/h4/hostile2 of 2026-12-04). Before: an empty run folder was "still being written"
on every tick, a file, a broken link or a link loop at the top of the raw folder and a raw
folder that was a file or missing were passed over without a word, and a hard-link copy of a
run folder was ingested with no 'duplicate of' in the asset's log."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from unittest import mock

import dagster as dg

from pipelines.defs.ingest.assets import canonical_tables, raw_run_files
from pipelines.defs.ingest.sensors import raw_run_folders
from pipelines.defs.resources import RawDirResource, StoreResource
from tests.defs.conftest import write_tiny_run


def _tick(root: Path) -> tuple[dg.SensorResult, list[str]]:
    context = dg.build_sensor_context(
        instance=dg.DagsterInstance.ephemeral(),
        resources={"raw_dir": RawDirResource(path=str(root), settle_seconds=0)},
    )
    said: list[str] = []
    log = type(context.log)
    with (
        mock.patch.object(log, "info", lambda self, m, *a, **k: said.append(f"info {m}")),
        mock.patch.object(log, "warning", lambda self, m, *a, **k: said.append(f"warning {m}")),
    ):
        result = raw_run_folders(context)
    return result, said


def test_entries_that_are_not_run_folders_are_each_logged(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write_tiny_run(raw / "tiny")
    (raw / "empty").mkdir()
    (raw / "hollow" / "a").mkdir(parents=True)
    (raw / "loose.pt.trace.json").write_text("{}")
    (raw / "loop").symlink_to(raw / "loop")
    (raw / "gone").symlink_to(raw / "nowhere")
    (raw / "_staging").mkdir()  # staging and hidden entries stay silent
    result, said = _tick(raw)
    assert [r.partition_key for r in result.run_requests] == ["tiny"]
    text = "\n".join(said)
    assert "empty (no file in it), left until files appear: empty, hollow" in text
    assert "still being written" not in text
    assert "'loose.pt.trace.json': a file, not a run folder" in text
    assert "'loop': a link loop" in text
    assert "'gone': a broken link" in text
    assert "_staging" not in text


def test_a_raw_folder_that_is_a_file_or_missing_is_said(tmp_path: Path) -> None:
    afile = tmp_path / "raw"
    afile.write_text("x")
    for root, why in ((afile, "is not a folder"), (tmp_path / "typo", "does not exist")):
        result, said = _tick(root)
        assert not result.run_requests
        assert why in result.skip_reason.skip_message
        assert any(line.startswith("warning") and why in line for line in said)


def test_a_hard_link_copy_of_a_run_folder_is_logged_as_a_duplicate(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    instance = dg.DagsterInstance.ephemeral()
    write_tiny_run(raw / "a")
    shutil.copytree(raw / "a", raw / "b", copy_function=os.link)
    resources = {
        "warehouse": StoreResource(path=str(tmp_path / "warehouse.duckdb")),
        "raw_dir": RawDirResource(path=str(raw), settle_seconds=0),
    }
    instance.add_dynamic_partitions("runs", ["a", "b"])
    logs = []
    for key in ("a", "b"):
        result = dg.materialize(
            [raw_run_files, canonical_tables],
            partition_key=key,
            resources=resources,
            instance=instance,
        )
        assert result.success
        logs += [r.user_message for r in instance.all_logs(result.run_id) if r.user_message]
    dup = [m for m in logs if "duplicate of" in m]
    assert len(dup) == 1 and "same bytes: counted once" in dup[0]
