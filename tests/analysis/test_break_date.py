"""The 95 % set of a change point's date (pipelines.analysis.changes.break_date): the posterior
set printed since 2026-12-04, and the likelihood-ratio set (Hansen 2000; Eo & Morley 2015) it
replaced, which the bench still measures beside it."""

import numpy as np
import pytest

from pipelines.analysis.changes.break_date import (
    break_date_interval,
    lr_cdf,
    lr_critical_value,
    posterior_date_set,
    split_costs,
    split_posterior,
)
from pipelines.analysis.changes.changepoints import detect_change_points


def test_the_critical_value_is_hansen_s():
    assert lr_critical_value(0.95) == pytest.approx(7.352, abs=1e-3)
    assert lr_cdf(lr_critical_value(0.9)) == pytest.approx(0.9)
    assert lr_cdf(0.0) == 0.0
    with pytest.raises(ValueError):
        lr_critical_value(1.0)


def test_the_lr_at_the_true_date_has_the_limiting_distribution():
    """A small shift (0.15 sigma) in 4,000 values: LR(k0) against the best split, 1,000 draws.
    Measured: 0.192 / 0.605 / 0.948 at x = 1 / 3 / 7.35 against 0.155 / 0.604 / 0.950."""
    rng = np.random.default_rng(1)
    n, k0 = 4000, 2000
    stats = []
    for _ in range(1000):
        z = rng.normal(0, 1, n)
        z[k0:] += 0.15
        rss = split_costs(z)
        best = rss.min()
        stats.append((rss[k0 - 1] - best) / (best / (n - 2)))
    stats = np.array(stats)
    for x in (3.0, lr_critical_value()):
        assert np.mean(stats <= x) == pytest.approx(lr_cdf(x), abs=0.03)


def test_split_costs_are_the_two_mean_residuals():
    z = np.array([1.0, 2.0, 4.0, 8.0])
    expected = [
        np.sum((z[:k] - z[:k].mean()) ** 2) + np.sum((z[k:] - z[k:].mean()) ** 2) for k in (1, 2, 3)
    ]
    assert split_costs(z) == pytest.approx(expected)


@pytest.mark.slow  # a seeded rate study (CI runs it: .ci/run)
def test_a_step_of_one_and_a_half_sigma_is_dated_within_its_set():
    """60 nights, 2 % run noise, +3 % from night 40 (index 39): the detector's point and its set.
    `tracereplay bench changepoints` (docs/regressions.md): holds night 40 in about 95-96 % of
    the dated, median width 6 runs; 174 of these 200 have exactly one confirmed point."""
    rng = np.random.default_rng(3)
    held = found = 0
    widths = []
    for _ in range(200):
        y = np.exp(rng.normal(0, 0.02, 60))
        y[39:] *= 1.03
        points = [c for c in detect_change_points(y) if c.status == "confirmed"]
        if len(points) != 1:
            continue
        cp = points[0]
        assert cp.index_lo <= cp.index <= cp.index_hi
        found += 1
        held += cp.index_lo <= 39 <= cp.index_hi
        widths.append(cp.index_hi - cp.index_lo)
    assert found >= 170  # 174 of 200; 166 under the persistence rule before 2026-12-04
    assert 0.93 <= held / found <= 0.98
    assert 4 <= np.median(widths) <= 7


def test_a_clear_step_is_dated_to_a_night_or_two():
    rng = np.random.default_rng(4)
    for _ in range(50):
        y = np.exp(rng.normal(0, 0.005, 60))
        y[39:] *= 1.03
        (cp,) = detect_change_points(y)
        assert cp.index == 39
        assert cp.index_hi - cp.index_lo <= 2


def test_the_set_holds_the_point_and_leaves_a_value_on_each_side():
    lo, hi = break_date_interval(np.array([0.0, 0.1, -0.1]), np.array([0.02, -0.05, 0.0]))
    assert 1 <= lo <= 3 <= hi <= 5
    assert break_date_interval(np.array([1.0]), np.array([2.0, 2.0])) == (1, 2)
    # no noise at all: the split is exact
    assert break_date_interval(np.zeros(10), np.ones(5)) == (10, 10)
    with pytest.raises(ValueError):
        break_date_interval(np.array([]), np.ones(3))


def _mass_nearest(p: np.ndarray, level: float) -> int:
    mass = np.cumsum(np.sort(p)[::-1])
    return int(np.argmin(np.abs(mass - level))) + 1


def test_the_posterior_set_of_a_clear_step_is_its_night():
    z = np.r_[np.zeros(39), np.full(21, 0.03)] + np.random.default_rng(0).normal(0, 0.003, 60)
    assert posterior_date_set(z, 39) == (39, 39)
    # widened to hold the printed date, wherever that is
    assert posterior_date_set(z, 30) == (30, 39)
    with pytest.raises(ValueError):
        posterior_date_set(z, 0)
    with pytest.raises(ValueError):
        posterior_date_set(z, 39, level=1.0)


def test_the_posterior_set_takes_the_splits_whose_mass_is_nearest_the_level():
    rng = np.random.default_rng(5)
    sizes = []
    for noise in (0.01, 0.02, 0.03):
        z = rng.normal(0, noise, 60)
        z[39:] += 0.03
        k, p = split_posterior(z, 1)
        take = _mass_nearest(p, 0.95)
        chosen = k[np.argsort(-p, kind="stable")[:take]]
        mode = int(k[np.argmax(p)])
        assert posterior_date_set(z, mode) == (int(chosen.min()), int(chosen.max()))
        sizes.append(take)
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]  # noisier: more splits


@pytest.mark.slow  # a seeded rate study (CI runs it: .ci/run)
def test_the_set_of_a_three_sigma_step_is_not_over_sure_of_itself():
    """1 % run noise, +3 % from night 40: the likelihood-ratio set held the night in 98.4 % of
    2,000 (bench changepoints, 2026-12-04; over the 93-98 % of issue 33); the posterior set with
    the mass nearest 95 % holds it in 93-98 % of these 1,000."""
    rng = np.random.default_rng(11)
    held = found = 0
    for _ in range(1000):
        y = np.exp(rng.normal(0, 0.01, 60))
        y[39:] *= 1.03
        points = [c for c in detect_change_points(y) if c.status == "confirmed"]
        if len(points) == 1:
            found += 1
            held += points[0].index_lo <= 39 <= points[0].index_hi
    assert found >= 990
    assert 0.93 <= held / found <= 0.98
