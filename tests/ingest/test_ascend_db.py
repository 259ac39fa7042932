"""The SQLite-export reader on set C (torch_npu db, 2 ranks) against set B1 (text export of the
same kind of job) and analysis.db; plus corrupt and incomplete dbs."""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.frames import SCHEMAS, conform
from pipelines.ingest.readers.ascend_db import read_rank
from pipelines.ingest.readers.hccl import strip_group_digits
from pipelines.ingest.readers.kernel_details import read_kernel_details

pytestmark = pytest.mark.real

DB_SET = "msinsight/test/data/pytorch/db/level1"
TEXT_SET = "msinsight/test/data/pytorch/text/level1"
BREAKDOWN_COLUMNS = [c for c in SCHEMAS["step_breakdown"] if c.endswith("_ns")]


@pytest.fixture(scope="module")
def db_ranks(real_dir: Path):
    return {r: read_rank(real_dir / DB_SET / f"rank{r}_ascend_pt") for r in (0, 1)}


def _text_kernels(real_dir: Path, rank: int) -> pl.DataFrame:
    """The text export's kernels, read by the text path's own reader."""
    path = real_dir / TEXT_SET / f"rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    return read_kernel_details(path).kernels


@pytest.mark.parametrize("rank", [0, 1])
def test_db_kernels_match_the_text_export(db_ranks, real_dir: Path, rank: int) -> None:
    kernels = db_ranks[rank].tables["kernels"]
    text = _text_kernels(real_dir, rank)
    assert kernels.height == text.height == 191

    # the two exports come from two runs with different communicators: HCCL op names differ only
    # in the group-hash digits (hcom_allReduce__210_0_1 vs __586_0_1)
    def names(frame: pl.DataFrame) -> Counter:
        return Counter(strip_group_digits(n) for n in frame.get_column("name"))

    assert names(kernels) == names(text)
    for column in ("core", "type", "is_comm"):
        assert Counter(kernels.get_column(column)) == Counter(text.get_column(column)), column
    assert kernels.filter(pl.col("is_comm")).height == 4
    assert kernels.get_column("step").unique().to_list() == [50]


@pytest.mark.parametrize("rank", [0, 1])
def test_derived_breakdown_reproduces_analysis_db(db_ranks, rank: int) -> None:
    breakdown = db_ranks[rank].tables["step_breakdown"]
    derived = breakdown.filter(pl.col("origin") == "derived")
    profiler = breakdown.filter(pl.col("origin") == "profiler")
    assert derived.height == profiler.height == 1
    assert derived.get_column("step").item() == profiler.get_column("step").item() == 50
    for column in BREAKDOWN_COLUMNS:
        if column == "p2p_bubble_ns":
            continue
        assert derived.get_column(column).item() == profiler.get_column(column).item(), column
    # the lanes add up to the device window of the step
    row = derived.row(0, named=True)
    assert row["computing_ns"] + row["comm_not_overlapped_ns"] + row["free_ns"] == row["stage_ns"]


def test_identity_metadata_and_comm_ops(db_ranks) -> None:
    for rank, frames in db_ranks.items():
        assert frames.rank == rank and frames.device_id == rank
        assert frames.info["hardware"] == "Ascend910B"
        assert frames.source_path.endswith(f"ascend_pytorch_profiler_{rank}.db")
        ops = frames.tables["comm_ops"]
        assert ops.height == 4
        # group hash = double_hash(raw communicator id) = analysis.db CommAnalyzer group_name
        assert ops.get_column("group_name").unique().to_list() == ["17148521525495523210"]
        assert ops.get_column("op_type").unique().to_list() == ["allReduce"]
        assert not ops.get_column("is_p2p").any()
        # hcom_allReduce__210_0_1: 4,097,000 FP32 elements; wait time joined from analysis.db
        first = ops.sort("start_ns").row(0, named=True)
        assert first["bytes"] == 4_097_000 * 4
        assert first["wait_ns"] is not None and 0 < first["wait_ns"] < first["dur_ns"]
    conform("comm_ops", db_ranks[0].tables["comm_ops"])


def test_slices_fill_every_lane_and_overlap_matches_breakdown(db_ranks) -> None:
    frames = db_ranks[0]
    slices = conform("slices", frames.tables["slices"])
    assert set(slices.get_column("lane")) == {"compute", "comm", "host", "overlap"}
    assert slices.filter(pl.col("name") == "ProfilerStep#50").height == 1
    derived = (
        frames.tables["step_breakdown"].filter(pl.col("origin") == "derived").row(0, named=True)
    )
    lanes = dict(
        slices.filter((pl.col("lane") == "overlap") & (pl.col("step") == 50))
        .group_by("thread")
        .agg(pl.col("dur_ns").sum())
        .iter_rows()
    )
    assert lanes["Computing"] == derived["computing_ns"]
    assert lanes["Communication"] == derived["communication_ns"]
    assert lanes["Communication(Not Overlapped)"] == derived["comm_not_overlapped_ns"]
    assert lanes["Free"] == derived["free_ns"]
    # device tasks link to their host launch by connection_id, as trace_view flows do
    link = pl.col("args").str.json_path_match("$.connection_id")
    device = slices.filter(pl.col("lane") == "compute").select(link.alias("c")).drop_nulls()
    launches = slices.filter(pl.col("thread") == "CANN").select(link.alias("c")).drop_nulls()
    assert device.height == 256
    assert device.join(launches.unique(), on="c").height >= 250


# --- malformed inputs ---------------------------------------------------------------------------


def _rank_dir(tmp_path: Path) -> Path:
    out = tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    return out


def _reason(rank_dir: Path) -> str:
    with pytest.raises(QuarantineError) as err:
        read_rank(rank_dir)
    return err.value.reason


def test_not_a_database_is_corrupt(tmp_path: Path) -> None:
    out = _rank_dir(tmp_path)
    (out / "ascend_pytorch_profiler_0.db").write_bytes(b"this is not sqlite\n" * 300)
    assert _reason(out.parent) == "corrupt_db"


def test_truncated_database_is_corrupt(tmp_path: Path, real_dir: Path) -> None:
    source = (
        real_dir / DB_SET / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db"
    )
    out = _rank_dir(tmp_path)
    (out / "ascend_pytorch_profiler_0.db").write_bytes(source.read_bytes()[:200_000])
    assert _reason(out.parent) == "corrupt_db"


def test_empty_and_missing_db(tmp_path: Path) -> None:
    out = _rank_dir(tmp_path)
    assert _reason(out.parent) == "missing_file"
    (out / "ascend_pytorch_profiler_0.db").write_bytes(b"")
    assert _reason(out.parent) == "empty_file"


def test_db_missing_tables(tmp_path: Path) -> None:
    out = _rank_dir(tmp_path)
    with sqlite3.connect(out / "ascend_pytorch_profiler_0.db") as con:
        con.execute("create table STRING_IDS (id integer primary key, value text)")
    with pytest.raises(QuarantineError) as err:
        read_rank(out.parent)
    assert err.value.reason == "missing_tables"
    assert "TASK" in err.value.detail and "COMPUTE_TASK_INFO" in err.value.detail


def test_db_without_optional_tables_still_reads(tmp_path: Path, real_dir: Path) -> None:
    """A db lacking COMMUNICATION_OP, PYTORCH_API, STEP_TIME (single card, NPU-only activity)."""
    source = (
        real_dir / DB_SET / "rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db"
    )
    out = _rank_dir(tmp_path)
    target = out / "ascend_pytorch_profiler_1.db"
    shutil.copyfile(source, target)
    with sqlite3.connect(target) as con:
        for table in ("COMMUNICATION_OP", "COMMUNICATION_TASK_INFO", "PYTORCH_API", "STEP_TIME"):
            con.execute(f"drop table {table}")
    frames = read_rank(out.parent)
    assert frames.rank == 1
    assert frames.tables["kernels"].height == 187
    assert frames.tables["comm_ops"].height == 0
    derived = frames.tables["step_breakdown"].filter(pl.col("origin") == "derived")
    assert derived.height == 1 and derived.get_column("step").item() is None
    assert derived.get_column("communication_ns").item() == 0
