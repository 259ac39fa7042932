"""The single-device scheduler reproduces seed 001's table and fills the SimResult contract."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pipelines.sim.result import REQUEST_SCHEMA, TASK_SCHEMA
from pipelines.sim.single_device import (
    DECODE_REQUEST,
    SEED_POLICIES,
    Policy,
    Workload,
    seed_metrics,
    simulate_single,
)

# Seed 001's printed table (policy -> ITL p50 ms, ITL max ms, long TTFT s, short TTFT p50/max ms)
# and the precision each column was printed with.
SEED_TABLE = {
    "no chunking (whole prompts)": (12.2, 790, 0.80, 20, 874),
    "chunked, budget 8192": (12.2, 245, 0.92, 21, 868),
    "chunked, budget 2048": (12.2, 63, 0.82, 22, 774),
    "budget 8192, cap 2048/request": (12.2, 82, 0.94, 21, 142),
    "budget 2048, interactive first": (12.2, 56, 0.95, 21, 97),
}
PRINTED_DECIMALS = (1, 0, 2, 0, 0)


def _agrees(ours: float, printed: float, decimals: int) -> bool:
    """Within 1 % of the printed value, or equal to it at the printed rounding."""
    half_unit = 0.5 * 10.0**-decimals
    return abs(ours - printed) <= max(0.01 * abs(printed), half_unit + 1e-9)


def _fmt(v: tuple[float, ...]) -> str:
    return f"{v[0]:5.1f} {v[1]:4.0f} {v[2]:5.2f} {v[3]:4.0f}/{v[4]:<4.0f}"


def test_reproduces_seed_table(capsys: pytest.CaptureFixture[str]) -> None:
    rows = []
    for policy in SEED_POLICIES:
        m = seed_metrics(simulate_single(policy))
        ours = (
            m.itl_p50_ms,
            m.itl_max_ms,
            m.long_ttft_s,
            m.short_ttft_p50_ms,
            m.short_ttft_max_ms,
        )
        rows.append((policy.name, ours, SEED_TABLE[policy.name]))
    with capsys.disabled():
        print("\npolicy                          ours: p50  max  long  short p50/max   seed: same")
        for name, ours, seed in rows:
            print(f"{name:<31} {_fmt(ours)}   {_fmt(seed)}")
    for name, ours, seed in rows:
        for col, (o, s, d) in enumerate(zip(ours, seed, PRINTED_DECIMALS, strict=True)):
            assert _agrees(o, s, d), f"{name} column {col}: ours {o} vs seed {s}"


def test_result_contract_and_step_tiling() -> None:
    run = simulate_single(SEED_POLICIES[2])
    res = run.result
    assert dict(res.tasks.schema) == TASK_SCHEMA
    assert dict(res.requests.schema) == REQUEST_SCHEMA
    assert res.meta["schedule"] == "single"
    assert res.tasks["vstage"].unique().to_list() == [-1]
    assert res.tasks["rank"].unique().to_list() == [0]
    # pieces tile the device timeline without gaps or overlaps
    t = res.tasks.sort("start_ns")
    assert (t["end_ns"] > t["start_ns"]).all()
    assert (t["start_ns"][1:] == t["end_ns"][:-1]).all()
    steps = run.steps
    assert t["start_ns"][0] == steps["start_ns"][0] and t["end_ns"][-1] == steps["end_ns"][-1]
    # every prompt's chunks add up to the prompt, prefixes are cumulative
    chunks = res.tasks.filter(pl.col("request_id") != DECODE_REQUEST).sort(
        "request_id", "chunk_idx"
    )
    per_req = chunks.group_by("request_id").agg(
        pl.col("tokens").sum().alias("total"),
        (pl.col("prefix_tokens") == pl.col("tokens").cum_sum().shift(1, fill_value=0))
        .all()
        .alias("prefix_ok"),
        (pl.col("chunk_idx") == pl.int_range(pl.len())).all().alias("idx_ok"),
    )
    joined = per_req.join(res.requests, on="request_id")
    assert joined.height == res.requests.height
    assert (joined["total"] == joined["prompt_tokens"]).all()
    assert joined["prefix_ok"].all() and joined["idx_ok"].all()
    # budget 2048 with 48 decodes: never more than 2000 prefill tokens in a step
    assert steps["prefill_tokens"].max() <= 2048 - 48
    # first token at the end of the step holding the last chunk
    last = chunks.group_by("request_id").agg(pl.col("end_ns").max().alias("chunk_end"))
    ends = last.join(res.requests, on="request_id").join_asof(
        steps.select("start_ns", "end_ns").sort("start_ns"),
        left_on="chunk_end",
        right_on="end_ns",
        strategy="forward",
    )
    assert (ends["first_token_ns"] == ends["end_ns"]).all()


def test_cap_and_priority_change_the_schedule() -> None:
    capped = simulate_single(Policy("cap", 8192, cap=2048)).result.tasks
    assert capped.filter(pl.col("request_id") != DECODE_REQUEST)["tokens"].max() == 2048
    prio = simulate_single(Policy("prio", 2048, interactive_first=True))
    fifo = simulate_single(Policy("fifo", 2048))
    assert seed_metrics(prio).short_ttft_max_ms < seed_metrics(fifo).short_ttft_max_ms / 5


def test_noise_is_seeded_and_bad_policy_rejected() -> None:
    wl = Workload(horizon_ns=300_000_000, long_first_ns=50_000_000, long_tokens=8192)
    a = simulate_single(SEED_POLICIES[2], wl, noise=0.1, seed=7).result.tasks
    b = simulate_single(SEED_POLICIES[2], wl, noise=0.1, seed=7).result.tasks
    c = simulate_single(SEED_POLICIES[2], wl, noise=0.1, seed=8).result.tasks
    assert a.equals(b) and not a.equals(c)
    exact = seed_metrics(simulate_single(SEED_POLICIES[2], wl)).itl_p50_ms
    noisy = seed_metrics(simulate_single(SEED_POLICIES[2], wl, noise=0.1, seed=7)).itl_p50_ms
    assert noisy != exact and math.isclose(noisy, exact, rel_tol=0.5)
    with pytest.raises(ValueError):
        simulate_single(Policy("tiny", 48))
