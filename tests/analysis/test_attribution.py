"""Attribution tests three hypotheses of how tau_k moved (proportional, slope only, intercept
only) instead of reading the slope's and the intercept's verdicts alone: a proportional slowdown
whose intercept is too noisy to place is not called a slope change."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from pipelines.analysis.comparison.attribution import tau_attribution, tau_hypotheses, tau_label

RUNS = 5


def _labels(fa: float, fb: float, sigma_a: float, draws: int = 20, seed: int = 1) -> Counter:
    """Labels of `draws` comparisons of RUNS runs a side: per-run slope b (2 % run noise) and
    intercept a (sigma_a), the candidate's x fb and x fa."""
    rng = np.random.default_rng(seed)
    out: Counter = Counter()
    for _ in range(draws):
        b0, b1 = (f * 20e6 * np.exp(0.02 * rng.standard_normal(RUNS)) for f in (1.0, fb))
        a0, a1 = (f * 80e6 * np.exp(sigma_a * rng.standard_normal(RUNS)) for f in (1.0, fa))
        out[tau_attribution((b0, b1), (a0, a1))[1]] += 1
    return out


def test_a_proportional_slowdown_with_a_noisy_intercept_is_not_called_slope() -> None:
    # x1.05 on every chunk, the intercept 4x noisier than the slope (as one run's fit gives it):
    # the slope moves significantly, the intercept does not. Before: "slope" in most draws
    labels = _labels(1.05, 1.05, sigma_a=0.08)
    assert labels["slope"] <= 2
    undetermined = labels["slope; intercept undetermined"] + labels["proportional"]
    assert undetermined >= 0.7 * sum(labels.values())


def test_a_proportional_slowdown_with_a_precise_intercept_is_proportional() -> None:
    labels = _labels(1.05, 1.05, sigma_a=0.02)
    # 45 of 60 draws (75 %); the rest say which parameter is undetermined, never "slope"
    assert labels["proportional"] >= 0.55 * sum(labels.values())
    assert labels["slope"] + labels["intercept"] <= 2


def test_a_slope_only_change_is_still_slope_when_the_intercept_is_precise() -> None:
    labels = _labels(1.0, 1.10, sigma_a=0.02)
    assert labels["slope"] >= 0.7 * sum(labels.values())
    assert labels["proportional"] == 0


def test_hypotheses_state_their_tests_and_a_negative_intercept_is_untestable() -> None:
    base, cand = np.full(4, 20e6), np.full(4, 22e6)
    hypotheses = tau_hypotheses((base, cand), (np.array([-1e6, 2e6, 3e6, 4e6]), np.full(4, 5e6)))
    by_name = {h.name: h for h in hypotheses}
    assert set(by_name) == {"proportional", "slope only", "intercept only"}
    assert math.isnan(by_name["proportional"].p_value) and not by_name["proportional"].stands
    assert by_name["intercept only"].p_value == 0.0  # the slope moved exactly
    # untestable hypotheses fall back to what moved
    nan_all = [h for h in hypotheses if h.name != "intercept only"]
    assert tau_label({"tau_slope_ns"}, nan_all) == "slope"
    assert tau_label(set(), hypotheses) == "neither"
