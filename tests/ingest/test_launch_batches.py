"""Launch attribution of a streamed read, its launch rows read from the spill a batch at a time
(`ascend_launch.launch_device_work` over a LazyFrame), gives the device work, anchors and comm
ops of the same rows attributed in memory, row for row and in the same order: on the real text
exports and on traces made of a real Level1 export's events with flow ids renumbered per copy
and repeated in every copy (one id then links host slices of many batches)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines import memory_budget
from pipelines.bench.generate import generate_rank
from pipelines.ingest.readers.trace_view import read_trace_view
from pipelines.ingest.steps import ascend_launch
from pipelines.ingest.steps.ascend_launch import launch_device_work

pytestmark = pytest.mark.real

TRACE = "ASCEND_PROFILER_OUTPUT/trace_view.json"
LEVEL1 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
REAL_RANKS = (
    "msinsight/test/data/pytorch/text/level0/rank0_ascend_pt",
    "msinsight/test/data/pytorch/text/level0/rank1_ascend_pt",
    LEVEL1,
    "msinsight/test/data/pytorch/text/level1/rank1_ascend_pt",
)
BATCH = 500  # rows: every trace below spans several batches


def _launch_rows(trace: Path) -> pl.LazyFrame:
    view = read_trace_view(trace, max_memory=1)  # one byte: the streamed read
    assert isinstance(view.launch, pl.LazyFrame)
    return view.launch


def _generated(real_dir: Path, tmp_path: Path, repeat_ids: bool) -> Path:
    made = generate_rank(tmp_path, 3, real_dir / LEVEL1, repeat_ids=repeat_ids, markers=True)
    return made.trace_path


def _assert_same(rows: pl.LazyFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    device, ops = launch_device_work(rows.collect())
    batched_device, batched_ops = launch_device_work(rows, batch_rows=BATCH)
    assert rows.select(pl.len()).collect().item() > 2 * BATCH
    assert device.height > 0 and device.get_column("anchor_ns").is_not_null().sum() > 0
    assert batched_device.equals(device)
    assert batched_ops.equals(ops)
    return device, ops


@pytest.mark.parametrize("rank", REAL_RANKS)
def test_batches_equal_the_rows_in_memory_on_real_exports(real_dir: Path, rank: str) -> None:
    try:
        _assert_same(_launch_rows(real_dir / rank / TRACE))
    finally:
        memory_budget.release_spills()


@pytest.mark.parametrize("repeat_ids", [False, True], ids=["renumbered", "repeated-ids"])
def test_batches_equal_the_rows_in_memory_on_copies_of_real_events(
    real_dir: Path, tmp_path: Path, repeat_ids: bool
) -> None:
    try:
        _, ops = _assert_same(_launch_rows(_generated(real_dir, tmp_path, repeat_ids)))
        assert ops.height > 0
    finally:
        memory_budget.release_spills()


def test_every_batch_link_starts_count(
    real_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check can fail: when a batch's link starts replace those of the batches before it
    (each batch attributed on its own), device work launched from host slices of another batch
    loses its anchor."""
    try:
        rows = _launch_rows(_generated(real_dir, tmp_path, repeat_ids=False))
        device, _ = launch_device_work(rows.collect())

        def last_batch_only(first, second, by=("rank",)):
            return second

        monkeypatch.setattr(ascend_launch, "combine_link_starts", last_batch_only)
        wrong, _ = launch_device_work(rows, batch_rows=BATCH)
        assert wrong.height == device.height
        lost = wrong.get_column("anchor_ns").is_null().sum()
        assert lost > device.get_column("anchor_ns").is_null().sum()
    finally:
        memory_budget.release_spills()
