"""Per-rank ingest into the lake: one run's rank folders read and written independently.

A big cluster run is one run (one run_id, docs/run_identity.md) but its rank folders need nothing
from each other, so each can be read and written by its own process or machine:

1. `plan_run(folder)`: discover the one run in `folder`, hash its files, fix the run_id (the
   same function as `tracereplay ingest`, from the rank folders' small profiler files:
   pipelines.ingest.run_ids); list its rank folders (the partitions).
2. `ingest_rank(plan, index)`: read rank folder `index` alone and write its rows as
   `<lake>/<table>/run_id=<id>/part-rank<r>.parquet` for ranks, slices, kernels, comm_ops and
   step_breakdown (LakeSession.write_rank); quarantine rows as their own batch.
3. `finish_run(plan, results)`: write the `runs` and `run_inputs` partitions (runs last: the run
   appears when every rank is there) and remove the runs this one replaces (same origin).

The Dagster job `ingest_rank_partitions` (pipelines/defs/ingest/rank_job.py) maps step 2 over the
rank folders under the multiprocess or the Dask executor; `tracereplay bench scale` times it.
Limits: a run's cluster_analysis_output/ and topology files are not read here (use
`tracereplay ingest` for runs that carry them); facts of step 3 come from the ranks' own files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.ingest.assemble import (
    RANK_TABLES,
    FileDigest,
    RunAssembler,
    combined_hash,
    file_digests,
)
from pipelines.ingest.discover import RankInput, RunInput, discover
from pipelines.ingest.frames import SCHEMAS
from pipelines.ingest.run_ids import run_id_for
from pipelines.memory_budget import release_spills
from pipelines.store import LakeStore, parquet_lake

RANK_FILE_TABLES = ("ranks", *RANK_TABLES)


@dataclass(frozen=True)
class RunPlan:
    """One run to ingest rank by rank (picklable: it travels to executor processes)."""

    lake: str
    origin: str
    source: str
    run_id: str
    content_hash: str
    rank_dirs: tuple[str, ...]
    readers: tuple[str, ...]
    digests: tuple[FileDigest, ...]
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class RankResult:
    """What one rank partition wrote."""

    index: int
    rank: int | None
    rows: dict[str, int]
    quarantined: int
    run_row: dict[str, Any] | None  # the run facts this rank's own files give


def plan_run(
    folder: str | Path, lake_root: str | Path, tags: dict[str, str] | None = None
) -> RunPlan:
    """The one run of `folder` with rank folders (ValueError otherwise), hashed."""
    found = discover([Path(folder)])
    runs = [r for r in found.runs if r.ranks]
    if len(runs) != 1:
        raise ValueError(
            f"{folder}: per-rank ingest needs one run of rank folders, found {len(runs)}"
        )
    run = runs[0]
    digests = file_digests(list(run.files))
    content = combined_hash(digests)
    return RunPlan(
        lake=str(Path(lake_root).resolve()),
        origin=str(run.origin),
        source=run.source,
        run_id=run_id_for(run, content),
        content_hash=content,
        rank_dirs=tuple(str(r.path) for r in run.ranks),
        readers=tuple(r.reader for r in run.ranks),
        digests=tuple(digests),
        tags=dict(tags or {}),
    )


class _RankAssembler(RunAssembler):
    """One rank folder read under its run's id (not an id of its own)."""

    def __init__(self, run: RunInput, run_id: str, tags: dict[str, str]) -> None:
        super().__init__(run, tags, digests=[])
        self._run_id = run_id


def ingest_rank(plan: RunPlan, index: int) -> RankResult:
    """Read rank folder `index` of the plan and write its rows as that rank's lake files."""
    path = Path(plan.rank_dirs[index])
    files = sorted(p for p in path.rglob("*") if p.is_file())
    rank_input = RankInput(path=path, reader=plan.readers[index], files=files)
    run = RunInput(origin=Path(plan.origin), source=plan.source, ranks=[rank_input])
    assembler = _RankAssembler(run, plan.run_id, plan.tags)
    try:
        assembler.read()
        frames = assembler.frames()
        _quarantine(plan, assembler)
        ranks = None if frames is None else frames.tables.get("ranks")
        if frames is None or ranks is None or ranks.is_empty():
            return RankResult(index, None, {}, len(assembler.quarantined), None)
        rank = int(ranks["rank"][0])
        tables = {t: frames.tables.get(t) for t in RANK_FILE_TABLES}
        _drop_whole_run_files(plan)
        with LakeStore(plan.lake).writer() as sessions, sessions.open() as session:
            rows = session.write_rank(plan.run_id, rank, tables)
        return RankResult(index, rank, rows, len(assembler.quarantined), frames.run)
    finally:
        release_spills()


def _quarantine(plan: RunPlan, assembler: RunAssembler) -> None:
    if not assembler.quarantined:
        return
    seen = datetime.now(UTC).replace(tzinfo=None)
    rows = [
        {
            "path": q.path,
            "reason": q.reason,
            "detail": q.detail,
            "content_hash": None,
            "seen_at": seen,
        }
        for q in assembler.quarantined
    ]
    parquet_lake.append_quarantine(
        Path(plan.lake), pl.DataFrame(rows, schema=SCHEMAS["quarantine"])
    )


def _drop_whole_run_files(plan: RunPlan) -> None:
    """A whole-run file of the same run (from `tracereplay ingest`) would double its rows."""
    for table in RANK_FILE_TABLES:
        parquet_lake.remove_whole_run_file(Path(plan.lake), table, plan.run_id)


def finish_run(plan: RunPlan, results: list[RankResult]) -> dict[str, int]:
    """Write the run's `runs` and `run_inputs` rows (runs last) and remove the runs stored at
    the same origin under another id. Returns rows per table over all ranks."""
    facts = [r.run_row for r in results if r.run_row]
    if not facts:
        raise ValueError(f"{plan.origin}: no rank produced rows ({results!r})"[:2000])
    row = dict(facts[0])
    collected = [f["collected_at"] for f in facts if f.get("collected_at")]
    dropped: dict[str, int] = {}
    for fact in facts:
        for reason, count in json.loads(fact.get("dropped_rows") or "{}").items():
            dropped[reason] = dropped.get(reason, 0) + int(count)
    row.update(
        content_hash=plan.content_hash,
        collected_at=min(collected) if collected else None,
        dropped_rows=json.dumps(dropped, sort_keys=True) if dropped else None,
    )
    inputs = pl.DataFrame(
        {
            "run_id": [plan.run_id] * len(plan.digests),
            "path": [d.path for d in plan.digests],
            "bytes": [d.bytes for d in plan.digests],
            "sha256": [d.sha256 for d in plan.digests],
        },
        schema=SCHEMAS["run_inputs"],
    )
    runs = pl.DataFrame([row], schema=SCHEMAS["runs"])
    with LakeStore(plan.lake).writer() as sessions, sessions.open() as session:
        for old in session.run_ids_at_origin(plan.origin):
            if old != plan.run_id:
                session.delete_run(old)
        session.replace_run_rows(plan.run_id, {"run_inputs": inputs, "runs": runs})
    totals: dict[str, int] = {"runs": 1, "run_inputs": inputs.height}
    for result in results:
        for table, count in result.rows.items():
            totals[table] = totals.get(table, 0) + count
    return totals
