"""A latency table read a block at a time (issue 36 deliver 6, docs/bench_ingest.md "Latency
tables in blocks"): a table larger than one block is checked block by block and, streamed, kept
in a Parquet spill with its replicates numbered over the whole table. The blocks here are forced
small (a small budget or `block_bytes`), and every result must equal the read of the whole table
in memory: the same points, replicates, lines set aside and rows left out."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from pipelines import memory_budget
from pipelines.ingest.load import ingest_paths
from pipelines.ingest.readers.latency_tables import read_table
from pipelines.store import open_store

DATA = Path(__file__).resolve().parents[1] / "data" / "latency_tables"
SELF_MADE = DATA / "self_made" / "generic_attention.csv"
VIDUR_ATTN = DATA / "vidur" / "e2d00e9" / "data" / "profiling" / "a100" / "attention.csv"
VIDUR_MLP = DATA / "vidur" / "e2d00e9" / "data" / "profiling" / "a100" / "mlp.csv"
AIC = DATA / "aiconfigurator/095f58a/aic-core/src/aiconfigurator_core/systems/data"
AIC_MSA = AIC / "h200_sxm/msa/sglang/0.5.16/msa_context_module_perf.parquet"
SMALL_BLOCK = 1 << 14  # the smallest block a budget gives (MIN_BLOCK_BYTES)
ORDER = ["operator", "line", "replicate"]


def _hostile(path: Path, rows: int = 6_000, seed: int = 3) -> Path:
    """A generic table of three operators with bad values, replicates (some far apart, so in
    other blocks), blank lines, CRLF line ends and a quoted cell with a line break in it."""
    rng = random.Random(seed)
    lines = ["operator,model,tokens,prefix,time_us,mean_us,batch_size,tp"]
    for r in range(rows):
        op = ("attention", "mlp", "all_reduce")[r % 3]
        prefix = (r // 3) * 64 if rng.random() > 0.08 else rng.randrange(0, max(1, r // 3)) * 64
        time = f"{10 + prefix * 1e-3 + rng.random():.4f}"
        cells = [op, "toy", str((128, 256)[r % 2]), str(prefix), time, time, "1", "2"]
        bad = rng.random()
        if bad < 0.02:
            cells[4] = rng.choice(["nan", "inf", "-1", "abc", "", "1e400"])
        elif bad < 0.03:
            cells[2] = rng.choice(["0", "2.5", "x"])
        elif bad < 0.04:
            cells[6] = rng.choice(["abc", "-3"])
        elif bad < 0.045:
            cells[1] = '"toy\nmodel"'  # one row over two physical lines
        lines.append(",".join(cells))
        if rng.random() < 0.003:
            lines.append("")
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    return path


def _same(whole, blocks) -> None:
    """Two reads of one table give the same points (any row order), lines set aside, rows left
    out, count and first point."""
    assert isinstance(blocks.points, pl.LazyFrame)  # the streamed path was taken
    got = blocks.points.collect()
    assert got.schema == whole.points.schema
    assert got.sort(ORDER).equals(whole.points.sort(ORDER))
    assert blocks.count == got.height == whole.points.height
    assert blocks.quarantined == whole.quarantined
    assert blocks.left_out == whole.left_out
    assert blocks.first == whole.points.row(0, named=True)


def test_a_hostile_table_in_blocks_equals_the_whole_read(tmp_path: Path) -> None:
    path = _hostile(tmp_path / "hostile.csv")
    whole = read_table(path)
    assert whole.quarantined and whole.points["replicate"].max() > 1
    _same(whole, read_table(path, streamed=True, block_bytes=SMALL_BLOCK))
    # gathered in memory from the same small blocks: the same rows in the same order
    gathered = read_table(path, block_bytes=SMALL_BLOCK)
    assert isinstance(gathered.points, pl.DataFrame) and gathered.points.equals(whole.points)


def test_a_generic_parquet_table_in_blocks_equals_the_whole_read(tmp_path: Path) -> None:
    text = _hostile(tmp_path / "hostile.csv")
    path = tmp_path / "hostile.parquet"
    pl.read_csv(text, infer_schema=False).write_parquet(path, row_group_size=500)
    whole = read_table(path)
    assert whole.quarantined
    _same(whole, read_table(path, streamed=True, block_bytes=SMALL_BLOCK))


# the whole read of Vidur's attention.csv and the aiconfigurator table takes 10-20 s (load 14)
SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "path",
    [SELF_MADE, VIDUR_MLP, pytest.param(VIDUR_ATTN, marks=SLOW), pytest.param(AIC_MSA, marks=SLOW)],
    ids=lambda p: p.name,
)
def test_a_real_table_in_blocks_equals_the_whole_read(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"{path.name} absent (tests/data/latency_tables/*/SOURCES.md)")
    whole = read_table(path)
    if path.stat().st_size <= SMALL_BLOCK:  # one block: nothing to spill
        assert isinstance(
            read_table(path, streamed=True, block_bytes=SMALL_BLOCK).points, pl.DataFrame
        )
        return
    _same(whole, read_table(path, streamed=True, block_bytes=SMALL_BLOCK))


@pytest.mark.parametrize("backend", ["warehouse", "lake"])
def test_ingest_under_a_small_budget_stores_the_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """A 2 MB budget reads in the smallest blocks and spills the points; what is stored equals the
    whole read."""
    (tmp_path / "tables").mkdir()
    path = _hostile(tmp_path / "tables" / "hostile.csv")
    whole = read_table(path)
    monkeypatch.setenv(memory_budget.ENV_MAX_MEMORY, "2MB")
    spills: list[Path] = []
    new_spill_dir = memory_budget.new_spill_dir
    monkeypatch.setattr(
        memory_budget, "new_spill_dir", lambda: spills.append(new_spill_dir()) or spills[-1]
    )
    store = (
        open_store(tmp_path / "w.duckdb")
        if backend == "warehouse"
        else open_store(lake=tmp_path / "lake")
    )
    report = ingest_paths([path], store, progress=False)
    (table,) = report.tables
    assert table.points == whole.points.height
    assert [q.detail for q in table.quarantined] == [q.detail for q in whole.quarantined]
    with store.session(read_only=True) as session:
        stored = session.con.execute("select * from latency_points").pl()
    assert stored.sort(ORDER).equals(whole.points.sort(ORDER))
    assert spills  # the points went through a spill (a 2 MB budget holds no table whole)


def _vidur_mlp_of_four_tp(path: Path) -> Path:
    """A Vidur mlp.csv (newer layout: one file, tp 1/2/4/8, as compute/a100/Qwen/Qwen-72B's) in
    which only the first 10 token counts of tp 1 are profiled twice."""
    ops = ("attn_pre_proj", "mlp_up_proj")
    stats = [f"time_stats.{op}.{s}" for op in ops for s in ("min", "max", "mean", "median", "std")]
    lines = [",".join([*stats, "n_embd", "num_tokens", "num_tensor_parallel_workers"])]
    points = [(tp, t) for tp in (1, 2, 4, 8) for t in range(1, 201)]
    for tp, tokens in [*points, *((1, t) for t in range(1, 11))]:
        ms = f"{tokens / tp / 1000:.6f}"
        lines.append(",".join([*[ms] * 4, "0.0", *[ms] * 4, "0.0", "8192", str(tokens), str(tp)]))
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_replicate_is_the_same_point_of_the_same_tp(tmp_path: Path) -> None:
    """One file holds four tp degrees of the same shapes: the tp 2 row at 64 tokens is no
    repeat of the tp 1 row (it was stored as replicate 2, up to 8 on Qwen-72B's real file, where
    7,850 of 10,440 points were 'replicates'). Only the 10 rows profiled twice are, in memory
    and streamed alike."""
    path = _vidur_mlp_of_four_tp(tmp_path / "compute/a100/org/model/mlp.csv")
    whole = read_table(path)
    points = whole.points
    assert points.height == 2 * (4 * 200 + 10)
    assert points["replicate"].max() == 2
    again = points.filter(pl.col("replicate") == 2)
    assert again.height == 2 * 10 and set(again["tp"]) == {1}
    assert set(again["tokens"]) == set(range(1, 11))
    _same(whole, read_table(path, streamed=True, block_bytes=SMALL_BLOCK))
