"""Sensor on the raw folder: every run folder becomes a partition of `runs` and is ingested.

Each tick lists the raw folder's sub-folders, computes a signature of each (file names, sizes,
modification times), adds the folders it has not seen as partitions, and requests one run per
folder whose signature differs from the one in its cursor: raw_run_files, the canonical tables
and chunks of that partition. run_key = folder + signature, so a changed folder is ingested again
and an unchanged one never twice. Folders modified within the last `settle_seconds` are being
written and wait for a later tick.
"""

import json
import time

import dagster as dg

from pipelines.defs.analysis.assets import chunks
from pipelines.defs.ingest.assets import canonical_tables, raw_run_files
from pipelines.defs.ingest.partitions import runs_partitions
from pipelines.defs.resources import RawDirResource
from pipelines.ingest.folders import (
    folder_state,
    not_run_folders,
    root_problem,
    run_folders,
    unusable_folders,
)
from pipelines.ingest.frames import printable, stored_path

INGEST_SELECTION = dg.AssetSelection.assets(raw_run_files, canonical_tables, chunks)


@dg.sensor(
    name="raw_run_folders",
    asset_selection=INGEST_SELECTION,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers each run folder under the raw folder as a partition of `runs` and "
    "ingests it when it is new or its content changed.",
)
def raw_run_folders(context: dg.SensorEvaluationContext, raw_dir: RawDirResource):
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    known = set(context.instance.get_dynamic_partitions(runs_partitions.name))
    now = time.time()
    cursor: dict[str, str] = {}
    new_keys: list[str] = []
    requests: list[dg.RunRequest] = []
    settling: list[str] = []
    empty: list[str] = []
    problem = root_problem(raw_dir.root)
    if problem:
        context.log.warning(f"{problem}: no run folder to watch (set RawDirResource.path)")
        return dg.SensorResult(skip_reason=problem, cursor=json.dumps(seen, sort_keys=True))
    for entry, why in not_run_folders(raw_dir.root):
        context.log.info(f"not a run folder: '{printable(stored_path(entry.name))}': {why}")
    for folder in run_folders(raw_dir.root):
        state = folder_state(folder)
        if state.files == 0:
            empty.append(state.key)
            if state.key in seen:
                cursor[state.key] = seen[state.key]
            continue
        if now - state.newest_mtime < raw_dir.settle_seconds:
            settling.append(state.key)
            if state.key in seen:
                cursor[state.key] = seen[state.key]
            continue
        cursor[state.key] = state.signature
        if state.key not in known:
            new_keys.append(state.key)
        if seen.get(state.key) != state.signature:
            requests.append(
                dg.RunRequest(
                    partition_key=state.key,
                    run_key=f"{state.key}:{state.signature}",
                    tags={"tracereplay/signature": state.signature},
                )
            )
    for folder in unusable_folders(raw_dir.root):
        context.log.warning(
            f"not a partition: run folder '{printable(stored_path(folder.name))}' has a name"
            " Dagster partition keys refuse (a newline, a TAB, '...', bytes that are not"
            " UTF-8): rename it, or load it with `tracereplay ingest`"
        )
    if empty:
        context.log.info(f"empty (no file in it), left until files appear: {', '.join(empty)}")
    if settling:
        context.log.info(f"still being written, left for a later tick: {', '.join(settling)}")
    partition_requests = [runs_partitions.build_add_request(new_keys)] if new_keys else []
    if not requests and not partition_requests:
        return dg.SensorResult(
            skip_reason=f"no new or changed run folder in {raw_dir.root}",
            cursor=json.dumps(cursor, sort_keys=True),
        )
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=partition_requests,
        cursor=json.dumps(cursor, sort_keys=True),
    )
