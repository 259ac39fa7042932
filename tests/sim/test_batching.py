"""Several requests per scheduler step, the length mix, TTFT percentiles, the DCPP online switch
and the best-budget sweep (issue 13 items 6 and 7)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from pipelines.sim.batching import length_mix, pack_dcpp_steps, pack_steps
from pipelines.sim.chunking import DcppConfig, dynamic_chunks, profile
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate


def test_eight_4k_prompts_take_two_16k_steps() -> None:
    steps = pack_steps([4096] * 8, 16384)
    assert [[p[0] for p in s] for s in steps] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert pack_steps([4096] * 8, 16384, max_running=2) == [
        [(2 * k, 4096, 0), (2 * k + 1, 4096, 0)] for k in range(4)
    ]
    # a long prompt shares its last step with the next one's first piece
    assert pack_steps([20000, 8000], 16384) == [[(0, 16384, 0)], [(0, 3616, 16384), (1, 8000, 0)]]


def test_packed_run_steps_and_ttft() -> None:
    one = simulate([4096] * 8, "cpp", chunk_size=16384)
    packed = simulate([4096] * 8, "cpp", chunk_size=16384, pack_requests=True)
    assert summarize(one)["scheduling_steps"] == 8
    s = summarize(packed)
    assert s["scheduling_steps"] == 2
    ttft = packed.requests["ttft_ns"].to_list()
    assert len(set(ttft[:4])) == 1 and len(set(ttft[4:])) == 1 and ttft[4] > ttft[0]
    assert s["ttft_p50_ns"] == pytest.approx(np.percentile(ttft, 50))
    assert s["ttft_p90_ns"] == pytest.approx(np.percentile(ttft, 90))
    assert s["ttft_p99_ns"] == pytest.approx(np.percentile(ttft, 99))
    # a packed step costs less than its requests run one step each (one fixed cost per call)
    c0 = packed.tasks.filter((pl.col("kind") == "compute") & (pl.col("rank") == 0))
    c1 = one.tasks.filter((pl.col("kind") == "compute") & (pl.col("rank") == 0))
    d0 = int((c0["end_ns"] - c0["start_ns"]).sum())
    d1 = int((c1["end_ns"] - c1["start_ns"]).sum())
    assert d0 < d1
    with pytest.raises(ValueError, match="drain windows"):
        simulate([4096] * 8, "vpp_pack", chunk_size=16384, pack_requests=True)


def test_a_packed_step_waits_only_for_the_requests_it_carries() -> None:
    """Host set-up of 1 us per token: request i is set up at (i + 1) x 4.096 ms. With an 8K
    budget step k carries requests 2k and 2k + 1, so it may start at 8.192 (k + 1) ms; before
    this rule the first step waited for all eight (32.768 ms)."""
    run = simulate([4096] * 8, "cpp", chunk_size=8192, pack_requests=True, host_ns_per_token=1000.0)
    first = run.tasks.filter((pl.col("kind") == "compute") & (pl.col("vstage") == 0))
    starts = first.sort("chunk_idx")["start_ns"].to_list()
    assert starts[0] == 2 * 4096 * 1000
    assert all(s >= 2 * 4096 * 1000 * (k + 1) for k, s in enumerate(starts))


def _quadratic_stage0(tokens: np.ndarray, prefix: np.ndarray) -> np.ndarray:
    """A stage-0 latency whose profiled fit is exactly f(l) = 2e-3 l^2 + 40 l + 5e5 ns."""
    length = np.asarray(tokens, dtype=float) + np.asarray(prefix, dtype=float)
    return 2e-3 * length**2 + 40.0 * length + 5e5


@pytest.mark.parametrize("rule", ["vllm_ascend", "sglang"])
def test_packed_dcpp_steps_share_the_step_time_budget(rule: str) -> None:
    cfg = DcppConfig(rule=rule)
    fit = profile(_quadratic_stage0, rule, 16384)
    # one request: the packed steps are dynamic_chunks' chunks
    alone = pack_dcpp_steps([131072], 16384, fit, cfg)
    assert [p[1] for (p,) in alone] == dynamic_chunks(131072, 16384, _quadratic_stage0, cfg)
    assert len(alone) > 131072 // 16384  # late chunks shrink
    # first chunks are not predicted: eight 4K prompts fill 16K steps, 2 steps
    assert [len(s) for s in pack_dcpp_steps([4096] * 8, 16384, fit, cfg)] == [4, 4]
    # a late chunk that spends the step's time leaves nothing to the next request, though
    # tokens are left (the fixed-budget rule would hand them out)
    two = pack_dcpp_steps([131072, 131072], 16384, fit, cfg)
    late = two[1]
    assert [p[0] for p in late] == [0] and late[0][1] < 16384
    assert pack_steps([131072, 131072], 16384)[1] == [(0, 16384, 16384)]
    # a short remainder leaves time: the next request's first piece rides in the same step
    tail = pack_dcpp_steps([20000, 8000], 16384, fit, cfg)
    assert tail[1] == [(0, 3616, 16384), (1, 8000, 0)]
    assert sum(p[1] for s in two for p in s if p[0] == 1) == 131072


def test_packed_dcpp_run() -> None:
    one = summarize(simulate([262144], "dcpp", chunk_size=16384))
    packed = summarize(simulate([262144], "dcpp", chunk_size=16384, pack_requests=True))
    # 56 steps since the table 2 calibration (issue 34): was 53 with the earlier GEMM figures
    assert packed["scheduling_steps"] == one["scheduling_steps"] == 56
    assert packed["makespan_ns"] == pytest.approx(one["makespan_ns"], rel=1e-9)
    mix = summarize(simulate([4096] * 8, "dcpp", chunk_size=16384, pack_requests=True))
    assert mix["scheduling_steps"] == 2


def test_length_mix_is_gsm8k_like_and_seeded() -> None:
    mix = length_mix(2000, seed=3)
    lengths = mix["prompt_tokens"].to_numpy()
    assert lengths.min() >= 256 and lengths.max() <= 4096
    assert 950 <= np.median(lengths) <= 1100
    assert mix.equals(length_mix(2000, seed=3)) and not mix.equals(length_mix(2000, seed=4))


def test_cli_mix_packed_best_budget_and_dcpp_online(capsys) -> None:
    from pipelines.cli import main

    code = main(["simulate", "--schedule", "cpp", "--length-mix", "32", "--pack-requests",
                 "--max-running", "8", "--best-budget", "--json"])  # fmt: skip
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    sweep = report["budget_sweep"]
    assert [r["chunk_size"] for r in sweep] == [8192, 16384, 24576, 32768]
    best = min(sweep, key=lambda r: (r["makespan_ns"], r["chunk_size"]))
    assert best["best"] and report["chunk_size"] == best["chunk_size"]
    assert report["makespan_ns"] == best["makespan_ns"]
    assert report["requests"] == 32 and report["ttft_p99_ns"] >= report["ttft_p90_ns"]
    for flag, online in (("on", True), ("off", False)):
        code = main(["simulate", "--schedule", "dcpp", "--seq-len", "262144", "--chunk", "16384",
                     "--dcpp-online", flag, "--json"])  # fmt: skip
        assert code == 0
        assert json.loads(capsys.readouterr().out)["dcpp_online"] is online


@pytest.mark.parametrize("detail", ["tasks", "layers"])
def test_packed_steps_segment_into_every_requests_chunk(tmp_path, detail) -> None:
    """A packed step's pieces each get their own chunk marker: ingested and segmented, every
    request of a packed run has its chunks (tokens summing to its prompt), and the pieces of a
    step tile the step's compute exactly."""
    prompts = [4096, 16384, 6144, 2048]
    result = simulate(prompts, "cpp", model="llama3-8b", chunk_size=16384, pp=2, pack_requests=True)
    steps = result.meta["request_steps"]
    # request 1 spans both steps: its chunk 1 has the 12K prefix of its chunk 0
    assert steps == [[[0, 4096, 0], [1, 12288, 0]], [[1, 4096, 12288], [2, 6144, 0], [3, 2048, 0]]]
    chunks = _written_and_segmented(result, tmp_path, detail)
    ids = result.requests["request_id"].to_list()
    for rank in (0, 1):
        mine = chunks.filter(pl.col("rank") == rank)
        tokens = dict(mine.group_by("request_id").agg(pl.col("tokens").sum()).iter_rows())
        assert tokens == dict(zip(ids, prompts, strict=True))
        second = mine.filter(pl.col("request_id") == ids[1]).sort("chunk_idx")
        assert second.select("chunk_idx", "prefix_tokens").rows() == [(0, 0), (1, 12288)]
        step_busy = (
            result.tasks.filter(
                (pl.col("rank") == rank) & (pl.col("kind") == "compute")
            ).get_column("end_ns")
            - result.tasks.filter(
                (pl.col("rank") == rank) & (pl.col("kind") == "compute")
            ).get_column("start_ns")
        ).sum()
        assert mine["busy_ns"].sum() == step_busy


def test_packed_dcpp_steps_segment_into_every_requests_chunk(tmp_path) -> None:
    """A packed DCPP run (a long prompt's shrinking chunks, then short prompts sharing its last
    step) written as torch_npu folders segments into every request's chunks."""
    prompts = [65536, 4096, 2048]
    result = simulate(prompts, "dcpp", model="llama3-8b", chunk_size=16384, pack_requests=True)
    steps = result.meta["request_steps"]
    assert len(steps) > 65536 // 16384 and any(len(step) > 1 for step in steps)
    chunks = _written_and_segmented(result, tmp_path, "tasks")
    ids = result.requests["request_id"].to_list()
    for rank in (0, 1):
        mine = chunks.filter(pl.col("rank") == rank)
        tokens = dict(mine.group_by("request_id").agg(pl.col("tokens").sum()).iter_rows())
        assert tokens == dict(zip(ids, prompts, strict=True))


def _written_and_segmented(result, tmp_path, detail: str) -> pl.DataFrame:
    """The run written as torch_npu folders, read back and segmented; no device time may be left
    unassigned."""
    from pipelines.analysis.chunks.segment import segment_chunks
    from pipelines.ingest.readers.ascend_text import read_rank
    from pipelines.sim.writers_ascend import write_ascend_pt

    slices = []
    for folder in write_ascend_pt(result, tmp_path / "raw", detail=detail):
        frames = read_rank(folder)
        slices.append(
            frames.tables["slices"].with_columns(
                pl.lit(frames.rank, pl.Int32).alias("rank"), pl.lit("p").alias("run_id")
            )
        )
    chunks, unassigned = segment_chunks(pl.concat(slices, how="vertical_relaxed"), "p")
    assert unassigned["unassigned_ns"].sum() == 0
    return chunks
