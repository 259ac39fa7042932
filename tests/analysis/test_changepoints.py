"""Change points over nightly histories: the issue-9 acceptance campaign (60 nights, 2 % noise,
+3 % step at night 40; 20 clean series; a single-night +10 % spike), seeded."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.analysis.changes.changepoints import detect_change_points, isolated_nights

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


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_step_rates_over_seeded_campaigns():
    # 83 % is the best any method can do here: the least-squares split of a 1.5-sigma step
    # lies within +-2 nights in 83.4 % of 500 series (docs/regressions.md); the searched-split p
    # finds 77 of these 100 within +-2 (Welch's single-test p <= 1e-4 found 71)
    rng = np.random.default_rng(1)
    found = [detect_change_points(_series(rng, step=0.03)) for _ in range(100)]
    near = sum(len(f) == 1 and abs(f[0].index - STEP_AT) <= 2 for f in found)
    assert near >= 75, near
    assert all(len(f) <= 1 for f in found)


def test_clean_and_spiked_series_raise_nothing():
    # clean series: the false-alarm rate of the thresholds (6 of 3,000, docs/regressions.md);
    # spiked: the same noise with and without one +10 % night, so only what the spike itself adds
    # is counted (0 of 200 here; the old Welch rule 3 of 400, 4 of 300 without the screen); the
    # spike is screened out in most series (145 of 200 here) and never becomes a point itself
    rng = np.random.default_rng(3)
    clean = sum(bool(detect_change_points(_series(rng))) for _ in range(200))
    added = screened = 0
    for _ in range(200):
        y, at = _series(rng), int(rng.integers(1, NIGHTS - 1))
        spiked = _series_with_spike(y, at)
        found = detect_change_points(spiked)
        added += bool(found) and not detect_change_points(y)
        screened += bool(isolated_nights(spiked)[at])
        assert all(c.index not in (at, at + 1) for c in found), (at, found)
    assert clean <= 3 and added <= 3 and screened >= 130, (clean, added, screened)


def _series_with_spike(y, at):
    out = y.copy()
    out[at] *= 1.10
    return out


def test_a_change_in_the_last_nights_is_pending():
    rng = np.random.default_rng(4)
    y = 1e9 * np.exp(rng.normal(0, 0.005, 40))
    y[-3:] *= 1.08
    cps = detect_change_points(y)
    assert [c.status for c in cps] == ["pending"] and cps[0].index == 37


def test_a_slow_last_or_second_last_night_is_not_a_change():
    # a lone slow night at the end cannot be told from the start of a step until the nights after
    # it agree; before the spike screen both of these were reported as pending
    for at in (-1, -2):
        rng = np.random.default_rng(5)
        y = 1e9 * np.exp(rng.normal(0, 0.005, 40))
        y[at] *= 1.10
        assert detect_change_points(y) == [], at


def test_the_spike_screen_flags_lone_nights_not_steps():
    rng = np.random.default_rng(6)
    y = 1e9 * np.exp(rng.normal(0, NOISE, NIGHTS))
    y[20] *= 1.15
    y[STEP_AT:] *= 1.20  # a large step: the nights right after it agree with each other
    assert np.flatnonzero(isolated_nights(y)).tolist() == [20]
    found = detect_change_points(y)
    assert [c.index for c in found] == [STEP_AT]
    # the spike counts in the index but not in the segment sizes
    assert found[0].n_before == STEP_AT - 1 and found[0].n_after == NIGHTS - STEP_AT


def test_an_exact_history_still_dates_its_changes():
    # noise-free nights (a simulated history without --noise): the tail test had no spread to
    # scale by and reported nothing for a +20 % change in the last 3 nights
    y = np.full(12, 5.0)
    y[-3:] = 6.0
    assert [(c.index, c.status) for c in detect_change_points(y)] == [(9, "pending")]
    y = np.full(30, 5.0)
    y[15:] = 5.5
    assert [(c.index, c.status) for c in detect_change_points(y)] == [(15, "confirmed")]
    assert detect_change_points(np.full(30, 5.0)) == []


def test_a_point_confirmed_by_an_earlier_nightly_scan_and_contradicted_since_is_withdrawn():
    # a clean series (2 % noise, seed 445, found by search): the scan through night 44 confirmed
    # a point at night 37 (persisting over the scans through nights 41-43); the 16 nights since
    # contradict it, and the latest scan finds nothing: the point is withdrawn, not lost
    from pipelines.analysis.changes.rescans import nightly_confirmations, withdrawn_points

    y = np.exp(np.random.default_rng(445).normal(0, 0.02, 60))
    seen = nightly_confirmations(y, first=30)
    assert [(c.nights, c.point.index) for c in seen] == [(44, 37)]
    latest = detect_change_points(y)
    assert latest == []
    assert withdrawn_points(seen, latest) == seen
    assert detect_change_points(y[:44])[0].index == 37  # what that night's scan said


def test_the_posterior_window_dates_a_clear_step_on_its_night():
    from pipelines.analysis.changes.break_date import posterior_window_date, split_posterior

    z = np.r_[np.zeros(39), np.ones(21)] + np.random.default_rng(0).normal(0, 0.1, 60)
    assert posterior_window_date(z, 5) == 39
    k, p = split_posterior(z, 5)
    assert k[0] == 5 and k[-1] == 55 and p.sum() == pytest.approx(1.0)
    assert k[np.argmax(p)] == 39
    # a short segment: fewer splits than the window is wide
    assert posterior_window_date(np.r_[np.zeros(6), np.ones(6)], 5) == 6
    with pytest.raises(ValueError):
        posterior_window_date(np.zeros(8), 5)


def test_a_point_only_the_latest_scan_finds_stays_pending():
    # a clean series (2 % noise, seed 860, found by search): this scan alone confirms a point at
    # night 50 with p 0.001, whose split the histories one to ten nights shorter do not hold
    # (p > 0.1 near it; with 5-9 nights after it they cannot); p is not below max_pvalue / 25,
    # so the point waits (pending) instead of raising an alarm
    from pipelines.analysis.changes.changepoints import scan_once

    y = np.exp(np.random.default_rng(860).normal(0, 0.02, 60))
    (raw,) = scan_once(y)
    assert raw.status == "confirmed" and raw.index == 50 and 0.0001 < raw.p_value <= 0.0025
    assert [(c.index, c.status) for c in detect_change_points(y)] == [(50, "pending")]
    assert detect_change_points(y, persist=1)[0].status == "confirmed"


def test_a_real_step_still_stands_in_the_shorter_histories():
    """+3 % at night 40 in 2 % noise (seed 21): p 0.00095 is above the fast lane (0.0001), so the
    point must persist; each history one to ten nights shorter keeps a split within 2 nights of
    it at p <= 0.1, and it is confirmed. Asked for p <= 1e-6 there, the same point is pending:
    the rule can fail."""
    from pipelines.analysis.changes.changepoints import persists, scan_once

    y = np.exp(np.random.default_rng(21).normal(0, 0.02, 60))
    y[39:] *= 1.03
    found = scan_once(y)
    (cp,) = found
    assert cp.status == "confirmed" and 1e-4 < cp.p_value <= 0.0025
    assert persists(y, cp, found, fast=1e-4)
    assert [c.status for c in detect_change_points(y)] == ["confirmed"]
    assert not persists(y, cp, found, fast=1e-4, persist_pvalue=1e-6)
    assert [c.status for c in detect_change_points(y, persist_pvalue=1e-6)] == ["pending"]
    # a point whose p is in the fast lane needs no earlier history
    assert persists(y, cp, found, fast=cp.p_value, persist_pvalue=1e-6)


def test_a_marginal_point_waits_until_the_shorter_histories_can_hold_it():
    """The same step (seed 21) scanned night by night: the scans through nights 52-53 find it
    (p 0.002 / 0.00085, 13-14 nights after it) but the history ten nights shorter leaves fewer
    than 5 nights after it, where its split cannot be tested: pending. From night 54 (15 nights
    after) it is confirmed: what persistence costs a marginal change (one with p <= 0.0001 is
    confirmed after 5 nights)."""
    from pipelines.analysis.changes.changepoints import scan_once

    y = np.exp(np.random.default_rng(21).normal(0, 0.02, 60))
    y[39:] *= 1.03
    for m, status in ((52, "pending"), (53, "pending"), (54, "confirmed")):
        (raw,) = scan_once(y[:m])
        assert (raw.index, raw.status) == (39, "confirmed") and raw.p_value > 1e-4
        assert [(c.index, c.status) for c in detect_change_points(y[:m])] == [(39, status)]


def test_a_marginal_point_with_few_nights_before_it_waits():
    """+3 % from night 8 of 40 (seed 10): the scan finds it (p 0.00055, 7 nights before it) and it
    persists in the shorter histories, but a point whose p is above the fast lane needs 10
    tested nights before it (PERSIST_MIN_BEFORE): the false alarms that survive persistence
    come mostly from young histories. Pending; with 10 nights required of nothing, confirmed."""
    from pipelines.analysis.changes import changepoints
    from pipelines.analysis.changes.changepoints import scan_once

    y = np.exp(np.random.default_rng(10).normal(0, 0.02, 40))
    y[7:] *= 1.03
    (raw,) = scan_once(y)
    assert (raw.index, raw.n_before, raw.status) == (7, 7, "confirmed")
    assert 0.0001 < raw.p_value <= 0.0025
    assert [(c.index, c.status) for c in detect_change_points(y)] == [(7, "pending")]
    saved = changepoints.PERSIST_MIN_BEFORE
    try:
        changepoints.PERSIST_MIN_BEFORE = 0
        assert [(c.index, c.status) for c in detect_change_points(y)] == [(7, "confirmed")]
    finally:
        changepoints.PERSIST_MIN_BEFORE = saved
