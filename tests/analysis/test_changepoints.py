"""Change points over nightly histories: the issue-9 acceptance campaign (60 nights, 2 % noise,
+3 % step at night 40; 20 clean series; a single-night +10 % spike), seeded."""

from __future__ import annotations

import numpy as np

from pipelines.analysis.changepoints import detect_change_points

NIGHTS, NOISE, STEP_AT = 60, 0.02, 40


def _series(rng, step=0.0, spike_at=None):
    y = 1e9 * np.exp(rng.normal(0, NOISE, NIGHTS))
    y[STEP_AT:] *= 1 + step
    if spike_at is not None:
        y[spike_at] *= 1.10
    return y


def test_acceptance_campaigns_pass_in_most_seeds():
    # one campaign = one stepped series + 20 clean ones; it passes when exactly the step is
    # reported, within +-2 nights, confirmed. The step is 1.5 sigma of the noise, so no method
    # passes every seed (the least-squares split alone is within +-2 nights in 83 %): we assert
    # the measured rate over 20 seeded campaigns, not one chosen seed.
    passed = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        found = detect_change_points(_series(rng, step=0.03))
        step_ok = len(found) == 1 and abs(found[0].index - STEP_AT) <= 2
        step_ok = step_ok and found[0].status == "confirmed"
        clean_ok = all(detect_change_points(_series(rng)) == [] for _ in range(20))
        passed += step_ok and clean_ok
    assert passed >= 12, passed


def test_step_rates_over_seeded_campaigns():
    # 83 % is the best any method can do here: the least-squares split of a 1.5-sigma step
    # lies within +-2 nights in 83.4 % of 500 series (docs/regressions.md)
    rng = np.random.default_rng(1)
    found = [detect_change_points(_series(rng, step=0.03)) for _ in range(100)]
    near = sum(len(f) == 1 and abs(f[0].index - STEP_AT) <= 2 for f in found)
    assert near >= 65, near
    assert all(len(f) <= 1 for f in found)


def test_clean_and_spiked_series_raise_nothing():
    rng = np.random.default_rng(3)
    clean = sum(bool(detect_change_points(_series(rng))) for _ in range(200))
    spiked = sum(
        bool(detect_change_points(_series(rng, spike_at=int(rng.integers(5, 55)))))
        for _ in range(200)
    )
    assert clean <= 2 and spiked <= 2, (clean, spiked)


def test_a_change_in_the_last_nights_is_pending():
    rng = np.random.default_rng(4)
    y = 1e9 * np.exp(rng.normal(0, 0.005, 40))
    y[-3:] *= 1.08
    cps = detect_change_points(y)
    assert [c.status for c in cps] == ["pending"] and cps[0].index == 37
