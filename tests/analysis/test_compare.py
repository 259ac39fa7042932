"""compare_samples: the acceptance trials (100 seeded pairs of 5-run sets) and the verdict rules."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from pipelines.analysis.comparison.compare import (
    RUN_SET_CORRECTION,
    VariancePrior,
    compare_samples,
    holm_adjusted,
)
from pipelines.analysis.runs.run_metrics import DEFAULT_COMPARE_METRICS, METRICS

NOISE = 0.015  # run-to-run noise, lognormal sigma (the lower end of real runs' 1.5-2 %)


def _trial(rng: np.random.Generator, shift: float, n: int = 5, noise: float = NOISE):
    base = 1e9 * np.exp(rng.normal(0, noise, n))
    cand = 1e9 * (1 + shift) * np.exp(rng.normal(0, noise, n))
    (row,) = compare_samples(
        {"ttft_ns": (base, cand)}, {"ttft_ns": True}, seed=int(rng.integers(1e9))
    )
    return row


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_true_plus_5_percent_is_regressed_in_at_least_95_of_100_trials():
    rng = np.random.default_rng(9)
    verdicts = [_trial(rng, 0.05).verdict for _ in range(100)]
    assert verdicts.count("regressed") >= 95, verdicts.count("regressed")
    assert "improved" not in verdicts


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_no_difference_is_rarely_flagged():
    """One-sided toward worse at 0.05: about 5 % of no-difference trials are regressed by design
    (the old '>= 95 of 100 quiet' fails 38 % of the time for a test at exactly 5 %); improved
    is the two-sided test, about 2.5 %. 400 trials: regressed <= 7.5 %, improved <= 5 %."""
    rng = np.random.default_rng(10)
    verdicts = [_trial(rng, 0.0).verdict for _ in range(400)]
    assert verdicts.count("regressed") <= 30, verdicts.count("regressed")
    assert verdicts.count("improved") <= 20, verdicts.count("improved")


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_the_interval_holds_the_effect_in_95_percent_at_5_and_10_runs():
    """Welch's t interval on log values at every n (a bootstrap of 5 values held the effect in
    88 % of 300 trials: too narrow). The estimand is the ratio of geometric means, +5 % here."""
    rng = np.random.default_rng(21)
    for n in (5, 10):
        rows = [_trial(rng, 0.05, n=n, noise=0.02) for _ in range(300)]
        assert {r.interval for r in rows} == {"welch_log"}
        held = sum(r.effect_lo <= 0.05 <= r.effect_hi for r in rows)
        assert 279 <= held <= 296, (n, held)  # 93-98.7 %


def test_fewer_than_three_runs_is_inconclusive_with_the_reason():
    (row,) = compare_samples({"ttft_ns": ([1.0, 1.0], [2.0, 2.1, 2.2])}, {"ttft_ns": True})
    assert row.verdict == "inconclusive" and "n < 3" in row.reason


def test_tight_equal_samples_are_unchanged():
    rng = np.random.default_rng(1)
    base = 1e9 * np.exp(rng.normal(0, 0.001, 10))
    cand = 1e9 * np.exp(rng.normal(0, 0.001, 10))
    (row,) = compare_samples({"ttft_ns": (base, cand)}, {"ttft_ns": True})
    assert row.verdict == "unchanged"
    assert row.test == "welch_t_log" and row.estimand == "geometric_mean_ratio"
    assert -0.01 <= row.effect_lo <= row.effect <= row.effect_hi <= 0.01


def test_samples_without_spread_are_judged_without_a_warning():
    # a metric the schedule fixes (a simulated run's exposed communication): equal on both sides
    # is unchanged, a fixed difference a change; scipy's t-test warned of precision loss here
    same = [4.35237048e9] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (row,) = compare_samples({"exposed_comm_ns": (same, same)}, {"exposed_comm_ns": True})
        assert row.verdict == "unchanged" and row.p_value == 1.0
        (row,) = compare_samples({"exposed_comm_ns": (same, [5e9] * 3)}, {"exposed_comm_ns": True})
        assert row.verdict == "regressed" and row.p_value == 0.0
        varied = [4.6e9, 4.4e9, 4.5e9]
        (row,) = compare_samples({"exposed_comm_ns": (same, varied)}, {"exposed_comm_ns": True})
    # one side fixed: Welch's t is the other side's one-sample t against the fixed value,
    # one-sided toward worse (the candidate larger, for a time)
    expected = stats.ttest_1samp(np.log(varied), np.log(same[0]), alternative="greater").pvalue
    assert row.test == "welch_t_log" and row.p_value == pytest.approx(expected)


def test_significant_change_below_the_minimum_is_not_flagged():
    rng = np.random.default_rng(2)
    base = 1e9 * np.exp(rng.normal(0, 0.0005, 10))
    cand = 1.005e9 * np.exp(rng.normal(0, 0.0005, 10))
    (row,) = compare_samples({"ttft_ns": (base, cand)}, {"ttft_ns": True}, min_effect=0.01)
    assert row.p_value < 0.01
    assert row.verdict == "unchanged"  # +0.5 % with an interval inside +-1 %
    (row,) = compare_samples({"ttft_ns": (base, cand)}, {"ttft_ns": True}, min_effect=0.001)
    assert row.verdict == "regressed"


def test_direction_follows_the_metric_and_holm_is_applied():
    rng = np.random.default_rng(3)
    base = 1000 * np.exp(rng.normal(0, 0.01, 5))
    cand = 1100 * np.exp(rng.normal(0, 0.01, 5))
    rows = compare_samples(
        {"throughput_tok_s": (base, cand), "ttft_ns": (base, cand)},
        {"throughput_tok_s": False, "ttft_ns": True},
    )
    assert [r.verdict for r in rows] == ["improved", "regressed"]
    assert all(r.correction == "Holm" for r in rows)
    assert all(r.p_adjusted >= r.p_value for r in rows)
    assert rows[0].test == "welch_t_log"


def test_unknown_correction_is_refused():
    with pytest.raises(ValueError, match="correction"):
        compare_samples({"m": ([1, 2, 3], [1, 2, 3])}, {"m": True}, correction="bonferroni")


def _run_set_trial(rng: np.random.Generator, shift: float, correction: str) -> dict[str, str]:
    """The six default metrics of 5 runs a side, as a run set shows them: one run-level factor
    (1.5 % lognormal) moves TTFT, makespan, compute and bubble alike and throughput inversely;
    exposed communication is fixed by the schedule. {metric: verdict}."""
    factor_b = np.exp(rng.normal(0, NOISE, 5))
    factor_c = (1 + shift) * np.exp(rng.normal(0, NOISE, 5))
    level = {"ttft_ns": 27e9, "makespan_ns": 27e9, "compute_ns": 18e9, "bubble_ns": 2e9}
    samples = {m: (v * factor_b, v * factor_c) for m, v in level.items()}
    samples["throughput_tok_s"] = (4800 / factor_b, 4800 / factor_c)
    samples["exposed_comm_ns"] = (np.full(5, 4.35e9), np.full(5, 4.35e9))
    assert set(samples) == set(DEFAULT_COMPARE_METRICS)
    rows = compare_samples(
        samples,
        {m: METRICS[m].lower_is_better for m in samples},
        correction=correction,
        seed=int(rng.integers(1e9)),
    )
    return {r.metric: r.verdict for r in rows}


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_a_run_set_with_a_true_plus_5_percent_is_regressed_in_95_of_100_trials():
    """The acceptance trial as `tracereplay compare` runs it (all six default metrics, its
    default correction): TTFT regressed in >= 95 of 100; Holm, paying for six looks at one
    timeline, gets no more."""
    rng = np.random.default_rng(11)
    trials = [_run_set_trial(rng, 0.05, RUN_SET_CORRECTION) for _ in range(100)]
    assert sum(t["ttft_ns"] == "regressed" for t in trials) >= 95
    assert not any("improved" in t.values() for t in trials)
    rng = np.random.default_rng(11)
    holm = [_run_set_trial(rng, 0.05, "holm") for _ in range(100)]
    assert sum(t["ttft_ns"] == "regressed" for t in holm) <= sum(
        t["ttft_ns"] == "regressed" for t in trials
    )


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_a_run_set_without_a_difference_is_rarely_flagged():
    """No difference: any of the six metrics regressed in <= 7.5 % of 200 trials (the one-sided
    test at 0.05; Benjamini-Hochberg keeps any flag at most alpha under no change at all)."""
    rng = np.random.default_rng(12)
    trials = [_run_set_trial(rng, 0.0, RUN_SET_CORRECTION) for _ in range(200)]
    regressed = [t for t in trials if "regressed" in t.values()]
    assert len(regressed) <= 15, len(regressed)


def test_identical_sides_are_unchanged_even_at_zero() -> None:
    zeros = np.zeros(5)
    (same,) = compare_samples({"bubble_ns": (zeros, zeros.copy())}, {"bubble_ns": True})
    assert same.verdict == "unchanged" and same.effect == 0 and same.p_value == 1.0
    assert (same.effect_lo, same.effect_hi, same.interval) == (0.0, 0.0, "exact")
    fixed = np.full(4, 3.5)
    (alike,) = compare_samples({"x": (fixed, fixed.copy())}, {"x": True})
    assert alike.verdict == "unchanged"


def test_the_printed_effect_lies_inside_its_own_interval() -> None:
    # a baseline with one slow run (x1 to x10,000): the ratio of arithmetic means fell outside
    # the Welch interval on log values in 562 of these 2,000 seeded draws; now point, interval
    # and test share one estimand at every n (geometric means; arithmetic with a value <= 0)
    rng = np.random.default_rng(5)
    outside = []
    for draw in range(2000):
        n = int(rng.integers(3, 13))
        base, cand = rng.lognormal(0, 0.05, n), rng.lognormal(0, 0.05, n)
        base[rng.integers(n)] *= 10 ** rng.uniform(0, 4)  # one slow run in the baseline
        if draw % 4 == 0:  # a metric that may be 0 or negative (a fitted intercept)
            cand = cand - 1.0
        (row,) = compare_samples({"m": (base, cand)}, {"m": True}, seed=draw)
        if not row.effect_lo <= row.effect <= row.effect_hi:
            outside.append((draw, row.effect, row.effect_lo, row.effect_hi))
    assert outside == []
    base, cand = rng.lognormal(0, 0.3, 12), rng.lognormal(0.1, 0.3, 12)
    (row,) = compare_samples({"m": (base, cand)}, {"m": True})
    assert row.effect == pytest.approx(np.exp(np.log(cand).mean() - np.log(base).mean()) - 1)
    (row,) = compare_samples({"m": (base - 1, cand)}, {"m": True})
    assert row.estimand == "arithmetic_mean_difference" and row.test == "welch_t"
    assert row.effect == pytest.approx((cand.mean() - (base - 1).mean()) / abs((base - 1).mean()))


def test_the_test_is_one_sided_toward_worse_and_is_welchs_t() -> None:
    rng = np.random.default_rng(7)
    base, cand = rng.lognormal(0, 0.02, 5), rng.lognormal(0.03, 0.02, 6)
    (time,) = compare_samples({"ttft_ns": (base, cand)}, {"ttft_ns": True})
    (rate,) = compare_samples({"throughput_tok_s": (base, cand)}, {"throughput_tok_s": False})
    x, y = np.log(base), np.log(cand)
    greater = stats.ttest_ind(y, x, equal_var=False, alternative="greater").pvalue
    assert time.p_value == pytest.approx(greater)  # a larger time is worse
    assert rate.p_value == pytest.approx(1 - greater)  # a larger rate is better
    assert time.verdict == "regressed" and rate.verdict == "improved"
    lo, hi = stats.ttest_ind(y, x, equal_var=False).confidence_interval(0.95)
    assert (time.effect_lo, time.effect_hi) == pytest.approx((np.expm1(lo), np.expm1(hi)))


def test_a_variance_prior_gives_the_moderated_t() -> None:
    rng = np.random.default_rng(8)
    base, cand = rng.lognormal(0, 0.02, 5), rng.lognormal(0.03, 0.02, 5)
    prior = VariancePrior(variance=0.02**2, df=24, nights=25, source="m cpp")
    (row,) = compare_samples({"m": (base, cand)}, {"m": True}, priors={"m": prior})
    x, y = np.log(base), np.log(cand)
    ss = ((x - x.mean()) ** 2).sum() + ((y - y.mean()) ** 2).sum()
    s2 = (24 * 0.02**2 + ss) / (24 + 8)
    t = (y.mean() - x.mean()) / np.sqrt(s2 * (1 / 5 + 1 / 5))
    assert row.test == "moderated_t_log" and row.prior_nights == 25
    assert row.p_value == pytest.approx(stats.t.sf(t, 32))
    assert row.effect_lo <= row.effect <= row.effect_hi


@pytest.mark.slow  # a seeded rate study (CI runs it: .ci/run); the full one: bench compare-power
def test_five_runs_at_2_percent_noise_regressed_and_quiet() -> None:
    """The issue's cell on 400 draws (the bench runs 2,000): +5 % is regressed in >= 90 % from
    the runs alone and >= 95 % with a 20-night history; no difference regressed in <= 7.5 %."""
    rng = np.random.default_rng(31)
    alone = prior = quiet = 0
    for _ in range(400):
        base = np.exp(rng.normal(0, 0.02, 5))
        cand = 1.05 * np.exp(rng.normal(0, 0.02, 5))
        same = np.exp(rng.normal(0, 0.02, 5))
        history = rng.normal(0, 0.02, 20)
        p = {"m": VariancePrior(float(np.var(history, ddof=1)), 19, 20, "h")}
        alone += compare_samples({"m": (base, cand)}, {"m": True})[0].verdict == "regressed"
        prior += (
            compare_samples({"m": (base, cand)}, {"m": True}, priors=p)[0].verdict == "regressed"
        )
        quiet += compare_samples({"m": (base, same)}, {"m": True})[0].verdict != "regressed"
    assert alone >= 360 and prior >= 380 and quiet >= 370, (alone, prior, quiet)


def test_holm_adjusted_equals_statsmodels_holm_on_seeded_draws(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc

    from statsmodels.stats.multitest import multipletests

    # statsmodels' Holm runs gc.collect() per call (0.3 s in a test worker: 71 s for these 250)
    monkeypatch.setattr(gc, "collect", lambda *_args: 0)

    rng = np.random.default_rng(7)
    for m in (2, 3, 5, 12, 40):
        for _ in range(50):
            p = rng.uniform(0, 1, m) ** rng.uniform(0.5, 4)
            p[rng.integers(0, m)] = p[rng.integers(0, m)]  # a tie now and then
            expected = multipletests(p, method="holm")[1]
            np.testing.assert_allclose(holm_adjusted(p.tolist()), expected, rtol=0, atol=1e-15)
