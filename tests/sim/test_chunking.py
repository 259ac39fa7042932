"""Fixed and dynamic chunking; the 128K step counts (docs/schedules.md §2 table)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pipelines.sim.chunking import (
    DcppConfig,
    dynamic_chunks,
    fit_quadratic,
    fixed_chunks,
    profile_lengths,
)
from pipelines.sim.fitted_cost import FittedCost
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate

K128 = 131072


def quadratic_stage(ratio: float):
    """Stage latency of the §2 toy: f(l) = a l² + b l with b / a = ratio, so a chunk x after
    a prefix L costs f(L + x) - f(L)."""
    a, b = 1.0, ratio

    def stage(c: np.ndarray, p: np.ndarray) -> np.ndarray:
        c, p = np.asarray(c, dtype=float), np.asarray(p, dtype=float)
        return a * ((p + c) ** 2 - p**2) + b * c

    return stage


def test_fixed_chunks() -> None:
    assert fixed_chunks(K128, 16384) == [16384] * 8
    assert fixed_chunks(524288, 24576) == [24576] * 21 + [8192]
    with pytest.raises(ValueError):
        fixed_chunks(0, 10)


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        (14336, [27, 20, 13, 18]),
        (24576, [25, 17, 11, 17]),
        (65536, [19, 12, 8, 14]),
        (90112, [17, 11, 8, 13]),
    ],
)
def test_step_count_table(ratio: int, expected: list[int]) -> None:
    """vLLM-Ascend rules at C = 16K, 24K, 32K and SGLang σ = 0.75 at C = 16K."""
    stage = quadratic_stage(ratio)
    got = [
        len(dynamic_chunks(K128, c, stage, DcppConfig("vllm_ascend")))
        for c in (16384, 24576, 32768)
    ]
    got.append(len(dynamic_chunks(K128, 16384, stage, DcppConfig("sglang"))))
    assert got == expected


def test_chunks_shrink_respect_floor_alignment_and_first_chunk() -> None:
    stage = quadratic_stage(24576)
    vllm = dynamic_chunks(524288, 24576, stage, DcppConfig("vllm_ascend"))
    sglang = dynamic_chunks(524288, 24576, stage, DcppConfig("sglang"))
    for chunks, floor, align in ((vllm, 4096, 128), (sglang, 24576 // 4, 64)):
        assert chunks[0] == 24576
        assert sum(chunks) == 524288
        assert all(c % align == 0 for c in chunks[:-1])
        assert min(chunks[:-1]) >= floor
        assert all(a >= b for a, b in itertools.pairwise(chunks[:-1]))
    assert len(vllm) > len(sglang)  # σ = 1 and a lower floor fragment more


def test_dcpp_steps_grow_with_sequence_length() -> None:
    stage = quadratic_stage(24576)
    steps = [
        len(dynamic_chunks(n, 24576, stage, DcppConfig()))
        for n in (65536, K128, 262144, 524288, 1048576)
    ]
    print("DCPP steps 64K..1M:", steps)
    assert steps == sorted(steps) and len(set(steps)) == len(steps)


def test_profile_and_fit_recover_the_quadratic() -> None:
    lengths = profile_lengths("vllm_ascend", 24576)
    assert len(lengths) == 64 and lengths[0] == 24576 and lengths[-1] == 384
    assert len(profile_lengths("sglang", 16384)) == 127
    fit = fit_quadratic(lengths, 3.0 * lengths**2.0 + 5.0 * lengths + 7.0, clamp_b=True)
    assert (fit.a, fit.b) == pytest.approx((3.0, 5.0))
    with pytest.raises(ValueError):
        fit_quadratic(lengths, -(lengths**2.0), clamp_b=False)


def test_online_calibration_targets_the_measured_first_chunk() -> None:
    """With a fixed per-call cost the measured first-chunk time exceeds f(C) - f(0): the
    chunks after the first get larger (and the history-aware refit takes over after 5)."""
    base = quadratic_stage(24576)

    def stage(c, p):
        return base(c, p) + 2e8

    plain = dynamic_chunks(K128, 24576, stage, DcppConfig())
    online = dynamic_chunks(K128, 24576, stage, DcppConfig(online=True))
    assert online[0] == plain[0] == 24576
    assert all(o >= p for o, p in zip(online[1:6], plain[1:6], strict=True))
    assert online[1] > plain[1]
    assert len(online) <= len(plain) and online != plain


def test_128k_prompt_cpp_8_steps_and_dcpp_17_through_simulate() -> None:
    """The paper's Fig. 1b: CPP 8 steps at C = 16K; DCPP 17 with the vLLM-Ascend rules at
    C = 24K on a stage whose f(l) has b / a = 24576 (docs/schedules.md §2)."""
    # full(c, p) = alpha c + beta c (p + c/2): f(l) = beta/2 l² + alpha l, b / a = 2 alpha / beta
    cost = FittedCost(alpha_ns=24576.0 * 0.5, beta_ns=1.0)
    cpp = summarize(simulate(K128, "cpp", model=cost, chunk_size=16384, comm=None))
    dcpp = summarize(simulate(K128, "dcpp", model=cost, chunk_size=24576, comm=None))
    print(f"128K: CPP {cpp['scheduling_steps']} steps, DCPP {dcpp['scheduling_steps']} steps")
    assert cpp["scheduling_steps"] == 8
    assert dcpp["scheduling_steps"] == 17
