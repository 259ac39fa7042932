"""Ingest assets, one partition per run folder: what the folder holds, and the canonical tables.

`raw_run_files` looks at the folder (runs found, readers, files, bytes) and writes nothing.
`canonical_tables` loads the folder through pipelines.ingest.load.ingest_paths (the same rule as
`tracereplay ingest --prune`: one origin, one current run; unchanged bytes are not parsed; new
bytes replace the run; runs the folder no longer holds are removed) and reports, per table, the
rows this partition holds. Two partitions never share a run, whatever their bytes. An input that
cannot be read is quarantined: a warning in the log and a row in the `quarantine` metadata, never
a failed step. Note: the library rewrites a run's `chunks` rows with the run (empty), so `chunks`
must follow this asset; the sensor requests both.
"""

from collections import Counter
from pathlib import Path

import dagster as dg
import duckdb

from pipelines.defs.ingest.partitions import runs_partitions
from pipelines.defs.metadata import markdown_rows
from pipelines.defs.resources import WRITE_POOL, RawDirResource, StoreResource
from pipelines.ingest.discover import discover
from pipelines.ingest.folders import folder_state
from pipelines.ingest.load import IngestReport, ingest_paths
from pipelines.store import queries
from pipelines.store.schema import table_description

INGEST_TABLES = (
    *("runs", "ranks", "slices", "kernels", "comm_ops", "step_breakdown", "quarantine"),
    "latency_points",  # operator-latency tables found in the folder (docs/latency_tables.md)
)
# from the DDL's `comment on table` (sql/schema/<table>.sql, pipelines.store.schema)
TABLE_DESCRIPTIONS = {table: table_description(table) for table in INGEST_TABLES}


def _existing_folder(raw_dir: RawDirResource, partition_key: str) -> Path:
    folder = raw_dir.folder(partition_key)
    if not folder.is_dir():
        raise dg.Failure(
            f"run folder {folder} does not exist (partition {partition_key!r} was registered for "
            "a folder that has since been removed or renamed)"
        )
    return folder


@dg.asset(
    partitions_def=runs_partitions,
    deps=["sim_campaign"],  # simulated folders come from there; real ones are dropped in by hand
    group_name="ingest",
    kinds={"file"},
    description="The files of one run folder under the raw folder: runs found, readers, bytes.",
)
def raw_run_files(
    context: dg.AssetExecutionContext, raw_dir: RawDirResource
) -> dg.MaterializeResult:
    folder = _existing_folder(raw_dir, context.partition_key)
    state = folder_state(folder)
    found = discover([folder])
    readers = Counter(rank.reader for run in found.runs for rank in run.ranks)
    readers.update("kineto" for run in found.runs for _ in run.kineto_files)
    suffixes = Counter(p.suffix or p.name for run in found.runs for p in run.files)
    resolved = folder.resolve()
    rows = [
        (
            str(run.origin.relative_to(resolved)) if run.origin != resolved else ".",
            run.source,
            len(run.ranks),
            len(run.files),
            round(run.total_bytes / 1e6, 3),
        )
        for run in found.runs
    ]
    for item in found.quarantined:
        context.log.warning(f"quarantined at discovery: {item.path}: {item.reason} ({item.detail})")
    for path, why in found.ignored_reasons.items():
        context.log.info(f"not read: {path}: {why}")
    return dg.MaterializeResult(
        metadata={
            "folder": dg.MetadataValue.path(str(folder)),
            "resolves_to": dg.MetadataValue.path(str(resolved)),
            "signature": state.signature,
            "files_in_folder": state.files,
            "bytes_in_folder": state.bytes,
            "runs_found": len(found.runs),
            "rank_folders": sum(len(run.ranks) for run in found.runs),
            "input_files": sum(len(run.files) for run in found.runs),
            "input_bytes": sum(run.total_bytes for run in found.runs),
            "readers": dg.MetadataValue.json(dict(sorted(readers.items()))),
            "input_suffixes": dg.MetadataValue.json(dict(sorted(suffixes.items()))),
            "quarantined_at_discovery": len(found.quarantined),
            "ignored_files": len(found.ignored),
            "runs": dg.MetadataValue.md(
                markdown_rows(["origin", "source", "ranks", "files", "MB"], rows)
            ),
        }
    )


def _span(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> tuple[int | None, int | None]:
    if not run_ids:
        return None, None
    return queries.slice_start_span(con, run_ids)


def _quarantine_rows(report: IngestReport, folder: Path) -> list[tuple[str, str, str]]:
    root = folder.resolve()
    rows = []
    for item in report.quarantined:
        path = Path(item.path)
        shown = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        rows.append((shown, item.reason, item.detail))
    return rows


def _table_metadata(
    table: str,
    report: IngestReport,
    folder: Path,
    totals: dict[str, int],
    span: tuple[int | None, int | None],
    stale: list[str],
) -> dict[str, object]:
    run_ids = [run.run_id for run in report.runs]
    meta: dict[str, object] = {"run_ids": ", ".join(run_ids), "rows_in_table": totals[table]}
    if table == "quarantine":
        rows = _quarantine_rows(report, folder)
        meta["dagster/row_count"] = len(rows)
        meta["quarantined_inputs"] = len(rows)
        meta["quarantined"] = dg.MetadataValue.md(
            markdown_rows(["path", "reason", "detail"], rows) if rows else "nothing quarantined"
        )
        meta["skipped"] = dg.MetadataValue.json([{"path": p, "why": w} for p, w in report.skipped])
        return meta
    if table == "latency_points":
        meta["dagster/row_count"] = sum(t.points for t in report.tables)
        meta["tables"] = ", ".join(f"{t.table_id}: {t.status}" for t in report.tables)
        return meta
    meta["dagster/row_count"] = sum(run.rows.get(table, 0) for run in report.runs)
    if table in ("runs", "slices"):
        first, last = span
        meta["ranks"] = sum(run.ranks for run in report.runs)
        meta["first_start_s"] = None if first is None else first / 1e9
        meta["last_start_s"] = None if last is None else last / 1e9
        meta["span_s"] = None if first is None else (last - first) / 1e9
    if table == "runs":
        meta["sources"] = ", ".join(sorted({run.source for run in report.runs}))
        meta["quarantined_inputs"] = len(report.quarantined)
        meta["stale_runs_removed"] = ", ".join(stale)
        meta["status"] = ", ".join(f"{run.run_id}: {run.status}" for run in report.runs)
        meta["dropped_rows"] = dg.MetadataValue.json(
            {run.run_id: run.dropped_rows for run in report.runs if run.dropped_rows}
        )
    return meta


@dg.multi_asset(
    name="canonical_tables",
    specs=[
        dg.AssetSpec(
            table,
            deps=[raw_run_files],
            group_name="ingest",
            kinds={"duckdb"},
            description=TABLE_DESCRIPTIONS[table],
        )
        for table in INGEST_TABLES
    ],
    partitions_def=runs_partitions,
    pool=WRITE_POOL,
    can_subset=False,
)
def canonical_tables(
    context: dg.AssetExecutionContext,
    warehouse: StoreResource,
    raw_dir: RawDirResource,
):
    """Load one run folder into the canonical tables and report each table's rows."""
    folder = _existing_folder(raw_dir, context.partition_key)
    # the library opens the file only to write (waiting for another writer), as the CLI does
    report = ingest_paths([folder], warehouse.store, progress=False, prune=True)
    stale = report.pruned + [old for run in report.runs for old in run.replaced]
    with warehouse.connect() as con:
        span = _span(con, [run.run_id for run in report.runs])
        totals = queries.row_counts(con, INGEST_TABLES)
    for item in report.quarantined:
        context.log.warning(f"quarantined: {item.path}: {item.reason} ({item.detail})")
    for path, why in report.skipped:
        context.log.warning(f"skipped: {path}: {why}")
    if not report.runs:
        context.log.warning(f"no run could be ingested from {folder}")
    for run in report.runs:
        context.log.info(
            f"{run.run_id}: {run.status}"
            + (f", replaces {run.replaced}" if run.replaced else "")
            + (
                f", duplicate of {run.duplicate_of} (same bytes: counted once)"
                if run.duplicate_of
                else ""
            )
        )
    for run_id in report.pruned:
        context.log.info(f"removed run {run_id}: no longer produced by {folder}")
    for table in INGEST_TABLES:
        yield dg.MaterializeResult(
            asset_key=table,
            metadata=_table_metadata(table, report, folder, totals, span, stale),
        )
