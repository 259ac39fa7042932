"""Decode streams riding along the pipeline's prefill steps (pipelines/sim/decode.py): the
group waits, the ITL they give, the cost they add, and the CLI."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from pipelines.cli import main
from pipelines.sim.decode import DecodeLoad
from pipelines.sim.fitted_cost import FittedCost
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate

K = 1024


def _compute(result) -> pl.DataFrame:
    return result.tasks.filter(pl.col("kind") == "compute")


def _call_ns(result) -> tuple[int, int]:
    """(shortest, longest) compute call of a run."""
    calls = _compute(result)["end_ns"] - _compute(result)["start_ns"]
    return int(calls.min()), int(calls.max())


def test_a_step_waits_for_its_groups_previous_token() -> None:
    result = simulate(
        128 * K, "cpp", model="deepseek-v3.1", chunk_size=16 * K, decode=DecodeLoad(48)
    )
    assert result.meta["decode_groups"] == 2  # pp = 2: vLLM's two virtual engines
    tasks = _compute(result)
    first = tasks.filter(pl.col("vstage") == 0).sort("chunk_idx")
    last = tasks.filter(pl.col("vstage") == tasks["vstage"].max()).sort("chunk_idx")
    starts, ends = first["start_ns"].to_numpy(), last["end_ns"].to_numpy()
    assert np.all(starts[2:] >= ends[:-2])
    assert result.meta["decode_tokens"] == 8 * 24  # 8 steps, 24 streams each


def test_itl_is_the_groups_token_period() -> None:
    # equal steps: stage time t, pp = 2, two groups: a group's token every 2 t
    cost = FittedCost(alpha_ns=1000.0, beta_ns=0.0, num_layers=4)
    result = simulate([8 * K], "cpp", model=cost, chunk_size=K, comm=None, decode=DecodeLoad(10, 0))
    shortest, step = _call_ns(result)
    assert shortest == step
    assert result.meta["itl_p50_ns"] == result.meta["itl_max_ns"] == 2 * step
    plain = simulate([8 * K], "cpp", model=cost, chunk_size=K, comm=None)
    plain_step = _call_ns(plain)[1]
    assert step > plain_step  # the decode tokens cost time on every call
    # one group: every step waits for the previous step's token, so nothing overlaps
    serial = simulate(
        [8 * K], "cpp", model=cost, chunk_size=K, comm=None, decode=DecodeLoad(10, 0, groups=1)
    )
    serial_step = _call_ns(serial)[1]
    assert serial_step > step  # all 10 streams in every step
    assert summarize(serial)["makespan_ns"] == 8 * 2 * serial_step
    assert serial.meta["itl_p50_ns"] == 2 * serial_step


def test_vpp_async_needs_a_third_group_and_an_impossible_count_is_an_error() -> None:
    result = simulate(
        128 * K, "vpp_async", model="deepseek-v3.1", chunk_size=16 * K, decode=DecodeLoad(48)
    )
    assert result.meta["decode_groups"] == 3  # s0(k+1) runs before s3(k-1) on rank 0
    with pytest.raises(ValueError, match="deadlock"):
        simulate(
            128 * K,
            "vpp_async",
            model="deepseek-v3.1",
            chunk_size=16 * K,
            decode=DecodeLoad(48, groups=2),
        )


def test_dcpp_shorter_steps_give_shorter_itl_than_cpp() -> None:
    """Seed 001's budget dial under pipeline parallelism: DCPP's many smaller steps hand the
    decode streams a token more often than CPP's 8 big ones (128K prompt, 16K budget)."""
    out = {}
    for schedule in ("cpp", "dcpp"):
        with_decode = summarize(
            simulate(
                128 * K, schedule, model="deepseek-v3.1", chunk_size=16 * K, decode=DecodeLoad(48)
            )
        )
        alone = summarize(simulate(128 * K, schedule, model="deepseek-v3.1", chunk_size=16 * K))
        assert with_decode["ttft_p50_ns"] > alone["ttft_p50_ns"]
        out[schedule] = with_decode
    assert out["dcpp"]["itl_p50_ns"] < 0.5 * out["cpp"]["itl_p50_ns"]
    assert out["dcpp"]["decode_tok_s"] > 2 * out["cpp"]["decode_tok_s"]


def test_cli_prints_itl_and_refuses_misuse(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["simulate", "--seq-len", "65536", "--chunk", "16384", "--decode-streams", "8"]
    assert main([*base, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["decode_streams"] == 8 and report["itl_p50_ns"] > 0
    assert main(["simulate", "--decode-groups", "2"]) == 2
    assert "need --decode-streams" in capsys.readouterr().err
    assert main(["simulate", "--decode-context", "8192"]) == 2
    assert "need --decode-streams" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # at the parser (issue 36, round three)
        main(["simulate", "--decode-streams", "-3"])
    assert refused.value.code == 2
    assert "argument --decode-streams: '-3'" in capsys.readouterr().err
    assert main(["simulate", "--schedule", "single", "--decode-streams", "8"]) == 2
    assert "pipeline schedules" in capsys.readouterr().err
