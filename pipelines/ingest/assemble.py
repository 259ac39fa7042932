"""Turn one discovered run (RunInput) into RunFrames: read every rank with its reader, add run_id
and rank to the rows, and build the `runs` and `ranks` rows.

content hash = sha256 over the sha256 of each input file's bytes (streamed), in path order.
run_id = readable stem (the run folder's last two path parts) + "-" + the first 12 hex digits of
sha256(origin, content hash): the same bytes at the same origin give the same run_id, the same
bytes copied to another folder are another run (docs/run_identity.md).

Run facts: model / schedule / chunk_size / seq_len / tp / pp / vp from profiler_metadata.json
keys (docs/tau_k.md §1), else tp / pp / dp / world_size from MindSpeed `distributed_args`;
`--tag key=value` overrides any of them and is kept in `tags`. Rank facts: device id (reader),
pp_stage = position of the rank in its `pp` group, groups = the parallel groups it belongs to.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from pipelines import memory_budget, stop
from pipelines.ingest.discover import RankInput, RunInput
from pipelines.ingest.dropped import merged as merged_counts
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.frames import SCHEMAS, Quarantined, RankFrames, RunFrames, stored_path
from pipelines.ingest.run_ids import run_id_for
from pipelines.ingest.steps.step_breakdown import assess

RUN_INT_KEYS = ("chunk_size", "seq_len", "tp", "pp", "vp", "dp", "world_size")
RUN_TEXT_KEYS = ("model", "schedule", "hardware", "attention")
DISTRIBUTED_KEYS = {
    "tp": "tensor_model_parallel_size",
    "pp": "pipeline_model_parallel_size",
    "vp": "virtual_pipeline_model_parallel_size",
    "dp": "data_parallel_size",
    "world_size": "world_size",
}
RANK_TABLES = ("slices", "kernels", "comm_ops", "step_breakdown")
NO_DEVICE_EVENTS = "no_device_events"  # the reason code kineto.py uses for the same case
_CHUNK = 1 << 20
_HASHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracereplay-hash")
# the rank folders of one run are read side by side (DuckDB scans and Polars release the GIL;
# docs/bench_ingest.md "Many small runs"), unless together they are large enough that reading
# them at once could multiply the memory peak: then one at a time, under the streamed budget
RANK_READ_WORKERS = max(1, min(4, os.cpu_count() or 1))
_RANK_READERS = ThreadPoolExecutor(RANK_READ_WORKERS, thread_name_prefix="tracereplay-rank")
PARALLEL_RANKS_MAX_SHARE = 8  # side by side only while the ranks' bytes <= memory budget / this


DEVICE_LANES = ("compute", "comm")
"""Slice lanes of device work (sql/schema/slices.sql); host, overlap and other lanes are not."""


def _has_device_input(frames: RankFrames) -> bool:
    """Whether a rank folder gave device work to read: kernel rows or device-lane trace slices
    (a trace of host lanes alone, Python and CANN, holds none)."""
    kernels = frames.tables.get("kernels")
    if isinstance(kernels, pl.LazyFrame) or (kernels is not None and kernels.height):
        return True
    slices = frames.tables.get("slices")
    if slices is None:
        return False
    device = pl.col("lane").is_in(DEVICE_LANES)
    if isinstance(slices, pl.LazyFrame):  # streamed to disk: stop at the first device slice
        return slices.filter(device).head(1).collect().height > 0
    return bool(slices.height) and bool(slices.select(device.any()).item())


def _no_device_detail(ranks: list[tuple[int, RankFrames]]) -> str:
    held = sorted({t for _, f in ranks for t, frame in f.tables.items() if frame is not None})
    if "slices" in held:
        return (
            "no device work (the traces hold host events only: no kernel, communication or"
            " device-lane slice): profile with the device activities on (torch_npu:"
            " ProfilerActivity.NPU; torch: ProfilerActivity.CUDA)"
        )
    what = f"rank folders with {', '.join(held)} only" if held else "summaries only"
    return (
        f"no device work ({what}: no trace_view.json, kernel_details.csv or profiler db tasks;"
        " cluster summaries and topology files describe rank folders): ingest it with its"
        " rank folders"
    )


def _in_memory_bytes(frames: RankFrames) -> int:
    """Bytes a rank's tables hold in memory (a streamed table is a LazyFrame on disk: 0)."""
    return sum(t.estimated_size() for t in frames.tables.values() if isinstance(t, pl.DataFrame))


class ReaderMissing(Exception):
    """The reader module for an input kind is not installed in this tree."""


@dataclass(frozen=True)
class FileDigest:
    """One input file of a run: resolved path, size and sha256 of its bytes."""

    path: str
    bytes: int
    sha256: str


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def file_digests(files: list[Path]) -> list[FileDigest]:
    """The digest of every file, in the given (sorted) order. OSError (unreadable, vanished)
    propagates with the file's name."""
    out = []
    for path in files:
        size = 0
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
        out.append(FileDigest(stored_path(path), size, digest.hexdigest()))
    return out


def combined_hash(digests: list[FileDigest]) -> str:
    """sha256 over the per-file sha256 digests, in order (of nothing for an empty list)."""
    digest = hashlib.sha256()
    for item in digests:
        digest.update(item.sha256.encode())
    return digest.hexdigest()


def content_hash(files: list[Path]) -> str:
    """The content hash of a run's files (see `combined_hash`)."""
    return combined_hash(file_digests(files))


def _reader(module: str, function: str) -> Callable[..., Any]:
    try:
        mod = importlib.import_module(f"pipelines.ingest.readers.{module}")
    except ModuleNotFoundError as exc:
        raise ReaderMissing(f"pipelines.ingest.readers.{module} is not available") from exc
    func = getattr(mod, function, None)
    if func is None:
        raise ReaderMissing(f"pipelines.ingest.readers.{module}.{function} is not available")
    return func


def _with_ids(frame: pl.DataFrame, table: str, run_id: str, rank: int) -> pl.DataFrame:
    keep = [c for c in _known(frame, table) if c not in ("run_id", "rank")]
    return frame.select(keep).with_columns(
        pl.lit(run_id, pl.String).alias("run_id"), pl.lit(rank, pl.Int32).alias("rank")
    )


def _known(frame: pl.DataFrame | pl.LazyFrame, table: str) -> list[str]:
    return [c for c in frame.collect_schema().names() if c in SCHEMAS[table]]


def _lazy_if_any(frames: list[Any], frame: Any) -> Any:
    """A streamed trace's slices are a LazyFrame over its spill: a table with one is lazy."""
    lazy = any(isinstance(f, pl.LazyFrame) for f in frames)
    return frame.lazy() if lazy and isinstance(frame, pl.DataFrame) else frame


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def apply_tags(row: dict[str, Any], tags: dict[str, str]) -> dict[str, Any]:
    """A `runs` row with `tags` stored and the run facts they name set from them."""
    out = dict(row)
    for key, value in tags.items():
        if key in RUN_TEXT_KEYS:
            out[key] = None if value is None else str(value)
        elif key in RUN_INT_KEYS:
            out[key] = _int(value)
    out["tags"] = json.dumps(tags, sort_keys=True) if tags else None
    return out


def _rank_groups(rank: int, info: dict[str, Any]) -> list[dict[str, Any]]:
    groups = []
    for group in info.get("groups") or []:
        ranks = [int(r) for r in group.get("ranks") or []]
        if rank in ranks:
            groups.append({"name": group.get("name"), "ranks": ranks, "hash": group.get("hash")})
    return sorted(groups, key=lambda g: (str(g["name"]), g["ranks"]))


def _pp_stage(rank: int, groups: list[dict[str, Any]]) -> int | None:
    for group in groups:
        if group["name"] == "pp" and rank in group["ranks"]:
            return group["ranks"].index(rank)
    return None


def _merge_ranks(own: pl.DataFrame, summaries: list[pl.DataFrame], run_id: str) -> pl.DataFrame:
    """Rank rows from the rank readers, completed (pp_stage, groups) and extended (ranks only a
    cluster summary or topology file knows) by the summary readers' rank rows."""
    if not summaries:
        return own
    extra = (
        pl.concat(
            [f.select([c for c in f.columns if c in SCHEMAS["ranks"]]) for f in summaries],
            how="diagonal_relaxed",
        )
        .unique("rank", keep="first", maintain_order=True)
        .with_columns(pl.lit(run_id).alias("run_id"))
    )
    extra = pl.concat([pl.DataFrame(schema=SCHEMAS["ranks"]), extra], how="diagonal_relaxed")
    merged = own.join(
        extra.select("rank", "pp_stage", "groups"), on="rank", how="left", suffix="_summary"
    ).select(
        "run_id",
        "rank",
        "device_id",
        pl.coalesce("pp_stage", "pp_stage_summary").alias("pp_stage"),
        pl.coalesce("groups", "groups_summary").alias("groups"),
        "source_path",
    )
    missing = extra.filter(~pl.col("rank").is_in(own["rank"].to_list())).select(own.columns)
    return pl.concat([merged.cast(SCHEMAS["ranks"]), missing.cast(SCHEMAS["ranks"])]).sort("rank")


def _guarded(
    path: Path,
    reader: Callable[[Path], Any],
    quarantined: list[Quarantined],
    blame: Path | None = None,
) -> Any:
    """reader(path), or None with the failure added to `quarantined`."""
    try:
        return reader(path)
    except QuarantineError as exc:
        quarantined.append(exc.quarantined(blame or path))
    except Exception as exc:  # a reader bug must not stop the other inputs
        stop.raise_if_requested()  # a stop DuckDB surfaced as an error is no file's fault
        quarantined.append(
            Quarantined(stored_path(path), "read_error", f"{type(exc).__name__}: {exc}"[:300])
        )
    return None


class RunAssembler:
    """Collects the ranks of one run and produces its RunFrames."""

    def __init__(
        self,
        run: RunInput,
        tags: dict[str, str] | None = None,
        digests: list[FileDigest] | None = None,
    ) -> None:
        self.run = run
        self.tags = dict(tags or {})
        # hashing streams every input file once more: unless the caller hashed first, it runs
        # on a thread beside the readers (hashlib and file reads release the GIL), resolved
        # when the run id is first needed
        if digests is not None:
            self._digests: Future[list[FileDigest]] = Future()
            self._digests.set_result(digests)
        else:
            self._digests = _HASHER.submit(file_digests, list(run.files))
        self.rank_frames: list[RankFrames] = []
        self.extra_tables: dict[str, list[pl.DataFrame]] = {}
        self.quarantined: list[Quarantined] = []
        self.skipped: list[tuple[str, str]] = []
        self.facts: dict[str, Any] = {}
        self._run_id: str | None = None

    @property
    def digests(self) -> list[FileDigest]:
        """Size and sha256 of every input file."""
        return self._digests.result()

    @property
    def hash(self) -> str:
        """Content hash of the run's input files (see `combined_hash`)."""
        return combined_hash(self.digests)

    @property
    def run_id(self) -> str:
        """The run's id (pipelines.ingest.run_ids), fixed the first time it is asked for: after
        `read()`, when a Kineto or cluster run's facts are known."""
        if self._run_id is None:
            self._run_id = run_id_for(self.run, self.hash, self._reader_facts())
        return self._run_id

    def _reader_facts(self) -> dict[str, Any]:
        """model, schedule, seq_len and the collection time the readers found (run_ids uses them
        for runs without rank folders)."""
        facts: dict[str, Any] = {}
        times = []
        for frames in self.rank_frames:
            for key, value in (frames.info.get("conventions") or {}).items():
                facts.setdefault(key, value)
            if isinstance(frames.info.get("collected_at"), datetime):
                times.append(frames.info["collected_at"])
        for key, value in self.facts.items():
            facts.setdefault(key, value)
        if times:
            facts["collected_at"] = min(times)
        return facts

    def _call(self, path: Path, reader: Callable[[Path], Any], blame: Path | None = None) -> Any:
        return _guarded(path, reader, self.quarantined, blame)

    def read(self) -> None:
        """Run every reader this run needs. Read one after another, each rank gets the budget
        its predecessors' frames left (pipelines.memory_budget.hold): the budget is per run."""

        memory_budget.release_held()
        if self._ranks_side_by_side():
            for result in list(_RANK_READERS.map(self._read_rank, self.run.ranks)):
                self._keep(*result)
        else:
            start = memory_budget.resident_bytes()
            for rank in self.run.ranks:
                frames, quarantined, skipped = self._read_rank(rank)
                self._keep(frames, quarantined, skipped)
                if isinstance(frames, RankFrames):
                    memory_budget.hold(_in_memory_bytes(frames))
                    # the frames' estimated sizes missed half of it (4 ranks of 150 MB at
                    # 700 MB: 77 MB held a rank, +180 MB resident a rank; docs/bench_ingest.md
                    # "A late rank's streamed read"): the process's growth counts
                    now = memory_budget.resident_bytes()
                    if start is not None and now is not None:
                        memory_budget.hold_at_least(now - start)
        for path in self.run.kineto_files:
            self._read_with(path, "kineto", "read_trace")
        for folder in self.run.cluster_dirs:
            self._read_summary(folder, "cluster", "read_cluster")
        if self.run.topology_files:
            self._read_summary(list(self.run.topology_files), "topology", "read_topology")

    def _ranks_side_by_side(self) -> bool:
        if len(self.run.ranks) < 2 or RANK_READ_WORKERS < 2:
            return False

        try:
            size = sum(p.stat().st_size for rank in self.run.ranks for p in rank.files)
        except OSError:
            return False  # the serial path reports the unreadable file
        return size <= memory_budget.max_memory() // PARALLEL_RANKS_MAX_SHARE

    def _read_rank(
        self, rank: RankInput
    ) -> tuple[RankFrames | None, list[Quarantined], list[tuple[str, str]]]:
        """Read one rank folder without touching this assembler (safe on a worker thread):
        (RankFrames or None, inputs set aside, inputs skipped)."""
        module = "ascend_text" if rank.reader == "ascend_text" else "ascend_db"
        # a db rank's failure is its .db file's (the reader reports the folder)
        blame = next((p for p in rank.files if p.suffix == ".db"), None)
        try:
            reader = _reader(module, "read_rank")
        except ReaderMissing as exc:
            return None, [], [(str(rank.path), str(exc))]
        quarantined: list[Quarantined] = []
        frames = _guarded(rank.path, reader, quarantined, blame if module == "ascend_db" else None)
        return frames, quarantined, []

    def _keep(
        self,
        frames: RankFrames | None,
        quarantined: list[Quarantined],
        skipped: list[tuple[str, str]],
    ) -> None:
        self.quarantined.extend(quarantined)
        self.skipped.extend(skipped)
        if isinstance(frames, RankFrames):
            self.quarantined.extend(frames.quarantined)
            self.rank_frames.append(frames)

    def _read_with(self, path: Path, module: str, function: str, blame: Path | None = None) -> None:
        try:
            reader = _reader(module, function)
        except ReaderMissing as exc:
            self.skipped.append((str(path), str(exc)))
            return
        self._keep(self._call(path, reader, blame), [], [])

    def _read_summary(
        self, source: Path | list[Path], module: str, function: str, **options: Any
    ) -> None:
        """Cluster summaries and topology files: run facts, rank stages, extra rows."""
        where = source if isinstance(source, Path) else source[0].parent
        try:
            reader = _reader(module, function)
        except ReaderMissing as exc:
            self.skipped.append((str(where), str(exc)))
            return
        result = self._call(where, lambda _: reader(source, **options))
        if result is None:
            return
        self.quarantined.extend(getattr(result, "quarantined", []) or [])
        tables = getattr(result, "tables", None) or {}
        for table, frame in tables.items():
            if table in SCHEMAS and table != "runs" and frame is not None and frame.height:
                self.extra_tables.setdefault(table, []).append(frame)
        run_row = getattr(result, "run", None) or {}
        for key, value in run_row.items():
            if value is not None and key not in ("run_id", "source", "origin", "content_hash"):
                self.facts.setdefault(key, value)

    def _resolve_ranks(self) -> list[tuple[int, RankFrames]]:
        placed: dict[int, RankFrames] = {}
        lone = len(self.rank_frames) == 1
        for frames in self.rank_frames:
            rank = frames.rank if frames.rank is not None else (0 if lone else None)
            where = frames.source_path or self.run.origin
            if rank is None:
                self.quarantined.append(
                    Quarantined(str(where), "unknown_rank", "rank could not be determined")
                )
            elif rank in placed:
                self.quarantined.append(
                    Quarantined(str(where), "duplicate_rank", f"rank {rank} appears twice")
                )
            else:
                placed[rank] = frames
        return sorted(placed.items())

    def frames(self) -> RunFrames | None:
        """The run's canonical frames, or None when no reader produced anything or no input
        holds device work (cluster summaries or topology files alone: quarantined
        `no_device_events`, never a run stored without device time)."""
        ranks = self._resolve_ranks()
        device_input = any(_has_device_input(f) for _, f in ranks)
        if not device_input and not self.run.kineto_files and (ranks or self.extra_tables):
            # profiler summaries alone (step_trace_time.csv, communication.json, analysis.db,
            # cluster summaries, topology files): never a run stored without device work
            self.quarantined.append(
                Quarantined(str(self.run.origin), NO_DEVICE_EVENTS, _no_device_detail(ranks))
            )
            return None
        has_rows = any(f.tables or f.info for _, f in ranks) or any(self.extra_tables.values())
        if not has_rows:
            return None
        tables: dict[str, list[pl.DataFrame]] = {t: [] for t in RANK_TABLES}
        rank_rows = []
        for rank, frames in ranks:
            for table in RANK_TABLES:
                frame = frames.tables.get(table)
                if frame is not None and (isinstance(frame, pl.LazyFrame) or frame.height):
                    tables[table].append(_with_ids(frame, table, self.run_id, rank))
            groups = _rank_groups(rank, frames.info)
            rank_rows.append(
                {
                    "run_id": self.run_id,
                    "rank": rank,
                    "device_id": frames.device_id,
                    "pp_stage": _pp_stage(rank, groups),
                    "groups": json.dumps(groups) if groups else None,
                    "source_path": stored_path(frames.source_path) if frames.source_path else None,
                }
            )
        summary_ranks = self.extra_tables.pop("ranks", [])
        read_ranks = [rank for rank, _ in ranks]
        for table, extra in self.extra_tables.items():
            tables.setdefault(table, [])
            for frame in extra:
                if table == "comm_ops":
                    # a cluster summary's comm ops (µs-float times) only for ranks that have no
                    # rank folder here: a rank's own export is exact
                    frame = frame.filter(~pl.col("rank").is_in(read_ranks))
                tables[table].append(frame.with_columns(pl.lit(self.run_id).alias("run_id")))
        out = {
            table: pl.concat(
                [_lazy_if_any(frames, f.select(_known(f, table))) for f in frames],
                how="diagonal_relaxed",
            )
            for table, frames in tables.items()
            if frames
        }
        if "step_breakdown" in out:
            # derived rows of ranks the rank folder gave no profiler figures for: judged against
            # the cluster summary's rows of the same rank and step
            out["step_breakdown"] = assess(out["step_breakdown"], reference="cluster")
        out_ranks = _merge_ranks(
            pl.DataFrame(rank_rows, schema=SCHEMAS["ranks"]), summary_ranks, self.run_id
        )
        if out_ranks.height:
            out["ranks"] = out_ranks
        return RunFrames(run=self._run_row([f for _, f in ranks]), tables=out, quarantined=[])

    def _run_row(self, ranks: list[RankFrames]) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        software: dict[str, str] = {}
        collected = []
        for frames in ranks:
            info = frames.info
            for key, value in (info.get("conventions") or {}).items():
                merged.setdefault(key, value)
            args = info.get("distributed_args") or {}
            for key, arg in DISTRIBUTED_KEYS.items():
                if args.get(arg) is not None:
                    merged.setdefault(f"_dist_{key}", args[arg])
            if info.get("hardware"):
                merged.setdefault("hardware", info["hardware"])
            software.update({str(k): str(v) for k, v in (info.get("software") or {}).items()})
            if isinstance(info.get("collected_at"), datetime):
                collected.append(info["collected_at"])
        for key in DISTRIBUTED_KEYS:
            if f"_dist_{key}" in merged:
                merged.setdefault(key, merged.pop(f"_dist_{key}"))
        for key, value in self.facts.items():
            merged.setdefault(key, value)
        merged.update(self.tags)
        row: dict[str, Any] = {
            "run_id": self.run_id,
            "source": self.run.source,
            "origin": stored_path(self.run.origin),
            "content_hash": self.hash,
            "software": json.dumps(software, sort_keys=True) if software else None,
            "collected_at": min(collected) if collected else self.facts.get("collected_at"),
            "tags": json.dumps(self.tags, sort_keys=True) if self.tags else None,
            "ingested_at": datetime.now(UTC).replace(tzinfo=None),
        }
        for key in RUN_TEXT_KEYS:
            row[key] = None if merged.get(key) is None else str(merged[key])
        for key in RUN_INT_KEYS:
            row[key] = _int(merged.get(key))
        dropped = merged_counts(*(frames.dropped for frames in ranks))
        row["dropped_rows"] = json.dumps(dropped, sort_keys=True) if dropped else None
        return row


def assemble_run(
    run: RunInput,
    tags: dict[str, str] | None = None,
    digests: list[FileDigest] | None = None,
) -> tuple[RunFrames | None, list[Quarantined], list[tuple[str, str]]]:
    """Read one run: (its frames or None, inputs set aside, inputs skipped for want of a reader).
    The frames carry a `run_inputs` table (one row per input file with its sha256)."""
    assembler = RunAssembler(run, tags, digests)
    assembler.read()
    frames = assembler.frames()
    if frames is not None:
        frames.tables["run_inputs"] = pl.DataFrame(
            {
                "run_id": [frames.run_id] * len(assembler.digests),
                "path": [d.path for d in assembler.digests],
                "bytes": [d.bytes for d in assembler.digests],
                "sha256": [d.sha256 for d in assembler.digests],
            },
            schema=SCHEMAS["run_inputs"],
        )
    return frames, assembler.quarantined, assembler.skipped
