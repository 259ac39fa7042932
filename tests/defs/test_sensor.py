"""The raw-folder sensor: new folders become partitions with a run request; changes re-ingest."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from unittest import mock

import dagster as dg

from pipelines.defs.ingest.sensors import raw_run_folders
from pipelines.defs.resources import RawDirResource
from pipelines.ingest.folders import folder_state, run_folders, usable_key
from tests.defs.conftest import write_tiny_run


def _tick(instance: dg.DagsterInstance, raw: Path, cursor: str | None = None, settle: float = 0):
    context = dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"raw_dir": RawDirResource(path=str(raw), settle_seconds=settle)},
    )
    return raw_run_folders(context)


def test_new_folder_is_registered_and_requested(instance, raw: Path) -> None:
    write_tiny_run(raw / "tiny")
    (raw / ".hidden").mkdir()  # hidden and staging folders are never partitions
    result = _tick(instance, raw)
    [added] = result.dynamic_partitions_requests
    assert added.partitions_def_name == "runs"
    assert list(added.partition_keys) == ["tiny"]
    [request] = result.run_requests
    signature = folder_state(raw / "tiny").signature
    assert request.partition_key == "tiny"
    assert request.run_key == f"tiny:{signature}"
    assert json.loads(result.cursor) == {"tiny": signature}


def test_unchanged_folder_is_not_requested_again_and_a_change_is(instance, raw: Path) -> None:
    write_tiny_run(raw / "tiny")
    first = _tick(instance, raw)
    instance.add_dynamic_partitions("runs", ["tiny"])
    second = _tick(instance, raw, first.cursor)
    assert not second.run_requests and not second.dynamic_partitions_requests
    assert second.skip_reason is not None
    # the folder is written again with another seed: new content, new run key, no new partition
    write_tiny_run(raw / "tiny", seed=1)
    third = _tick(instance, raw, first.cursor)
    assert not third.dynamic_partitions_requests
    [request] = third.run_requests
    assert request.partition_key == "tiny"
    assert request.run_key != first.run_requests[0].run_key


def test_folder_still_being_written_waits(instance, raw: Path) -> None:
    write_tiny_run(raw / "fresh")
    waiting = _tick(instance, raw, settle=3600)
    assert not waiting.run_requests and not waiting.dynamic_partitions_requests
    assert json.loads(waiting.cursor) == {}
    old = time.time() - 7200
    for folder, _, names in os.walk(raw / "fresh"):
        for name in names:
            os.utime(Path(folder) / name, (old, old))
    settled = _tick(instance, raw, waiting.cursor, settle=3600)
    assert [r.partition_key for r in settled.run_requests] == ["fresh"]


def test_folder_listing_rules(raw: Path) -> None:
    for name in ("b", "a", "_staging", ".git"):
        (raw / name).mkdir()
    (raw / "file.json").write_text("{}")
    (raw / "link").symlink_to(raw / "a", target_is_directory=True)
    assert [p.name for p in run_folders(raw)] == ["a", "b", "link"]
    assert not usable_key("x...y") and not usable_key("x\ny") and usable_key("deepseek-v3.1-r0")
    assert run_folders(raw / "missing") == []


def test_folders_that_cannot_be_partitions_are_named_in_the_log(instance, raw: Path) -> None:
    write_tiny_run(raw / "tiny")
    for name in ("two\nlines", "a...b", os.fsdecode(b"bytes\xff")):
        write_tiny_run(raw / name)
    (raw / "_staging").mkdir()  # staging and hidden folders stay silent
    context = dg.build_sensor_context(
        instance=instance,
        resources={"raw_dir": RawDirResource(path=str(raw), settle_seconds=0)},
    )
    with mock.patch.object(type(context.log), "warning") as warning:
        result = raw_run_folders(context)
    assert [r.partition_key for r in result.run_requests] == ["tiny"]
    said = " ".join(str(call.args[0]) for call in warning.call_args_list)
    assert warning.call_count == 3
    assert r"'two\nlines'" in said and "'a...b'" in said and r"'bytes\xff'" in said
